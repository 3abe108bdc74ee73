/* Refused: a bound tensor passed to a function of the template's own (no accessor call there). */
#include "nd_accessor.h"

static int64_t elems_of(const nda_tensor *t) { return t->page_bytes / 4; }

void pass_bound(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = elems_of(out);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = x[e];
    }
}
