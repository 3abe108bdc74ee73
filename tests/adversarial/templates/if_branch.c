/* Accepted: #if on a parameter chooses code with accessor calls: one loop reading b (MODE 1:
 * out = a - b, via two loops) or a single loop reading a (MODE 0: out = a + 1). */
#include "nd_accessor.h"

#ifndef NDT_MODE
#define NDT_MODE 0
#endif

void if_branch(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 2);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
#if NDT_MODE == 1
    const nda_tensor *b = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = x[e];
    }
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *z = nda_page_read(core, b, nda_iter_page(&it));
        float *y = nda_page_write(core, out, nda_iter_page(&it));
        for (int64_t e = 0; e < n; ++e)
            y[e] -= z[e];
    }
#else
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = x[e] + 1.0f;
    }
#endif
}
