/*
 * softmax.c - the plain reference of softmax over the last axis, numerically stable, in f32: for each
 * row the range touches, its max and sum over the whole row, then the range's elements of it.
 */
#include <math.h>

#include "nd_accessor.h"

static void ref_softmax(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const nda_ref_operand *in = &args->operands[0], *out = &args->operands[1];
    int64_t w = out->rank ? out->shape[out->rank - 1] : 1;
    for (int64_t row = lo / w; row * w < hi; ++row) {
        int64_t base = row * w, e0 = lo > base ? lo - base : 0, e1 = hi < base + w ? hi - base : w;
        float max = -INFINITY, sum = 0.0f;
        for (int64_t e = 0; e < w; ++e)
            max = fmaxf(max, ndref_load_f32(in, base + e));
        for (int64_t e = 0; e < w; ++e)
            sum += expf(ndref_load_f32(in, base + e) - max);
        for (int64_t e = e0; e < e1; ++e)
            ndref_store_f32(out, base + e, expf(ndref_load_f32(in, base + e) - max) / sum);
    }
}
