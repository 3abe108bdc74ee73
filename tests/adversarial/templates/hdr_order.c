/* Refused: of its two headers, one tests a macro of the other; another template including only the
 * second would have it read otherwise, once for the whole generated file. */
#include "adv_order_a.h"
#include "adv_order_b.h"
#include "nd_accessor.h"

void hdr_order(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const float *x = nda_page_read(core, a, nda_iter_page(&it));
        float *y = (float *)nda_iter_ptr(&it);
        y[0] = ADV_ORDER_SCALE * x[0];
    }
}
