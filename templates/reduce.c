/*
 * reduce.c - out = the reduction of a over a set of axes, given as the launch's scalars (the runtime
 * checks them, and the output shape, with or without keepdims). Accumulation is in f32. Owner
 * computes: each core fills the output pages it holds, reading `a` wherever it lives.
 *
 * When the input's last axis is kept, an output row is a run along it: CHUNK output elements at a time
 * accumulate whole input runs, GROUP combinations of the reduced axes per pass (one load and store of
 * each accumulator per GROUP input elements, GROUP input streams in flight), each element still folded
 * in the input's order. When the last axis is reduced, each output element accumulates runs along it
 * in VMATH_BLOCK (16) independent lanes, combined in lane order at the end: 16 chains at once instead
 * of one, so the loads, not the adds' latency, set the pace; up to LANES output elements do so side by
 * side when their runs are adjacent in memory.
 *
 * GROUP is 8, not 4: on a 2-CPU AMD EPYC (Zen 4) a sum over the middle axis of 64x512x512 (runs of 2
 * KiB, four or eight short streams at a time) took 2.82 to 3.04 ms against 3.33 to 3.45 with 4, over
 * the leading axis of 4096x4096 1.98 to 2.05 against 2.29 to 2.33 (bench/template_ab.sh -r 2); 16
 * streams were slower again in a loop timed alone. A software prefetch of the next group's lines
 * made it slower (2.7 against 2.0 ms over the leading axis).
 *
 * Tolerance. Kept last axis: the additions are the input's order, so a sum of n values is within
 * (n - 1) eps sum|x| of the exact sum (eps = 2^-24), as a sequential loop. Reduced last axis: the
 * order is not the input's; with runs of L elements along the last axis, lane q holds about n/16
 * values (lane 0 also the L mod 16 at each run's end), and the sum is within (c + 15) eps sum|x|, c
 * the longest lane's count: (n/16 + 15) eps sum|x| for runs of whole 16-element blocks, never more
 * than (n - 1 + 15) eps sum|x|. Maxima are exact in any order. Every variant of the kernel adds in the
 * same order, so generic and specialized agree bit for bit.
 * A maximum is whatever NDT_ACC makes it: the spec's is NaN when any element is NaN.
 *
 * A Partial output (a pending sum, or max, over its copies) lets every copy's cores share the work of
 * an output that would otherwise fall to the few cores holding it (a reduction to one element: one
 * core reading the whole input). Each copy folds only its chunk of the first reduced axis, by the chunk
 * rule (nda_part_range, as matmul's copies split k), so the parts combine to the whole reduction: a copy
 * whose chunk is empty holds NDT_INIT, the combination's identity.
 *
 * Operands: 0 a (input), 1 out (output). Scalars: axes(a).
 * Parameters: NDT_T stored type, NDT_LOAD(v) and NDT_STORE(v) conversions to and from f32;
 * NDT_INIT, the accumulator's start; NDT_ACC(acc, x), one step; NDT_FINISH(acc, n), the result of n
 * values.
 */
#include <math.h>
#include <stdint.h>

#include "eltwise_rows.h"
#include "nd_accessor.h"

#ifndef NDT_T
#define NDT_T float
#endif
#ifndef NDT_LOAD
#define NDT_LOAD(v) (v)
#endif
#ifndef NDT_STORE
#define NDT_STORE(v) (v)
#endif
#ifndef NDT_INIT
#define NDT_INIT 0.0f
#endif
#ifndef NDT_ACC
#define NDT_ACC(acc, x) ((acc) + (x))
#endif
#ifndef NDT_FINISH
#define NDT_FINISH(acc, n) (acc)
#endif

enum {
    CHUNK = 2048, /* output elements accumulated at once when rows are kept: 8 KiB of f32, in L1 */
    GROUP = 8,    /* combinations of the reduced axes folded per pass: 8 input streams in flight */
    LANES = 16,   /* output elements folded at once when the last axis is reduced, 16 lanes each */
};

