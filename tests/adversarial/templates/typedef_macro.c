/* Accepted: a typedef, an enum constant and a static used inside the template's own macros, renamed
 * in the macro bodies too; a member named like a static is not renamed. out = 2a + 1 + LANES - 4. */
#include "nd_accessor.h"

typedef float elem;
enum { LANES = 4 };
static const elem bias = 1.0f;
typedef struct pair {
    elem bias, lanes;
} pair;

#define LOADE(p, e) (((const elem *)(p))[e])
#define BIAS_OF(q) ((q). bias + (elem)LANES - (q).lanes)
#define ADD_BIAS(v) ((v) + bias)

void typedef_macro(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const pair q = {0.0f, 4.0f};
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(elem);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const void *x = nda_page_read(core, a, nda_iter_page(&it));
        elem *y = (elem *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = ADD_BIAS(2.0f * LOADE(x, e)) + BIAS_OF(q);
    }
}
