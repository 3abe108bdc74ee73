/* Accepted: a header of the template's own uses the parameter NDT_SCALE in a macro body; the
 * generated file reads the header once, and each variant expands the macro with its own value.
 * out = SCALE * a. */
#include "adv_scale.h"
#include "nd_accessor.h"

#ifndef NDT_SCALE
#define NDT_SCALE 1
#endif

void hdr_macro_param(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = ADV_SCALED(x[e]);
    }
}
