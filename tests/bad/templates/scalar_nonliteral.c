/* Reads a scalar by a name that is not a string literal (scalar_nonliteral.lua). */
#include <stdint.h>

#include "nd_accessor.h"

void scalar_nonliteral(const nda_core *core, const nda_args *args)
{
    const char *name = "eps";
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const float gain = (float)nda_scalar(args, name);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        y[0] = gain * x[0];
    }
}
