/* Accepted: the `continue` of an nda_iter loop spelled by a macro, in an nda_iter loop inside an
 * ordinary loop. ndgen finds it in the parsed code, after expansion, and keeps the specialized nest's
 * innermost loop for it even where that loop runs once (a shard of one page): without that loop the
 * continue would go to the outer loop and skip `w = 2`. Pass 0 skips every page, pass 1 adds w * a:
 * out = 2a. */
#include "nd_accessor.h"

#define NEXT_PAGE continue

void macro_continue(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    float w = 1.0f;
    for (int pass = 0; pass < 2; ++pass) {
        for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
            if (pass == 0)
                NEXT_PAGE;
            const float *x = nda_page_read(core, a, nda_iter_page(&it));
            float *y = (float *)nda_iter_ptr(&it);
            for (int64_t e = 0; e < n; ++e)
                y[e] += w * x[e];
        }
        w = 2.0f;
    }
}
