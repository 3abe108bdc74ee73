/* Refused for a u8 op: NDT_T is defined without #ifndef, so the dtype's type could not replace it. */
#include <stdint.h>

#include "nd_accessor.h"

#define NDT_T float

void hard_type(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(NDT_T);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const NDT_T *x = nda_page_read(core, a, nda_iter_page(&it));
        NDT_T *y = (NDT_T *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = x[e];
    }
}
