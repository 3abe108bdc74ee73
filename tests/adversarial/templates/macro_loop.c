/* Refused: the nda_iter loop header written by a macro. */
#include "nd_accessor.h"

#define EACH_PAGE(it, t) for (nda_iter it = nda_iter_local(core, t); nda_iter_valid(&it); nda_iter_next(&it))

void macro_loop(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    EACH_PAGE(it, out) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        y[0] = x[0];
    }
}