/* lane[e % 16] accumulates p[e] for the whole blocks of p[0, n); the rest goes to lane 0. VMATH_WIDE:
 * one 16-lane vector a block where the target has them, not two of 8 (the same order, so the same bits):
 * a sum over 4096x4096 rows in 2.72 to 2.81 ms against 2.98 to 3.02, a max unchanged
 * (bench/template_ab.sh -r 4 <before> 'over rows', Intel Xeon VM). */
static VMATH_WIDE void reduce_lanes(float *restrict lane, const NDT_T *restrict p, int64_t n)
{
    VMATH_FOLD(lane, p, n, NDT_ACC);
}

/* acc[0, n) folds in the runs p[0][0, n), .., p[g - 1][0, n), in that order for every element: the
 * input's order, with one load and store of each accumulator per GROUP runs. One statement per step,
 * not nested NDT_ACCs, which GCC would not vectorize. */
static inline void reduce_runs(float *restrict acc, const NDT_T *const *p, int g, int64_t n)
{
    if (g == GROUP) {
        const NDT_T *restrict p0 = p[0], *restrict p1 = p[1], *restrict p2 = p[2], *restrict p3 = p[3];
        const NDT_T *restrict p4 = p[4], *restrict p5 = p[5], *restrict p6 = p[6], *restrict p7 = p[7];
        for (int64_t e = 0; e < n; ++e) {
            const float v0 = NDT_LOAD(p0[e]), v1 = NDT_LOAD(p1[e]), v2 = NDT_LOAD(p2[e]), v3 = NDT_LOAD(p3[e]);
            const float v4 = NDT_LOAD(p4[e]), v5 = NDT_LOAD(p5[e]), v6 = NDT_LOAD(p6[e]), v7 = NDT_LOAD(p7[e]);
            float s = acc[e];
            s = NDT_ACC(s, v0);
            s = NDT_ACC(s, v1);
            s = NDT_ACC(s, v2);
            s = NDT_ACC(s, v3);
            s = NDT_ACC(s, v4);
            s = NDT_ACC(s, v5);
            s = NDT_ACC(s, v6);
            s = NDT_ACC(s, v7);
            acc[e] = s;
        }
        return;
    }
    for (int i = 0; i < g; ++i) {
        const NDT_T *restrict pi = p[i];
        for (int64_t e = 0; e < n; ++e) {
            const float v = NDT_LOAD(pi[e]);
            acc[e] = NDT_ACC(acc[e], v);
        }
    }
}

