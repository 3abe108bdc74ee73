/* Refused: a static helper binding an operand with its own args parameter. */
#include "nd_accessor.h"

static float first_elem(const nda_core *core, const nda_args *args, int64_t page)
{
    const nda_tensor *a = nda_operand(args, 0);
    return *(const float *)nda_page_read(core, a, page);
}

void helper_binds(const nda_core *core, const nda_args *args)
{
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        float *y = (float *)nda_iter_ptr(&it);
        y[0] = first_elem(core, args, nda_iter_page(&it));
    }
}
