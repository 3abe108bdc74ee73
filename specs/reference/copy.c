/*
 * copy.c - the plain reference of data movement (page_copy): the output is the input, element for
 * element. A reference is static void NAME(const nda_ref_args *args, int64_t lo, int64_t hi) filling
 * output elements [lo, hi) over contiguous row-major arrays (nda_ref_fn in nd_accessor.h).
 */
#include <string.h>

#include "nd_accessor.h"

static void ref_copy(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const nda_ref_operand *in = &args->operands[0], *out = &args->operands[1];
    size_t eb = (size_t)nd_dtype_size((nd_dtype)out->dtype);
    memcpy((uint8_t *)out->data + (size_t)lo * eb, (const uint8_t *)in->data + (size_t)lo * eb, (size_t)(hi - lo) * eb);
}
