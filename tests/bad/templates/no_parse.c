#include "nd_accessor.h"

void no_parse(const nda_core *core, const nda_args *args)
{
    int x = ;
}
