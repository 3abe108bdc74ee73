/* Refused: goto inside an nda_iter loop, even to a label in the same body. */
#include "nd_accessor.h"

void loop_goto(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        if (x[0] < 0.0f)
            goto skip;
        y[0] = x[0];
    skip:;
    }
}
