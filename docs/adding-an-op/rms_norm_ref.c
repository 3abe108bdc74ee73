/* The plain reference of rms_norm: contiguous row-major arrays, elements [lo, hi) of the output. */
#include <math.h>

#include "nd_accessor.h"

static void rms_norm_ref(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const nda_ref_operand *x = &args->operands[0], *y = &args->operands[1];
    const int64_t n = x->shape[x->rank - 1];
    const float *in = x->data, eps = (float)args->scalars[0];
    float *out = y->data;
    for (int64_t i = lo; i < hi; ++i) {
        const float *row = in + i / n * n;
        float sum = 0.0f;
        for (int64_t k = 0; k < n; ++k)
            sum += row[k] * row[k];
        out[i] = in[i] * (1.0f / sqrtf(sum / (float)n + eps));
    }
}
