/* Accepted: an nda_iter loop nested in another, with the inner iterator shadowing the outer's name.
 * For each page of out, the page of a with the same id is taken from a's own pages when this core
 * holds it, else read from wherever it is. out = 4a. */
#include <stddef.h>

#include "nd_accessor.h"

void nested_iter(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const int64_t want = nda_iter_page(&it);
        float *y = (float *)nda_iter_ptr(&it);
        const float *src = NULL;
        for (nda_iter it = nda_iter_local(core, a); nda_iter_valid(&it); nda_iter_next(&it)) {
            if (nda_iter_page(&it) == want)
                src = (const float *)nda_iter_ptr(&it);
        }
        if (!src)
            src = nda_page_read(core, a, want);
        for (int64_t e = 0; e < n; ++e)
            y[e] = 4.0f * src[e];
    }
}
