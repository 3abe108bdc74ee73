/* Accepted: inside the loop a second binding shadows the name `a`, bound to operand 1 (b). The loop
 * body's reads are of b, never the outer a's pages. out = b + 5. */
#include "nd_accessor.h"

void shadow_bound(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 2);
    const float zero = (float)(nda_rank(a) - nda_rank(out));
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const nda_tensor *a = nda_operand(args, 1);
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = x[e] + 5.0f + zero;
    }
}
