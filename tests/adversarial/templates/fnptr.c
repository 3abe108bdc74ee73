/* Refused: an accessor function taken as a pointer; ndgen specializes only the calls it sees. */
#include "nd_accessor.h"

typedef const void *reader(const nda_core *, const nda_tensor *, int64_t);

void fnptr(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    reader *rd = nda_page_read;
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = rd(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        y[0] = x[0];
    }
}
