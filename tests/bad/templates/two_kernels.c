#include "nd_accessor.h"

void first(const nda_core *core, const nda_args *args)
{
    (void)nda_operand(args, 1);
    (void)core;
}

void second(const nda_core *core, const nda_args *args)
{
    (void)core;
    (void)args;
}
