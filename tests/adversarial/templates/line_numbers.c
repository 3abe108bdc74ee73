/* Accepted: __LINE__ in the loop body, after the specialized loop header has replaced one line with
 * many: #line keeps it the template's line. out = a + (body line - declaration line) = a + 11. */
#include "nd_accessor.h"

static const int decl_line = __LINE__;

void line_numbers(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            y[e] = x[e] + (float)(__LINE__ - decl_line);
    }
}
