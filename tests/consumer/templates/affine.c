/* y = A * x + B, owner computes. */
#include <stdint.h>

#include "nd_accessor.h"

#ifndef NDT_A
#define NDT_A 1.0f
#endif
#ifndef NDT_B
#define NDT_B 0.0f
#endif

void affine(const nda_core *core, const nda_args *args)
{
    const nda_tensor *x = nda_operand(args, 0);
    const nda_tensor *y = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(y) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, y); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *in = nda_page_read(core, x, nda_iter_page(&it));
        float *out = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            out[e] = NDT_A * in[e] + NDT_B;
    }
}
