/* Refused: the template defines a macro named `base`, a name the generated code uses (t->base). */
#include "nd_accessor.h"

static const float base_table[1] = {1.0f};
#define base base_table

void macro_base(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        y[0] = x[0] + base[0];
    }
}
