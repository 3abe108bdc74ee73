/*
 * test_vmath.c - the error of the vector math the templates use (templates/eltwise_rows.h: glibc's libmvec
 * where GCC and glibc provide it) against scalar libm, in ULP of libm's result, over a sweep of every
 * 61st float in [-30, 30] plus special values (zeros, infinities, NaN, subnormals, the overflow
 * edges). Compiled with the kernels' flags and the templates' VMATH_WIDE, so the loops vectorize as the
 * kernels' do and call the same libmvec variants. Measured on glibc 2.36, x86-64: AVX2 (8-lane)
 * variants expf 3, erff 2, tanhf 2, logf 4 ULP from libm; AVX-512 (16-lane) variants expf 3, erff 4,
 * tanhf 3, logf 4 ULP. The bounds held are expf, erff and tanhf 4 ULP and logf 5 ULP. Results must be NaN exactly where libm's are, and
 * the same infinity where libm's is one. And the templates' streaming copy, rows_stream, against memcpy.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eltwise_rows.h"
#include "testutil.h"

static int64_t passed;

/* The distance in ULP between a and b (finite, or equal). */
static double ulps(float got, float want)
{
    if (got == want || (isnan(got) && isnan(want)))
        return 0;
    if (isnan(got) || isnan(want) || isinf(got) || isinf(want))
        return INFINITY;
    double u = want == 0 ? ldexp(1.0, -149) : fmax(ldexp(1.0, ilogbf(want) - 23), ldexp(1.0, -149));
    return fabs((double)got - (double)want) / u;
}

/* Vectorized loops over a block, as the templates' blocks are (VMATH_WIDE, VMATH_KEEP_LOOP, 16 lanes). */
#define VLOOP(name, fn)                                                                                   \
    static VMATH_WIDE void name(float *restrict y, const float *restrict x, size_t n)                   \
    {                                                                                                     \
        for (size_t e = 0; e < n; e += VMATH_BLOCK) {                                                     \
            VMATH_KEEP_LOOP                                                                               \
            for (int k = 0; k < VMATH_BLOCK; ++k)                                                         \
                y[e + k] = fn(x[e + k]);                                                                  \
        }                                                                                                 \
    }
VLOOP(v_exp, expf)
VLOOP(v_erf, erff)
VLOOP(v_tanh, tanhf)
VLOOP(v_log, logf)
VLOOP(v_erf_own, vmath_erff)

/* One element at a time, never vectorized (noinline, called per element): the bits a kernel's scalar
 * code would give, which must be the vector loop's. */
static __attribute__((noinline)) float erf_one(float x)
{
    return vmath_erff(x);
}

typedef float scalar_fn(float);
typedef void vector_fn(float *restrict, const float *restrict, size_t);

static void check(const char *name, vector_fn *vf, scalar_fn *volatile sf, double bound)
{
    enum { SPECIAL = 16 };
    size_t n = 0, cap = 1 << 20;
    float *x = malloc((cap + 64) * sizeof *x), *y = malloc((cap + 64) * sizeof *y);
    static const float special[SPECIAL] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1e-38f,
                                           88.72f, 88.73f, -103.9f, -87.3f, 1.0f, -1.0f, 0.5f, 1e30f};
    double worst = 0;
    float worst_x = 0;
    uint32_t lo, hi;
    float a = -30.0f, b = 30.0f;
    memcpy(&lo, &a, 4);
    memcpy(&hi, &b, 4);
    /* negative floats run down from 0x80000000, positive up from 0: sweep both halves */
    for (int half = 0; half < 2; ++half) {
        uint32_t first = half ? 0x00000000u : 0x80000000u, last = half ? hi : lo;
        for (uint32_t u = first;; u += 61) {
            float f;
            memcpy(&f, &u, 4);
            x[n++] = f;
            bool end = u > last - 61 || u + 61 < u;
            if (n == cap || end) {
                if (half == 1 && end)
                    for (int i = 0; i < SPECIAL; ++i)
                        x[n++] = special[i];
                while (n % VMATH_BLOCK)
                    x[n++] = 1.0f;
                vf(y, x, n);
                for (size_t i = 0; i < n; ++i) {
                    double d = ulps(y[i], sf(x[i]));
                    if (d > worst) {
                        worst = d;
                        worst_x = x[i];
                    }
                }
                n = 0;
            }
            if (end)
                break;
        }
    }
    printf("%-6s max error %.3g ULP (at %a), bound %g ULP, libmvec %s\n", name, worst, (double)worst_x, bound,
           VMATH_LIBMVEC ? "on" : "off (scalar libm)");
    CHECK(worst <= bound, "%s: %g ULP at %a, past the stated %g", name, worst, (double)worst_x, bound);
    ++passed;
    free(x);
    free(y);
}

/* The error of f against the exact value want, in ULP of want's binade (f32; subnormal spacing below). */
static double ulps_exact(float got, double want)
{
    if (isnan(got) || isinf(got))
        return INFINITY;
    int e;
    frexp(want, &e); /* want in [2^(e-1), 2^e) */
    return fabs((double)got - want) / fmax(ldexp(1.0, e - 24), ldexp(1.0, -149));
}

