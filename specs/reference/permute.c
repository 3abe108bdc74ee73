/*
 * permute.c - the plain reference of permute: out[x] = in[y] with y[perm[i]] = x[i], perm the launch's
 * scalars. Walks the output in order, stepping the source offset by strides.
 */
#include <string.h>

#include "nd_accessor.h"

static void ref_permute(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const nda_ref_operand *in = &args->operands[0], *out = &args->operands[1];
    const int r = out->rank;
    size_t eb = (size_t)nd_dtype_size((nd_dtype)out->dtype);
    int64_t instride[ND_MAX_RANK], step[ND_MAX_RANK], x[ND_MAX_RANK], src = 0, rest = lo;
    for (int i = in->rank - 1, s = 1; i >= 0; --i) {
        instride[i] = s;
        s *= (int)in->shape[i];
    }
    for (int i = r - 1; i >= 0; --i) { /* the range's first element, once */
        step[i] = instride[(int)args->scalars[i]];
        x[i] = rest % out->shape[i];
        rest /= out->shape[i];
        src += x[i] * step[i];
    }
    uint8_t *dst = (uint8_t *)out->data + (size_t)lo * eb;
    const uint8_t *from = in->data;
    for (int64_t e = lo; e < hi; ++e, dst += eb) {
        memcpy(dst, from + (size_t)src * eb, eb);
        for (int i = r - 1; i >= 0; --i) { /* the next output coordinate */
            src += step[i];
            if (++x[i] < out->shape[i])
                break;
            src -= step[i] * out->shape[i];
            x[i] = 0;
        }
    }
}
