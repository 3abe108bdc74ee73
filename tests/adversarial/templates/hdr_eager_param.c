/* Refused: its header reads NDT_SCALE eagerly, once per generated file. */
#ifndef NDT_SCALE
#define NDT_SCALE 1
#endif

#include "adv_eager.h"
#include "nd_accessor.h"

void hdr_eager_param(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        y[0] = adv_eager_scale * x[0];
    }
}
