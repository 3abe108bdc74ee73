/*
 * all_reduce.c - a user's template under the name of a bundled one (tests/test_reads_kinds.c): out = part
 * 0 of a Partial input, page by page, from wherever that part lives. Its name says nothing of what it
 * reads: only the bundled all_reduce.c is known to read each part at the output's coordinates, so this
 * op's inputs are read whole.
 * Operands: 0 in (input, Partial), 1 out (output) with in's shape and page box.
 */
#include <string.h>

#include "nd_accessor.h"

void all_reduce(const nda_core *core, const nda_args *args)
{
    const nda_tensor *in = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        memcpy(nda_iter_ptr(&it), nda_part_page_read(core, in, 0, nda_iter_page(&it)), (size_t)nda_page_bytes(out));
    }
}
