/* The template defines ADV_FAST (when NDT_FAST) before including a header that tests it: each op
 * would want the header read in its own context. out = 2a (FAST) or 3a. */
#ifndef NDT_FAST
#define NDT_FAST 0
#endif
#if NDT_FAST
#define ADV_FAST 1
#endif

#include "adv_cond.h"
#include "nd_accessor.h"

void hdr_cond(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = ADV_HOW(x[e]);
    }
}
