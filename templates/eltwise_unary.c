/*
 * eltwise_unary.c - out = EXPR(a), element by element. Owner computes: each core walks the pages of
 * `out` it holds and reads the same page of `a` wherever it lives.
 *
 * Operands: 0 a (input), 1 out (output), with the same shape and page box.
 * Parameters: NDT_T, the C element type; NDT_EXPR(x), the scalar expression.
 */
#include <math.h>
#include <stdint.h>

#include "nd_accessor.h"

#ifndef NDT_T
#define NDT_T float
#endif
#ifndef NDT_EXPR
#define NDT_EXPR(x) (x)
#endif

void eltwise_unary(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(NDT_T);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const NDT_T *x = nda_page_read(core, a, nda_iter_page(&it));
        NDT_T *y = (NDT_T *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = NDT_EXPR(x[e]);
    }
}
