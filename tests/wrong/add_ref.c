/* The right add, as the wrong library's reference: its kernels subtract, so ndrun must disagree. */
#include "nd_accessor.h"

static void ref_add(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const float *a = args->operands[0].data, *b = args->operands[1].data;
    float *out = args->operands[2].data;
    for (int64_t i = lo; i < hi; ++i)
        out[i] = a[i] + b[i];
}
