/*
 * softmax.c - out = softmax(a) along the last axis, numerically stable: exp(x - max) / sum, in f32.
 * Owner computes: for each row of an output page, the kernel reads the whole input row (which may
 * span pages and cores) for its max and sum, then writes its own part.
 *
 * Operands: 0 a (input), 1 out (output), same shape.
 * Parameters: NDT_T stored type; NDT_LOAD(v) and NDT_STORE(v) conversions to and from f32.
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
            float max = -INFINITY, sum = 0.0f;
            for (int pass = 0; pass < 2; ++pass) { /* the whole row: its max, then its sum */
                for (x[r - 1] = 0; x[r - 1] < width;) {
                    int64_t n;
                    const NDT_T *p = nda_elem_read(core, a, x, &n);
                    for (int64_t e = 0; e < n; ++e) {
                        const float v = NDT_LOAD(p[e]);
                        if (pass == 0)
                            max = fmaxf(max, v);
                        else
                            sum += expf(v - max);
                    }
                    x[r - 1] += n;
                }
            }
            for (x[r - 1] = first; x[r - 1] < first + len;) { /* this page's part of the row */
                int64_t n;
                const NDT_T *p = nda_elem_read(core, a, x, &n);
                n = rows_min(n, first + len - x[r - 1]);
                for (int64_t e = 0; e < n; ++e)
                    z[off + x[r - 1] - first + e] = NDT_STORE(expf(NDT_LOAD(p[e]) - max) / sum);
                x[r - 1] += n;
            }
        } while (rows_next(&w));
    }
}
