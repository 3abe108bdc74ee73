/*
 * reduce.c - out = the reduction of a over a set of axes, given as the launch's scalars (the runtime
 * checks them, and the output shape, with or without keepdims). Accumulation is in f32. Owner
 * computes: each core fills the output pages it holds, reading `a` wherever it lives.
 *
 * When the input's last axis is kept, an output row is a run along it: the row accumulates whole
 * input runs for each combination of the reduced axes. When the last axis is reduced, each output
 * element accumulates runs along it, in VMATH_BLOCK (16) independent lanes, combined in lane order at
 * the end: 16 chains at once instead of one, so the loads, not the adds' latency, set the pace. The
 * order of the additions is then not the input's order: a sum's rounding differs from a sequential
 * one (its error bound, n eps sum|x|, becomes (n/16 + 16) eps sum|x|); maxima are exact in any order.
 * Every variant of the kernel adds in the same order, so generic and specialized agree bit for bit.
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

enum { CHUNK = 256 }; /* output elements accumulated at once when rows are kept */

/* lane[e % 16] accumulates p[e] for the whole blocks of p[0, n); the rest goes to lane 0. */
static inline void reduce_lanes(float *restrict lane, const NDT_T *restrict p, int64_t n)
{
    int64_t e = 0;
    for (; e + VMATH_BLOCK <= n; e += VMATH_BLOCK)
        for (int q = 0; q < VMATH_BLOCK; ++q)
            lane[q] = NDT_ACC(lane[q], NDT_LOAD(p[e + q]));
    for (; e < n; ++e)
        lane[0] = NDT_ACC(lane[0], NDT_LOAD(p[e]));
}

void reduce(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int r = nda_rank(a), ro = nda_rank(out);
    int64_t ad[ROWS_MAX_RANK], od[ROWS_MAX_RANK], pd[ROWS_MAX_RANK], count = 1;
    bool red[ROWS_MAX_RANK] = {false}, red_outer[ROWS_MAX_RANK] = {false};
    int map[ROWS_MAX_RANK] = {0}; /* output axis -> input axis */
    for (int i = 0; i < r; ++i)
        ad[i] = nda_dim(a, i);
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
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[ROWS_MAX_RANK], x[ROWS_MAX_RANK] = {0}, y[ROWS_MAX_RANK] = {0}, off;
        rows w;
        nda_page_coord(out, nda_iter_page(&it), pc);
        NDT_T *z = (NDT_T *)nda_iter_ptr(&it);
        rows_begin(&w, ro, od, pd, pc);
        do {
            const int64_t len = rows_get(&w, x, &off);
            for (int64_t j0 = 0; j0 < len;) {
                const int64_t m = red[r - 1] ? 1 : rows_min(len - j0, CHUNK);
                float acc[CHUNK];
                for (int64_t e = 0; e < m; ++e)
                    acc[e] = NDT_INIT;
                for (int i = 0; i < r; ++i)
                    y[i] = 0;
                for (int j = 0; j < ro; ++j)
                    y[map[j]] = red[map[j]] ? 0 : x[j];
                y[r - 1] = red[r - 1] ? 0 : x[ro - 1]; /* x[ro - 1] already advanced past j0 */
                float lane[VMATH_BLOCK];
                for (int q = 0; q < VMATH_BLOCK; ++q)
                    lane[q] = NDT_INIT;
                do { /* every combination of the reduced axes but the last */
                    const int64_t start = y[r - 1], span = red[r - 1] ? ad[r - 1] : m;
                    for (int64_t k = 0; k < span;) {
                        int64_t n;
                        const NDT_T *p = nda_elem_read(core, a, y, &n);
                        n = rows_min(n, span - k);
                        if (red[r - 1])
                            reduce_lanes(lane, p, n);
                        else
                            for (int64_t e = 0; e < n; ++e)
                                acc[k + e] = NDT_ACC(acc[k + e], NDT_LOAD(p[e]));
                        k += n;
                        y[r - 1] += n;
                    }
                    y[r - 1] = start;
                } while (rows_odometer(y, red_outer, ad, r));
                if (red[r - 1]) { /* the lanes, in order */
                    acc[0] = lane[0];
                    for (int q = 1; q < VMATH_BLOCK; ++q)
                        acc[0] = NDT_ACC(acc[0], lane[q]);
                }
                for (int64_t e = 0; e < m; ++e)
                    z[off + j0 + e] = NDT_STORE(NDT_FINISH(acc[e], count));
                j0 += m;
                x[ro - 1] += m;
            }
        } while (rows_next(&w));
    }
}
