/* Refused: an accessor call inside a static helper, on the helper's parameter rather than a bound
 * variable: ndgen cannot tell which operand it reads. */
#include "nd_accessor.h"

static const float *read_page(const nda_core *core, const nda_tensor *t, int64_t page)
{
    return nda_page_read(core, t, page);
}

void helper_accessor(const nda_core *core, const nda_args *args)
{
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = read_page(core, nda_operand(args, 0), nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < nda_page_bytes(out) / 4; ++e)
            y[e] = x[e];
    }
}
