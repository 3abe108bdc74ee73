/* Accepted: `break` inside an ordinary loop, a switch and a do-while within an nda_iter loop body.
 * out = a where a is even, -a where a is odd. */
#include "nd_accessor.h"

void inner_break(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(float);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        for (int64_t e = 0;; ++e) {
            if (e == n)
                break;
            switch ((int)x[e] & 1) {
            case 0:
                y[e] = x[e];
                break;
            default:
                y[e] = -x[e];
                break;
            }
        }
        do {
            if (n > 0)
                break;
            y[0] = 99.0f;
        } while (0);
        while (1)
            break;
    }
}
