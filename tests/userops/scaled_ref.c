/* References for contractions whose spec gives its own conversions (tests/userops/userops.lua), written
 * apart from the templates: out = 2 (a @ b) where STORE doubles, 4 (a @ b) where LOAD doubles both
 * inputs. Sums in double, in order; f32 only. */
#include "nd_accessor.h"

/* out[i, j] = scale * sum_k a[i, k] b[k, j]: a is [M, K], b [K, N], out [M, N]. */
static void matmul_scaled(const nda_ref_args *args, int64_t lo, int64_t hi, double scale)
{
    const float *a = args->operands[0].data, *b = args->operands[1].data;
    float *out = args->operands[2].data;
    const int64_t K = args->operands[0].shape[1], N = args->operands[1].shape[1];
    for (int64_t e = lo; e < hi; ++e) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
            s += (double)a[e / N * K + k] * b[k * N + e % N];
        out[e] = (float)(scale * s);
    }
}

static void ref_matmul_x2(const nda_ref_args *args, int64_t lo, int64_t hi) { matmul_scaled(args, lo, hi, 2); }

/* out[b, h, q, k] = 2 sum_d a[b, h, q, d] c[b, h, k, d]: attention's scores, doubled. */
static void ref_scores_x2(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const float *a = args->operands[0].data, *c = args->operands[1].data;
    float *out = args->operands[2].data;
    const int64_t Q = args->operands[0].shape[2], D = args->operands[0].shape[3], K = args->operands[1].shape[2];
    for (int64_t e = lo; e < hi; ++e) {
        const int64_t bh = e / (Q * K), q = e / K % Q, k = e % K;
        double s = 0;
        for (int64_t d = 0; d < D; ++d)
            s += (double)a[(bh * Q + q) * D + d] * c[(bh * K + k) * D + d];
        out[e] = (float)(2 * s);
    }
}

/* out[i, j] = sum_k a[k, i] b[k, j]: a is [K, M], b [K, N], out [M, N] (einsum.c packing both operands
 * one element at a time: neither has k last). */
static void ref_kt(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const float *a = args->operands[0].data, *b = args->operands[1].data;
    float *out = args->operands[2].data;
    const int64_t K = args->operands[0].shape[0], M = args->operands[0].shape[1], N = args->operands[1].shape[1];
    for (int64_t e = lo; e < hi; ++e) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
            s += (double)a[k * M + e / N] * b[k * N + e % N];
        out[e] = (float)s;
    }
}

/* out[i] = sum_j (2 a[i, j]) (2 x[j]): a matrix-vector product whose LOAD doubles every element read. */
static void ref_matvec_x4(const nda_ref_args *args, int64_t lo, int64_t hi)
{
    const float *a = args->operands[0].data, *x = args->operands[1].data;
    float *out = args->operands[2].data;
    const int64_t J = args->operands[0].shape[1];
    for (int64_t i = lo; i < hi; ++i) {
        double s = 0;
        for (int64_t j = 0; j < J; ++j)
            s += (double)a[i * J + j] * x[j];
        out[i] = (float)(4 * s);
    }
}
