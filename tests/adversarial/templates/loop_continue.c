/* Accepted: `continue` in an nda_iter loop skips to the next page, in the generic loop and in the
 * specialized loop nest alike. Pages with an odd id are left as they are (zero); out = 2a elsewhere. */
#include "nd_accessor.h"

void loop_continue(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        if (nda_iter_page(&it) % 2 == 1)
            continue;
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e) {
            if (x[e] == 0.0f)
                continue; /* an ordinary loop's continue: out stays 0 where a is 0 */
            y[e] = 2.0f * x[e];
        }
    }
}
