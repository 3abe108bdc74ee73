/*
 * page_copy.c - out = in, page by page, between any two distributions with the same shape and page
 * box: the reshard kernel's simplest shape. Owner computes: each core fills the pages of `out` it
 * holds from wherever `in` keeps them.
 *
 * Operands: 0 in, 1 out.
 */
#include <stdint.h>
#include <string.h>

#include "nd_accessor.h"

void page_copy(const nda_core *core, const nda_args *args)
{
    const nda_tensor *in = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t bytes = nda_page_bytes(out);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        memcpy(nda_iter_ptr(&it), nda_page_read(core, in, nda_iter_page(&it)), (size_t)bytes);
    }
}
