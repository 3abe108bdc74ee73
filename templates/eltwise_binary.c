/*
 * eltwise_binary.c - out = EXPR(a, b), element by element, for operands of one shape and page box.
 * Owner computes: each core walks the pages of `out` it holds and reads the same pages of `a` and `b`
 * wherever they live.
 *
 * Operands: 0 a, 1 b (inputs), 2 out (output).
 * Parameters: NDT_T, the C element type; NDT_EXPR(x, y), the scalar expression.
 */
#include <math.h>
#include <stdint.h>

#include "nd_accessor.h"

#ifndef NDT_T
#define NDT_T float
#endif
#ifndef NDT_EXPR
#define NDT_EXPR(x, y) ((x) + (y))
#endif

void eltwise_binary(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *b = nda_operand(args, 1);
    const nda_tensor *out = nda_operand(args, 2);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(NDT_T);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const NDT_T *x = nda_page_read(core, a, nda_iter_page(&it));
        const NDT_T *y = nda_page_read(core, b, nda_iter_page(&it));
        NDT_T *z = (NDT_T *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            z[e] = NDT_EXPR(x[e], y[e]);
    }
}
