/* Refused: a bound variable rebound to another operand, so one name would mean two operands. */
#include "nd_accessor.h"

void rebind(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 2);
    a = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < nda_page_bytes(out) / 4; ++e)
            y[e] = x[e];
    }
}
