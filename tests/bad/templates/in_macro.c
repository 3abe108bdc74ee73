#include "nd_accessor.h"

#define READ(p) nda_page_read(core, a, p)

void in_macro(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = READ(nda_iter_page(&it));
        (void)x;
    }
}
