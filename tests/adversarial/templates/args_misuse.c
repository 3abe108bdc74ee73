/* Refused: the kernel's args read other than as nda_operand(args, K), args->scalars, args->nscalars. */
#include "nd_accessor.h"

void args_misuse(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    if (args->ntensors != 2)
        return;
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        y[0] = x[0];
    }
}
