/* Accepted: accessor calls given another core variable than the loop's: a copy of the core whose
 * statistics go to a scratch counter. The reads of `a` count on the scratch, not on the core, in
 * every kernel: the specialized loop may not fold them into the loop's own count. out = a + 7. */
#include "nd_accessor.h"

void core_alias(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    nda_stats scratch = {0};
    nda_core quiet = *core;
    quiet.stats = &scratch;
    const nda_core *q = &quiet;
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(q, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = x[e] + 7.0f;
    }
    (void)q; /* so that a kernel which drops q's use (folding the reads into the loop) still compiles */
}
