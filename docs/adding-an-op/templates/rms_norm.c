/*
 * rms_norm.c - y = x / sqrt(mean(x * x over the last axis) + eps), eps a launch scalar the spec names.
 * Owner computes: each core fills the pages of y it holds, row by row (eltwise_rows.h, one of ndgen's
 * installed templates), and reads the whole last-axis row of x wherever it lives.
 *
 * Operands: 0 x (input), 1 y (output), f32, one shape. Scalars: eps (read by name).
 */
#include <math.h>
#include <stdint.h>

#include "eltwise_rows.h"
#include "nd_accessor.h"

void rms_norm(const nda_core *core, const nda_args *args)
{
    const nda_tensor *x = nda_operand(args, 0);
    const nda_tensor *y = nda_operand(args, 1);
    const float eps = (float)nda_scalar(args, "eps");
    const int r = nda_rank(y);
    const int64_t n = nda_dim(y, r - 1);
    int64_t od[ROWS_MAX_RANK], pd[ROWS_MAX_RANK];
    for (int i = 0; i < r; ++i) {
        od[i] = nda_dim(y, i);
        pd[i] = nda_page_dim(y, i);
    }
    for (nda_iter it = nda_iter_local(core, y); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[ROWS_MAX_RANK], c[ROWS_MAX_RANK] = {0}, off;
        rows w;
        nda_page_coord(y, nda_iter_page(&it), pc);
        float *out = (float *)nda_iter_ptr(&it);
        rows_begin(&w, r, od, pd, pc);
        do {
            const int64_t len = rows_get(&w, c, &off), first = c[r - 1];
            if (len == 0)
                continue;
            float sum = 0.0f; /* the whole row, in order, as the reference sums it */
            c[r - 1] = 0;
            for (int64_t j = 0; j < n;) {
                int64_t na;
                const float *p = nda_elem_read(core, x, c, &na);
                const int64_t m = rows_min(n - j, na);
                for (int64_t e = 0; e < m; ++e)
                    sum += p[e] * p[e];
                j += m;
                c[r - 1] += m;
            }
            const float scale = 1.0f / sqrtf(sum / (float)n + eps);
            c[r - 1] = first;
            for (int64_t j = 0; j < len;) {
                int64_t na;
                const float *p = nda_elem_read(core, x, c, &na);
                const int64_t m = rows_min(len - j, na);
                for (int64_t e = 0; e < m; ++e)
                    out[off + j + e] = p[e] * scale;
                j += m;
                c[r - 1] += m;
            }
        } while (rows_next(&w));
    }
}
