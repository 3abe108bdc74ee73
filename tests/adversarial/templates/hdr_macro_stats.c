/* Refused: its header defines the macro `owner_of`, which would rewrite the generated t->owner_of. */
#include "adv_stats_macro.h"
#include "nd_accessor.h"

void hdr_macro_stats(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        y[0] = x[0];
    }
}
