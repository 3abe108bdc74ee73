#include "nd_accessor.h"

void direct_model(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    nd_loc l = nd_layout_locate_id(a->layout, 0);
    (void)l, (void)out, (void)core;
}
