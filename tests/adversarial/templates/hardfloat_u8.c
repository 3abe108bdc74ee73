/* Refused: the template hard-codes float and declares no element type; given u8 operands it would read
 * their pages through float pointers. ndgen checks the pointer types page data is read through against
 * the operands' dtypes. */
#include "nd_accessor.h"

void hardfloat_u8(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = x[e];
    }
}
