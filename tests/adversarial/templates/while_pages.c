/* Accepted: no nda_iter loop; a while loop over every page id, writing those this core holds. Uses
 * nda_rank, nda_dim, nda_page_dim, nda_is_local, nda_page_read and nda_page_write. out = a - 1. */
#include "nd_accessor.h"

void while_pages(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int r = nda_rank(out);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    int64_t npages = 1;
    for (int i = 0; i < r; ++i)
        npages *= (nda_dim(out, i) + nda_page_dim(out, i) - 1) / nda_page_dim(out, i);
    int64_t p = 0;
    while (p < npages) {
        if (nda_is_local(core, out, p)) {
            const float *x = nda_page_read(core, a, p);
            float *y = nda_page_write(core, out, p);
            int64_t e = n;
            while (e-- > 0)
                y[e] = x[e] - 1.0f;
        }
        ++p;
    }
}
