/*
 * axpb.c - out = (alpha * a + beta) * times, elementwise on f32 pages of the same paging: a user's
 * template reading its launch scalars by name (nda_scalar), for tests/test_scalars_launch.c.
 *
 * Operands: 0 a, 1 out. Scalars: alpha, beta, times (tests/scalars/scalars.lua declares their types).
 */
#include <stdint.h>

#include "nd_accessor.h"

void axpb(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const float alpha = (float)nda_scalar(args, "alpha");
    const float beta = (float)nda_scalar(args, "beta");
    const int times = (int)nda_scalar(args, "times");
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = (const float *)nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = (alpha * x[e] + beta) * (float)times;
    }
}
