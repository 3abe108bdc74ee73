/* Accepted: iterate the input's own pages and write the output's page of the same id (a remote write
 * when they are placed apart). out = a * a. */
#include "nd_accessor.h"

void iter_input(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(a) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, a); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = (const float *)nda_iter_ptr(&it);
        float *y = nda_page_write(core, out, nda_iter_page(&it));
        for (int64_t e = 0; e < n; ++e)
            y[e] = x[e] * x[e];
    }
}
