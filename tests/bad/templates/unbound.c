#include "nd_accessor.h"

void unbound(const nda_core *core, const nda_args *args)
{
    const nda_tensor *out = nda_operand(args, 1);
    (void)nda_page_read(core, &args->tensors[0], 0);
    (void)out;
}