void reduce(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int r = nda_rank(a), ro = nda_rank(out);
    int64_t ad[ROWS_MAX_RANK], lo[ROWS_MAX_RANK], hi[ROWS_MAX_RANK], od[ROWS_MAX_RANK], pd[ROWS_MAX_RANK], count = 1;
    bool red[ROWS_MAX_RANK] = {false}, red_outer[ROWS_MAX_RANK] = {false};
    int map[ROWS_MAX_RANK] = {0}; /* output axis -> input axis */
    for (int i = 0; i < r; ++i) {
        ad[i] = hi[i] = nda_dim(a, i);
        lo[i] = 0;
    }
    for (int i = 0; i < ro; ++i) {
        od[i] = nda_dim(out, i);
        pd[i] = nda_page_dim(out, i);
    }
    for (int k = 0; k < args->nscalars; ++k)
        red[(int)args->scalars[k]] = true;
    for (int i = 0, j = 0; i < r; ++i) {
        if (ro == r || !red[i])
            map[j++] = i;
        count *= red[i] ? ad[i] : 1;
        red_outer[i] = red[i] && i < r - 1;
    }
    (void)count; /* for NDT_FINISH, which may not need it (a sum, a max) */
    const bool rows_kept = !red[r - 1];
    /* With the last axis reduced, LANES output elements along the output's last axis fold side by side
     * when that axis is inside every other reduced one (axes 0 and 2 of a rank-3 tensor, the output
     * along axis 1): each combination of the reduced axes then reads the elements' runs one after
     * another, adjacent in memory, one stream, where one element at a time read GROUP runs a whole
     * slab apart. Each element's additions keep their order (combinations in order, each run's
     * pieces in order, and the page grid breaks every element's runs at the same places along the
     * last axis), so its bits are those of one element at a time. */
    int inner = -1; /* the innermost reduced axis but the last */
    for (int i = 0; i < r - 1; ++i)
        inner = red[i] ? i : inner;
    const int64_t block = !rows_kept && !red[map[ro - 1]] && map[ro - 1] > inner ? LANES : 1;
    int first = 0; /* the first reduced axis: a Partial output's copy folds its chunk [lo, hi) of it */
    while (first < r - 1 && !red[first])
        ++first;
    bool empty; /* this copy folds nothing: more parts than the axis has indices, or no axis reduced */
    if (red[first]) {
        nda_part_range(core, out, ad[first], &lo[first], &hi[first]);
        empty = lo[first] >= hi[first];
    } else {
        empty = nda_part(core, out) != 0; /* a copy: part 0 holds the values, the others the identity */
    }
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[ROWS_MAX_RANK], x[ROWS_MAX_RANK] = {0}, y[ROWS_MAX_RANK] = {0}, off;
        rows w;
        nda_page_coord(out, nda_iter_page(&it), pc);
        NDT_T *z = (NDT_T *)nda_iter_ptr(&it);
        rows_begin(&w, ro, od, pd, pc);
        do {
            const int64_t len = rows_get(&w, x, &off);
            for (int64_t j0 = 0; j0 < len;) {
                const int64_t m = rows_min(len - j0, rows_kept ? CHUNK : block);
                float acc[CHUNK], lane[LANES][VMATH_BLOCK];
                for (int64_t e = 0; e < m; ++e) {
                    acc[e] = NDT_INIT;
                    for (int q = 0; q < VMATH_BLOCK && !rows_kept; ++q)
                        lane[e][q] = NDT_INIT;
                }
                for (int i = 0; i < r; ++i)
                    y[i] = lo[i];
                for (int j = 0; j < ro; ++j)
                    y[map[j]] = red[map[j]] ? lo[map[j]] : x[j];
                y[r - 1] = rows_kept ? x[ro - 1] : lo[r - 1]; /* x[ro - 1] already advanced past j0 */
                const int64_t start = y[r - 1], span = rows_kept ? m : hi[r - 1] - lo[r - 1];
                bool more = !empty;
                while (more) { /* every combination of the reduced axes but the last, GROUP at a time */
                    int64_t ys[GROUP][ROWS_MAX_RANK] = {{0}};
                    int g = 0;
                    do {
                        for (int i = 0; i < r; ++i)
                            ys[g][i] = y[i];
                        ++g;
                        more = rows_odometer(y, red_outer, lo, hi, r);
                    } while (more && g < GROUP);
                    for (int64_t k = 0; k < span;) {
                        const NDT_T *p[LANES][GROUP]; /* p[e][i]: output element e's run of combination i */
                        const int64_t runs = rows_kept ? 1 : m; /* kept rows: one run serves all m */
                        int64_t n = span - k;
                        for (int64_t e = 0; e < runs; ++e)
                            for (int i = 0; i < g; ++i) {
                                int64_t ni, yi[ROWS_MAX_RANK];
                                for (int d = 0; d < r; ++d)
                                    yi[d] = ys[i][d];
                                yi[r - 1] = start + k;
                                yi[map[ro - 1]] += e; /* e > 0 only when the axis is kept (block) */
                                p[e][i] = nda_elem_read(core, a, yi, &ni);
                                n = rows_min(n, ni);
                            }
                        if (rows_kept)
                            reduce_runs(acc + k, p[0], g, n);
                        else /* combination-major: the m runs of one combination lie side by side */
                            for (int i = 0; i < g; ++i)
                                for (int64_t e = 0; e < m; ++e)
                                    reduce_lanes(lane[e], p[e][i], n);
                        k += n;
                    }
                }
                for (int64_t e = 0; e < m && !rows_kept; ++e) { /* each element's lanes, in order */
                    acc[e] = lane[e][0];
                    for (int q = 1; q < VMATH_BLOCK; ++q) {
                        const float v = lane[e][q];
                        acc[e] = NDT_ACC(acc[e], v);
                    }
                }
                for (int64_t e = 0; e < m; ++e)
                    z[off + j0 + e] = NDT_STORE(NDT_FINISH(acc[e], count));
                j0 += m;
                x[ro - 1] += m;
            }
        } while (rows_next(&w));
    }
}
