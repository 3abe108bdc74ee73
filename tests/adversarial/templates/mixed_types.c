/* Accepted: an element type per operand (NDT_T0, NDT_T1) and conversions (NDT_LOAD0, NDT_STORE1),
 * derived from the operands' dtypes. out = 2a + 1, computed in the input's loaded type. */
#include <stdint.h>

#include "nd_accessor.h"

#ifndef NDT_T0
#define NDT_T0 float
#endif
#ifndef NDT_T1
#define NDT_T1 float
#endif
#ifndef NDT_LOAD0
#define NDT_LOAD0(v) (v)
#endif
#ifndef NDT_STORE1
#define NDT_STORE1(v) (v)
#endif

void mixed_types(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(NDT_T1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const NDT_T0 *x = nda_page_read(core, a, nda_iter_page(&it));
        NDT_T1 *y = (NDT_T1 *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = NDT_STORE1(NDT_LOAD0(x[e]) * 2 + 1);
    }
}
