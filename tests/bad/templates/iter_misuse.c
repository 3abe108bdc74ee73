#include "nd_accessor.h"

void iter_misuse(const nda_core *core, const nda_args *args)
{
    const nda_tensor *out = nda_operand(args, 1);
    (void)nda_operand(args, 0);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t off = it.pages.offset;
        (void)off;
    }
}
