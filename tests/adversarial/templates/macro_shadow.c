/* Refused: a macro body names `scale`, a static of the template, but is expanded where a local
 * `scale` hides it: the rename in the body would change which one it means. */
#include "nd_accessor.h"

static const float scale = 2.0f;
#define SCALED(v) ((v) * scale)

void macro_shadow(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const float first = SCALED(1.0f);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float scale = 3.0f;
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        y[0] = SCALED(x[0]) + first;
    }
}
