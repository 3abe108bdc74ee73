/* Refused: a trigraph. In ISO C modes (ndgen parses as C17) the one ending the comment below is a
 * backslash that continues the comment over the next line, so ndgen would not see the rebinding there;
 * a compiler in GNU mode, the default, compiles it, and kernels specialized for operand 0 would read b. */
#include "nd_accessor.h"

void trigraph(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 2);
    // the operand to read ??/
    a = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = x[e];
    }
}
