/* |a - b| on u8, written apart from the spec's EXPR. */
#include "nd_accessor.h"

static void ref_iabsdiff(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const uint8_t *a = args->operands[0].data, *b = args->operands[1].data;
    uint8_t *out = args->operands[2].data;
    for (int64_t i = lo; i < hi; ++i)
        out[i] = (uint8_t)(a[i] > b[i] ? a[i] - b[i] : b[i] - a[i]);
}

/* The same, under the name of the derived reference: a function so named is still only a function,
 * whose reads ndgen cannot see (tests/test_reads_kinds.c: it must read its inputs whole). */
static void elementwise(const nda_ref_args *args, int64_t lo, int64_t hi) { ref_iabsdiff(args, lo, hi); }

/* And under a bundled reference's name: a user's ref_softmax is not the bundled one, so what it reads
 * is not known either (test_reads_kinds: whole). */
static void ref_softmax(const nda_ref_args *args, int64_t lo, int64_t hi) { ref_iabsdiff(args, lo, hi); }
