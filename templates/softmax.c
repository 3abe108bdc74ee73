/*
 * softmax.c - out = softmax(a) along the last axis, numerically stable: exp(x - max) / sum, in f32.
 * Owner computes: for each row of an output page, the kernel reads the whole input row (which may
 * span pages and cores) for its max and sum, then writes its own part.
 *
 * Operands: 0 a (input), 1 out (output), same shape.
 * Parameters: NDT_T stored type; NDT_LOAD(v) and NDT_STORE(v) conversions to and from f32.
 *
 * exp is applied in blocks of VMATH_BLOCK elements (eltwise_rows.h), so that it vectorizes and every element
 * takes the same path in the generic and the specialized kernel; the max and the sum stay in order.
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

/* e[0, n) = exp(x[0, n) - max), VMATH_BLOCK lanes at a time (n at most VMATH_BLOCK). */
static inline void softmax_exp(float *restrict e, const NDT_T *restrict x, int64_t n, float max)
{
    float v[VMATH_BLOCK] = {0};
    for (int64_t k = 0; k < n; ++k)
        v[k] = NDT_LOAD(x[k]) - max;
    VMATH_KEEP_LOOP /* one vector loop, not 16 scalar calls */
    for (int k = 0; k < VMATH_BLOCK; ++k)
        e[k] = expf(v[k]);
}

/* z[0, n) = exp(p[0, n) - max) / sum: whole blocks in place, the rest through softmax_exp. */
static inline void softmax_out(NDT_T *restrict z, const NDT_T *restrict p, int64_t n, float max, float sum)
{
    int64_t e = 0;
    for (; e + VMATH_BLOCK <= n; e += VMATH_BLOCK) {
        VMATH_KEEP_LOOP
        for (int k = 0; k < VMATH_BLOCK; ++k)
            z[e + k] = NDT_STORE(expf(NDT_LOAD(p[e + k]) - max) / sum);
    }
    if (e < n) {
        float ex[VMATH_BLOCK];
        softmax_exp(ex, p + e, n - e, max);
        for (int64_t k = 0; k < n - e; ++k)
            z[e + k] = NDT_STORE(ex[k] / sum);
    }
}

void softmax(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int r = nda_rank(out);
    int64_t od[ROWS_MAX_RANK], pd[ROWS_MAX_RANK];
    for (int i = 0; i < r; ++i) {
        od[i] = nda_dim(out, i);
        pd[i] = nda_page_dim(out, i);
    }
    const int64_t width = od[r - 1];
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[ROWS_MAX_RANK], x[ROWS_MAX_RANK] = {0}, off;
        rows w;
        nda_page_coord(out, nda_iter_page(&it), pc);
        NDT_T *z = (NDT_T *)nda_iter_ptr(&it);
        rows_begin(&w, r, od, pd, pc);
        do {
            const int64_t len = rows_get(&w, x, &off);
            if (len == 0)
                continue;
            const int64_t first = x[r - 1];
            float sum = 0.0f, lane[VMATH_BLOCK];
            for (int k = 0; k < VMATH_BLOCK; ++k)
                lane[k] = -INFINITY;
            for (x[r - 1] = 0; x[r - 1] < width;) { /* the whole row: its max (exact in any order), */
                int64_t n, e = 0;
                const NDT_T *p = nda_elem_read(core, a, x, &n);
                for (; e + VMATH_BLOCK <= n; e += VMATH_BLOCK)
                    for (int k = 0; k < VMATH_BLOCK; ++k) {
                        const float v = NDT_LOAD(p[e + k]);
                        lane[k] = v > lane[k] ? v : lane[k]; /* fmaxf's result: a NaN is passed over */
                    }
                for (; e < n; ++e) {
                    const float v = NDT_LOAD(p[e]);
                    lane[0] = v > lane[0] ? v : lane[0];
                }
                x[r - 1] += n;
            }
            float max = -INFINITY;
            for (int k = 0; k < VMATH_BLOCK; ++k)
                max = lane[k] > max ? lane[k] : max;
            for (x[r - 1] = 0; x[r - 1] < width;) { /* then its sum, in order */
                int64_t n;
                const NDT_T *p = nda_elem_read(core, a, x, &n);
                for (int64_t e0 = 0; e0 < n; e0 += VMATH_BLOCK) {
                    float ex[VMATH_BLOCK];
                    const int64_t m = vmath_min(n - e0, VMATH_BLOCK);
                    if (m == VMATH_BLOCK) { /* a whole block in place */
                        VMATH_KEEP_LOOP
                        for (int k = 0; k < VMATH_BLOCK; ++k)
                            ex[k] = expf(NDT_LOAD(p[e0 + k]) - max);
                    } else {
                        softmax_exp(ex, p + e0, m, max);
                    }
                    for (int64_t k = 0; k < m; ++k)
                        sum += ex[k];
                }
                x[r - 1] += n;
            }
            for (x[r - 1] = first; x[r - 1] < first + len;) { /* this page's part of the row */
                int64_t n;
                const NDT_T *p = nda_elem_read(core, a, x, &n);
                n = rows_min(n, first + len - x[r - 1]);
                softmax_out(z + off + x[r - 1] - first, p, n, max, sum);
                x[r - 1] += n;
            }
        } while (rows_next(&w));
    }
}
