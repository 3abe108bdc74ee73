/* Accepted: a parameter chooses which operand is bound. out = 2 * operand NDT_FIRST (a or b). */
#include "nd_accessor.h"

#ifndef NDT_FIRST
#define NDT_FIRST 0
#endif

void param_binding(const nda_core *core, const nda_args *args)
{
    const nda_tensor *in = nda_operand(args, NDT_FIRST);
    const nda_tensor *out = nda_operand(args, 2);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, in, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = 2.0f * x[e];
    }
}
