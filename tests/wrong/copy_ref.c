/* A plain copy, the hanging op's reference (hang.lua): the case is well formed up to the launch. */
#include "nd_accessor.h"

static void ref_copy_f32(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const float *a = args->operands[0].data;
    float *out = args->operands[1].data;
    for (int64_t i = lo; i < hi; ++i)
        out[i] = a[i];
}
