/* A parameter names the tensor argument of accessor calls: NDT_SRC is a or b. out = 3 * NDT_SRC. */
#include "nd_accessor.h"

#ifndef NDT_SRC
#define NDT_SRC a
#endif

void param_tensor(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *b = nda_operand(args, 1);
    const nda_tensor *out = nda_operand(args, 2);
    const int64_t n = nda_page_bytes(NDT_SRC) / (int64_t)sizeof(float);
    const float zero = (float)(nda_rank(a) + nda_rank(b) - 2 * nda_rank(out)); /* 0: one rank */
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, NDT_SRC, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = 3.0f * x[e] + zero;
    }
}
