/*
 * einsum.c - the plain reference of two-operand contractions by index notation (matmul ik,kj->ij, bmm,
 * scores, matvec): each output element sums, over every value of the reduced letters, the product of
 * the two inputs, in f32. An f32 ik,kj->ij takes the textbook i-k-j loop over each output row's part.
 */
#include <string.h>

#include "nd_accessor.h"

/* out[i, c0:c1] = sum_k a[i,k] * b[k, c0:c1] */
static void ref_matmul_rows(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const nda_ref_operand *a = &args->operands[0], *b = &args->operands[1], *out = &args->operands[2];
    int64_t k = a->shape[1], cols = out->shape[1];
    for (int64_t i = lo / cols; i * cols < hi; ++i) {
        int64_t c0 = lo > i * cols ? lo - i * cols : 0, c1 = hi < (i + 1) * cols ? hi - i * cols : cols;
        const float *arow = (const float *)a->data + i * k;
        float *o = (float *)out->data + i * cols;
        memset(o + c0, 0, (size_t)(c1 - c0) * sizeof *o);
        for (int64_t kk = 0; kk < k; ++kk) {
            float av = arow[kk];
            const float *brow = (const float *)b->data + kk * cols;
            for (int64_t c = c0; c < c1; ++c)
                o[c] += av * brow[c];
        }
    }
}

static void ref_einsum(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const nda_ref_operand *a = &args->operands[0], *b = &args->operands[1], *out = &args->operands[2];
    if (out->dtype == ND_F32 && strcmp(a->index, "ik") == 0 && strcmp(b->index, "kj") == 0 && strcmp(out->index, "ij") == 0) {
        ref_matmul_rows(args, lo, hi);
        return;
    }
    int64_t size[128] = {0}, val[128] = {0};
    char red[16];
    int nred = 0;
    for (int k = 0; k < 2; ++k)
        for (int i = 0; args->operands[k].index[i]; ++i) {
            unsigned char c = (unsigned char)args->operands[k].index[i];
            size[c] = args->operands[k].shape[i];
            if (!strchr(out->index, c) && !memchr(red, c, (size_t)nred))
                red[nred++] = (char)c;
        }
    int64_t combos = 1;
    for (int k = 0; k < nred; ++k)
        combos *= size[(unsigned char)red[k]];
    for (int64_t o = lo; o < hi; ++o) {
        int64_t rest = o;
        for (int i = (int)strlen(out->index) - 1; i >= 0; --i) {
            unsigned char c = (unsigned char)out->index[i];
            val[c] = rest % size[c];
            rest /= size[c];
        }
        float acc = 0.0f;
        for (int64_t r = 0; r < combos; ++r) {
            int64_t left = r, xa = 0, xb = 0;
            for (int k = nred - 1; k >= 0; --k) {
                val[(unsigned char)red[k]] = left % size[(unsigned char)red[k]];
                left /= size[(unsigned char)red[k]];
            }
            for (int i = 0; a->index[i]; ++i)
                xa = xa * size[(unsigned char)a->index[i]] + val[(unsigned char)a->index[i]];
            for (int i = 0; b->index[i]; ++i)
                xb = xb * size[(unsigned char)b->index[i]] + val[(unsigned char)b->index[i]];
            acc += ndref_load_f32(a, xa) * ndref_load_f32(b, xb);
        }
        ndref_store_f32(out, o, acc);
    }
}
