/*
 * hang.c - a kernel that never returns, as a template with a bug might: ndrun's watchdog must stop the
 * run and name it (tests/test_ndrun.sh). Operands: 0 a, 1 out; out = a, then a spin on a volatile that
 * nothing clears.
 */
#include <string.h>

#include "nd_accessor.h"

void hang(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[8];
        nda_page_coord(out, nda_iter_page(&it), pc);
        memcpy(nda_iter_ptr(&it), nda_page_read(core, a, nda_page_id(a, pc)), (size_t)nda_page_bytes(out));
    }
    volatile int spin = 1;
    while (spin)
        ;
}