/* vmath_erff (the templates' own erf, eltwise_rows.h) against erf in double, whose error (under 1 ULP of
 * double) is nothing at f32's scale: every 61st float of [0, 4.5] (where erf is not yet 1 in f32), every
 * float within 2^16 of the pieces' edges (1 and 3.85) and of 0.5, where the result's binade changes. Then
 * oddness, the vector loop against one element at a time, bit for bit (the generic and specialized
 * kernels must agree whatever their loops), and the special values. */
static void check_own_erf(double bound)
{
    enum { BATCH = 1 << 16 };
    static float x[BATCH], y[BATCH];
    double worst = 0;
    float worst_x = 0;
    int64_t n_checked = 0;
    const float edges[] = {1.0f, 3.85f, 0.5f};
    for (int pass = 0; pass < 1 + (int)(sizeof edges / sizeof *edges); ++pass) {
        uint32_t first, last, step;
        if (pass == 0) {
            float hi = 4.5f;
            first = 0, step = 61;
            memcpy(&last, &hi, 4);
        } else {
            memcpy(&first, &edges[pass - 1], 4);
            first -= 1u << 16, last = first + (2u << 16), step = 1;
        }
        for (uint32_t u = first; u <= last;) {
            size_t n = 0;
            for (; n < BATCH && u <= last; u += step, ++n)
                memcpy(&x[n], &u, 4);
            for (size_t i = n; i % VMATH_BLOCK; ++i)
                x[i] = 0.0f;
            v_erf_own(y, x, (n + VMATH_BLOCK - 1) / VMATH_BLOCK * VMATH_BLOCK);
            for (size_t i = 0; i < n; ++i) {
                double d = ulps_exact(y[i], erf((double)x[i]));
                if (d > worst)
                    worst = d, worst_x = x[i];
                float one = erf_one(x[i]), neg = erf_one(-x[i]);
                CHECK(memcmp(&one, &y[i], 4) == 0, "vmath_erff(%a): %a in a vector loop, %a alone", (double)x[i],
                      (double)y[i], (double)one);
                CHECK(neg == -one, "vmath_erff(-%a) = %a, not -%a", (double)x[i], (double)neg, (double)one);
            }
            n_checked += (int64_t)n;
        }
    }
    printf("vmath_erff: max error %.3g ULP of erf (at %a) over %lld floats, bound %g ULP\n", worst, (double)worst_x,
           (long long)n_checked, bound);
    CHECK(worst <= bound, "vmath_erff: %g ULP at %a, past the stated %g", worst, (double)worst_x, bound);
    float nan = erf_one(NAN), mz = erf_one(-0.0f);
    CHECK(isnan(nan) && erf_one(INFINITY) == 1.0f && erf_one(-INFINITY) == -1.0f && erf_one(1e30f) == 1.0f,
          "vmath_erff: NaN gives %a, +-inf %a %a", (double)nan, (double)erf_one(INFINITY),
          (double)erf_one(-INFINITY));
    CHECK(mz == 0.0f && signbit(mz) && erf_one(0x1p-149f) == 0x1p-149f, "vmath_erff: -0 gives %a, the least "
          "subnormal %a", (double)mz, (double)erf_one(0x1p-149f));
    passed += 2;
}

/* rows_stream (the non-temporal copy the templates use for outputs larger than the LLC) against memcpy:
 * destinations aligned to ROWS_STREAM_ALIGN (its contract), a misaligned source, and every multiple of
 * 16 bytes up to a few blocks of the widest vector, so each width's loop and the tail run; guard bytes
 * around the destination must stay as they were. */
static void check_stream(void)
{
    enum { N = 4 * 64 + 48, PAD = 64 };
    static _Alignas(64) uint8_t src[N + PAD], want[N + 3 * PAD], got[N + 3 * PAD];
    for (int i = 0; i < N + PAD; ++i)
        src[i] = (uint8_t)(i * 37 + 11);
    for (int off = 0; off <= ROWS_STREAM_ALIGN; off += ROWS_STREAM_ALIGN)
        for (int len = 0; len <= N; len += 16) {
            memset(want, 0xA5, sizeof want);
            memset(got, 0xA5, sizeof got);
            memcpy(want + PAD + off, src + 3, (size_t)len);
            rows_stream(got + PAD + off, src + 3, len);
            CHECK(memcmp(want, got, sizeof got) == 0, "rows_stream: offset %d, %d bytes differ from memcpy", off,
                  len);
            passed++;
        }
}

int main(void)
{
    check_stream();
    check("expf", v_exp, expf, 4);
    check("erff", v_erf, erff, 4);
    check("tanhf", v_tanh, tanhf, 4);
    check("logf", v_log, logf, 5);
    check("vmath_erff", v_erf_own, erff, 3);
    check_own_erf(1.5);
    return test_finish(passed);
}
