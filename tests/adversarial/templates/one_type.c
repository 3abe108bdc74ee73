/* One element type NDT_T for every operand, with conversions: out = 2a. Accepted for bf16 (T derived
 * as uint16_t); refused when the spec gives T = "float" for bf16, or operands of two dtypes. */
#include <stdint.h>

#include "nd_accessor.h"

#ifndef NDT_T
#define NDT_T float
#endif
#ifndef NDT_LOAD
#define NDT_LOAD(v) (v)
#endif
#ifndef NDT_STORE
#define NDT_STORE(v) (v)
#endif

void one_type(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(NDT_T);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const NDT_T *x = nda_page_read(core, a, nda_iter_page(&it));
        NDT_T *y = (NDT_T *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = NDT_STORE(NDT_LOAD(x[e]) * 2);
    }
}
