/* A call to a function nothing declares: C would compile it as returning int (a wrong value, with a
 * warning at most), so ndgen refuses it as the kernels are compiled, an error at its line. */
#include "nd_accessor.h"

void undeclared_call(const nda_core *core, const nda_args *args)
{
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it))
        *(float *)nda_iter_ptr(&it) = (float)half_of(2.0f);
}
