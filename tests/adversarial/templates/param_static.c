/* A spec parameter whose text names a static of the template (EXPR = "(x) * scale"): refused, since
 * the name is in no text of the template's that ndgen could rename. */
#include "nd_accessor.h"

static const float scale = 2.0f;
#ifndef NDT_EXPR
#define NDT_EXPR(x) (x)
#endif

void param_static(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        y[0] = NDT_EXPR(x[0]) + scale;
    }
}
