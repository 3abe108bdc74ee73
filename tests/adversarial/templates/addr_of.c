/* Refused: the address of a bound variable, through which it could be changed or read. */
#include "nd_accessor.h"

void addr_of(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const nda_tensor *const *pa = &a;
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, *pa, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < nda_page_bytes(out) / 4; ++e)
            y[e] = x[e];
    }
}
