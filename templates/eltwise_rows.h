/*
 * eltwise_rows.h - arithmetic shared by the templates: walking the rows of an output page, broadcasting
 * coordinates, stepping over a chosen set of axes, and vector math (below). No accessor calls here: those stay in the kernels, where ndgen finds
 * and specializes them. The dims arrays come from nda_dim and nda_page_dim, literals once specialized.
 */
#ifndef ELTWISE_ROWS_H
#define ELTWISE_ROWS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "target.h"

enum { ROWS_MAX_RANK = 8 };

typedef struct rows {
    int r;
    const int64_t *dim, *page;      /* output shape and page box, in elements */
    int64_t origin[ROWS_MAX_RANK];  /* first element of the page */
    int64_t row[ROWS_MAX_RANK];     /* position in the page box; the last entry stays 0 */
} rows;

static inline int64_t rows_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* Starts at the first row of the page at page coordinate pc. */
static inline void rows_begin(rows *w, int r, const int64_t *dim, const int64_t *page, const int64_t *pc)
{
    w->r = r;
    w->dim = dim;
    w->page = page;
    for (int i = 0; i < r; ++i) {
        w->origin[i] = pc[i] * page[i];
        w->row[i] = 0;
    }
}

/* The current row: its first element x, its offset in the page, and its length inside the tensor
 * (0 for a row of padding). */
static inline int64_t rows_get(const rows *w, int64_t *x, int64_t *off)
{
    bool inside = true;
    *off = 0;
    for (int i = 0; i < w->r; ++i) {
        x[i] = w->origin[i] + w->row[i];
        inside = inside && x[i] < w->dim[i];
        *off = *off * w->page[i] + w->row[i];
    }
    return inside ? rows_min(w->page[w->r - 1], w->dim[w->r - 1] - x[w->r - 1]) : 0;
}

/* Moves to the next row; false after the last. */
static inline bool rows_next(rows *w)
{
    int i = w->r - 2;
    while (i >= 0 && ++w->row[i] == w->page[i])
        w->row[i--] = 0;
    return i >= 0;
}

/* The coordinate in an input of rank ri and dims d that broadcasts to output coordinate x (rank r). */
static inline void rows_broadcast(int64_t *xi, const int64_t *x, int r, const int64_t *d, int ri)
{
    for (int i = 0; i < ri; ++i)
        xi[i] = d[i] == 1 ? 0 : x[i + r - ri];
}

/* Advances coordinate y over the axes where pick[i] is set, each in [lo[i], hi[i]), last fastest; axes
 * with pick[i] clear stay put. False after the last combination (y is back at lo on those axes). */
static inline bool rows_odometer(int64_t *y, const bool *pick, const int64_t *lo, const int64_t *hi, int r)
{
    for (int i = r - 1; i >= 0; --i) {
        if (!pick[i])
            continue;
        if (++y[i] < hi[i])
            return true;
        y[i] = lo[i];
    }
    return false;
}

/*
 * Vector math for the templates: with GCC on x86-64 and glibc 2.35 or later, expf, erff, tanhf
 * and logf are declared as glibc's libmvec provides them (__attribute__((simd)): 4, 8 and 16 lanes,
 * _ZGV{b,c,d,e}N*v_*), and as having no side effect (no errno), so loops calling them vectorize without
 * -ffast-math; libm.so already links libmvec, as needed. Elsewhere (Clang, other C libraries) they
 * stay scalar libm calls. libmvec's results differ from libm's by a few ULP (tests/test_vmath.c measures
 * and bounds it), so every element must go through the same code whatever the loop around it: a
 * template applies a vectorized function only in whole blocks of VMATH_BLOCK lanes (padding the last), so
 * the generic and the specialized kernel give the same bits. erf is the templates' own, vmath_erff
 * below, for every compiler: faster than libmvec's and closer to erf. No accessor calls here.
 */

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) &&                   \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define VMATH_LIBMVEC 1
float expf(float) __attribute__((simd("notinbranch"), const, nothrow));
float erff(float) __attribute__((simd("notinbranch"), const, nothrow));
float tanhf(float) __attribute__((simd("notinbranch"), const, nothrow));
float logf(float) __attribute__((simd("notinbranch"), const, nothrow));
#else
#define VMATH_LIBMVEC 0
#endif

enum { VMATH_BLOCK = 16 };

/* Before a block's loop: keeps it a loop for the loop vectorizer. GCC would otherwise unroll it first
 * and leave the 16 lanes to the straight-line vectorizer, which kept them scalar: 16 scalar calls, or,
 * in the streamed stores of ROWS_STORE_RUN, 16 scalar adds and 15 shuffles per 64-byte line (add at
 * 4096x4096 on 64x64 cores, 7.4 against 6.0 ms). Clang's loop vectorizer sees the loop as written. */
#if defined(__GNUC__) && !defined(__clang__)
#define VMATH_KEEP_LOOP _Pragma("GCC unroll 1")
#else
#define VMATH_KEEP_LOOP
#endif

/* On a function applying vector math to a run: with libmvec on an AVX-512 target, 512-bit vectors, so
 * that libmvec's 16-lane variants (_ZGVeN16v_*) run; GCC tunes AVX-512 machines to prefer 256 bits, and
 * the 8-lane variants cost more per element (measured on a Xeon with AVX-512, ns per element: tanhf
 * 1.48 against 0.54, expf 0.69 against 0.39). noinline: a function inlined into the kernel would take
 * the kernel's options instead. Every kernel calls the same function, so their bits still agree. */
#if VMATH_LIBMVEC && defined(__AVX512F__)
#define VMATH_WIDE __attribute__((noinline, target("prefer-vector-width=512")))
#else
#define VMATH_WIDE
#endif

static inline int64_t vmath_min(int64_t a, int64_t b) { return a < b ? a : b; }

/* Before a loop over a polynomial's coefficients: unrolled whole, so that a block's loop around it is
 * one loop the vectorizer takes (GCC 12 unrolled it too late, and kept 16 scalar lanes). */
#define VMATH_UNROLL _Pragma("GCC unroll 16")

/* a * b + c, fused where the target has FMA: one rounding, and the same bits from GCC (which contracts
 * nothing in ISO C) and Clang (which contracts within an expression). Vectorizes as one instruction. */
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define VMATH_MADD(a, b, c) __builtin_fmaf((a), (b), (c))
#else
#define VMATH_MADD(a, b, c) ((a) * (b) + (c))
#endif

/* vmath_erff's two polynomials (tools/vmath_fit.py prints them, and says how they were fitted):
 * erf(x) = x + x S(x^2) for |x| < 1, and 1 - L(|x| - 2.5) for 1 <= |x| < 3.85. */
static const float vmath_erf_s[7] = {
    0x1.06eba8p-3f, -0x1.81273ep-2f, 0x1.ce2d1p-4f, -0x1.b7fabap-6f, 0x1.54127p-8f,
    -0x1.a45088p-11f, 0x1.4a569p-14f};
static const float vmath_erf_l[15] = {
    0x1.aab958p-12f, -0x1.1d81cap-9f, 0x1.64e06ap-8f, -0x1.11a3cp-7f, 0x1.1a9942p-7f,
    -0x1.90a422p-8f, 0x1.6dfb06p-9f, -0x1.21ae72p-11f, -0x1.068ab8p-12f, 0x1.1457dcp-12f,
    -0x1.702ba4p-14f, -0x1.ed872p-17f, 0x1.3410cp-16f, -0x1.0d3bdcp-20f, -0x1.5d16a2p-20f};

/* c ? a : b with both already computed, as a bit blend. Written as `?:`, GCC (under the default
 * -ftrapping-math) sinks each arm's arithmetic into its branch, and then will not if-convert a branch
 * holding an operation that may trap unless the target has masked vector operations: with AVX-512 the
 * loop around vmath_erff vectorized, with AVX2 or SSE it stayed scalar with branches (gelu over 64 MB on
 * an AVX2 EPYC: 82 ms, oneDNN 8.8). The blend leaves no branch to sink into; the vectorizer turns it into
 * a select (tests/test_vectorize.sh). */
static inline __attribute__((always_inline)) float vmath_pick(bool c, float a, float b)
{
    uint32_t ua, ub;
    __builtin_memcpy(&ua, &a, sizeof ua);
    __builtin_memcpy(&ub, &b, sizeof ub);
    const uint32_t m = -(uint32_t)c, r = (ua & m) | (ub & ~m);
    float f;
    __builtin_memcpy(&f, &r, sizeof f);
    return f;
}

/* erf(x) in f32, within 1.07 ULP of erf where the target has FMA and 1.34 without (every float of [0, 5]
 * against erf in double; libm's erff is within 1, libmvec's 16-lane erff 4 ULP from it), tests/test_vmath.c.
 * Both polynomials for every lane and a select, no branch and no table: with AVX-512 a 16-lane block
 * costs 21 FMAs and 8 other operations, 0.29 ns per element on one core of a
 * Xeon VM (libmvec's erff: 0.48), and it vectorizes under Clang too, where erff stays a libm call per
 * element. L is evaluated on erfc, not erf, so its rounding errors are relative to erfc's small values;
 * S holds erf(x)/x - 1, so its constant term's rounding is 8 times smaller than 2/sqrt(pi)'s. Odd by
 * construction (fabsf and copysignf); NaN gives NaN, +-inf gives +-1, -0 gives -0. */
static inline __attribute__((always_inline)) float vmath_erff(float x)
{
    const float a = fabsf(x), u = x * x, t = a - 2.5f;
    float s = vmath_erf_s[6], q = vmath_erf_l[14];
    VMATH_UNROLL
    for (int k = 5; k >= 0; --k)
        s = VMATH_MADD(s, u, vmath_erf_s[k]);
    VMATH_UNROLL
    for (int k = 13; k >= 0; --k)
        q = VMATH_MADD(q, t, vmath_erf_l[k]);
    const float near = VMATH_MADD(x, s, x);
    const float far = copysignf(vmath_pick(a >= 3.85f, 1.0f, 1.0f - q), x); /* NaN: 1 - q(NaN) */
    return vmath_pick(a < 1.0f, near, far);
}

/*
 * Software prefetch, ROWS_PREFETCH_BYTES ahead of a run's reads, once per block of VMATH_BLOCK elements,
 * for the loops whose blocks cost more than their bytes' transfer: vector math (eltwise_unary.c) and
 * folds along a row (VMATH_FOLD: reductions, softmax's max), one dependent step per block. There the
 * hardware's own prefetchers fell behind: on a 2-CPU Xeon VM, gelu over 64 MB (its erf some 30
 * operations per 16 lanes) ran in 11.6 ms, half its samples on the first use of a load, and in 5.4 ms
 * with this; exp, tanh and sigmoid went from 5.4-6.4 to 4.2-4.9 ms; relu stayed within 4%. An add
 * lost 2-5% with it (template_ab, 3 rounds), so the binary and ternary templates do without. 4 KiB
 * and 8 KiB ahead tied. Only while the run goes on that far (rows_prefetch_end): past its end the bytes
 * may be no one's (an add on 64x64 cores, whose runs are 16 KiB rows, lost 8% to prefetches past them).
 * The address is formed as an integer (a prefetch never faults, but a pointer past its array is
 * undefined).
 */
enum { ROWS_PREFETCH_BYTES = 4096 };

static inline void rows_prefetch(const void *p)
{
    __builtin_prefetch((const void *)((uintptr_t)p + ROWS_PREFETCH_BYTES));
}

/* The elements of a run of n, elem bytes each, that still have ROWS_PREFETCH_BYTES of it ahead: those
 * below the index returned (none when the run is shorter). */
static inline int64_t rows_prefetch_end(int64_t n, int64_t elem)
{
    return n - ROWS_PREFETCH_BYTES / elem;
}

/* Folds p[0, n) (elements of the template's NDT_T, loaded by its NDT_LOAD) into VMATH_BLOCK lanes of f32:
 * lane[e % 16] = STEP(lane[e % 16], v) over the whole blocks, the rest into lane 0. The block's loop is
 * kept a loop, which GCC vectorizes (unrolled first, it would keep 16 scalar lanes). STEP may name its
 * arguments more than once: each value is loaded into a variable first. The input is prefetched ahead
 * (rows_prefetch): a max over 4096x4096 rows went from 3.93-4.12 to 3.06-3.11 ms with it. A macro, since
 * NDT_LOAD is each kernel's own. */
#define VMATH_FOLD(lane, p, n, STEP)                                                                       \
    do {                                                                                                    \
        int64_t e_ = 0;                                                                                     \
        const int64_t ahead_ = rows_prefetch_end((n), (int64_t)sizeof((p)[0]));                            \
        for (; e_ + VMATH_BLOCK <= ahead_; e_ += VMATH_BLOCK) {                                             \
            rows_prefetch((p) + e_);                                                                        \
            VMATH_FOLD_BLOCK(lane, p, e_, STEP);                                                            \
        }                                                                                                   \
        for (; e_ + VMATH_BLOCK <= (n); e_ += VMATH_BLOCK)                                                  \
            VMATH_FOLD_BLOCK(lane, p, e_, STEP);                                                            \
        for (; e_ < (n); ++e_) {                                                                            \
            const float v_ = NDT_LOAD((p)[e_]);                                                             \
            (lane)[0] = STEP((lane)[0], v_);                                                                \
        }                                                                                                   \
    } while (0)
#define VMATH_FOLD_BLOCK(lane, p, e, STEP)                                                                 \
    do {                                                                                                    \
        VMATH_KEEP_LOOP                                                                                     \
        for (int k_ = 0; k_ < VMATH_BLOCK; ++k_) {                                                          \
            const float v_ = NDT_LOAD((p)[(e) + k_]);                                                       \
            (lane)[k_] = STEP((lane)[k_], v_);                                                              \
        }                                                                                                   \
    } while (0)

/*
 * Streaming stores. When the bytes a kernel moves once (its operands, read and written once each) are
 * more than half the last-level cache (rows_streaming; a contraction's output alone more than all of
 * it, rows_streaming_output), its output is written with stores that bypass the caches
 * (non-temporal): its lines are not read before they are written (no write-allocate), so a copy moves
 * 2 bytes per byte instead of 3 and the output does not evict the input, as memcpy does past a size.
 * Less may stay in the cache for the next kernel, so it is stored as usual. The output alone was the
 * measure once: an add of three 16 MiB arrays, or a 2048 x 2048 transpose, under a 32 MiB L3 then
 * stored through the caches, a working set the cache could not keep either (docs/bench.md). Values are the
 * same either way: only the stores differ. x86 alone; elsewhere nothing streams. Streamed stores are
 * weakly ordered: the runtime fences each thread after its share of a launch (runtime/src/pool.c), so
 * kernels need no fence of their own.
 */
enum { ROWS_STREAM_ALIGN = ND_VBYTES }; /* the compile target's vector width (target.h) */

/* The most last-level cache per CPU of any current x86 part: AMD's stacked-cache parts, 96 MiB per
 * 8-core complex. A machine's online CPUs cannot hold more than that many times it of their L3. */
enum { ROWS_LLC_PER_CPU = 12 << 20 };

/* The last-level cache's bytes this machine's CPUs can hold: cpu0's L3 as the kernel reports it in
 * sysfs, else as the C library does, else 8 MiB; at most ROWS_LLC_PER_CPU per online CPU. A VM sees its
 * host's whole L3 and the hypervisor says only its own CPUs share it (a 2-CPU Intel Xeon VM here: 480
 * MiB, "shared by 2"), so outputs far larger than its share were stored through the caches: a 64 MB
 * add then ran at 68% of a copy with non-temporal stores, a 3-D permute at 16% (2x behind oneDNN),
 * and even a chain of two copies whose second reads the first's output was faster streamed, from 2 MB
 * up. Read once per process (the C library's figure can be far off under a hypervisor: 320 MiB for a
 * 32 MiB L3 seen here); racing first reads store the same value. */
static inline int64_t rows_llc_bytes(void)
{
    static _Atomic int64_t llc; /* 0: not read yet */
    int64_t v = atomic_load_explicit(&llc, memory_order_relaxed);
    if (v > 0)
        return v;
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    char unit = 0;
    long long n = 0;
    if (f && fscanf(f, "%lld%c", &n, &unit) >= 1)
        v = (int64_t)n * (unit == 'K' ? 1024 : unit == 'M' ? 1 << 20 : 1);
    if (f)
        fclose(f);
    if (v <= 0)
        v = sysconf(_SC_LEVEL3_CACHE_SIZE) > 0 ? (int64_t)sysconf(_SC_LEVEL3_CACHE_SIZE) : (int64_t)8 << 20;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0 && v > (int64_t)cpus * ROWS_LLC_PER_CPU)
        v = (int64_t)cpus * ROWS_LLC_PER_CPU;
    atomic_store_explicit(&llc, v, memory_order_relaxed);
    return v;
}

/* Whether a kernel that moves once_bytes once (every operand of an elementwise op, a permute or softmax)
 * streams its output: past half the last-level cache. A working set the size of the cache does not
 * stay in it (the cache holds more than this kernel's bytes, its replacement is not exact, and a VM
 * shares it): on a Zen 3 VM (32 MiB L3, 24 MiB by ROWS_LLC_PER_CPU) a rank-5 add moving 24 MiB took
 * 0.87-0.95 ms stored through the caches, 0.64-0.72 streamed (its plain loop 0.87-0.94), and 128^3
 * permutes moving 16 MiB 15-20% less (docs/bench.md). */
static inline bool rows_streaming(int64_t once_bytes)
{
#if defined(__SSE2__)
    return once_bytes > rows_llc_bytes() / 2;
#else
    (void)once_bytes;
    return false;
#endif
}

/* Whether a contraction streams its output of out_bytes: past the whole last-level cache. Its inputs
 * are read again from the cache, so only its output is counted; the contractions were measured at this
 * threshold (contract.h) and not at half of it, where a 16 MiB matmul and scores output ran within
 * the rounds' noise either way on that Zen 3 VM. */
static inline bool rows_streaming_output(int64_t out_bytes)
{
#if defined(__SSE2__)
    return out_bytes > rows_llc_bytes();
#else
    (void)out_bytes;
    return false;
#endif
}

/* The bytes of a tensor of the given rank and dims, elements of elem bytes. */
static inline int64_t rows_bytes(int r, const int64_t *dim, int64_t elem)
{
    for (int i = 0; i < r; ++i)
        elem *= dim[i];
    return elem;
}

static inline bool rows_stream_aligned(const void *p)
{
    return ((uintptr_t)p & (ROWS_STREAM_ALIGN - 1)) == 0;
}

/* dst[0, bytes) = src[0, bytes) with non-temporal stores; dst aligned to ROWS_STREAM_ALIGN, bytes a
 * multiple of 16. */
static inline void rows_stream(void *dst, const void *src, int64_t bytes)
{
    /* The stores are written in inline assembly, not with <immintrin.h>: with AVX-512 enabled that
     * header is some 45,000 lines, which every kernel's compile and ndgen's parse of every template
     * would read. The vectors are the compile target's width (ROWS_STREAM_ALIGN), then 16 bytes. */
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
#if defined(__SSE2__)
    typedef long long rows_vw __attribute__((vector_size(ROWS_STREAM_ALIGN)));
    typedef long long rows_v16 __attribute__((vector_size(16)));
    for (; bytes >= ROWS_STREAM_ALIGN; bytes -= ROWS_STREAM_ALIGN, d += ROWS_STREAM_ALIGN, s += ROWS_STREAM_ALIGN) {
        rows_vw v;
        memcpy(&v, s, sizeof v);
#if defined(__AVX__)
        __asm__ volatile("vmovntdq %1, %0" : "=m"(*(rows_vw *)(void *)d) : "x"(v));
#else
        __asm__ volatile("movntdq %1, %0" : "=m"(*(rows_vw *)(void *)d) : "x"(v));
#endif
    }
    for (; bytes >= 16; bytes -= 16, d += 16, s += 16) {
        rows_v16 v;
        memcpy(&v, s, sizeof v);
#if defined(__AVX__)
        __asm__ volatile("vmovntdq %1, %0" : "=m"(*(rows_v16 *)(void *)d) : "x"(v));
#else
        __asm__ volatile("movntdq %1, %0" : "=m"(*(rows_v16 *)(void *)d) : "x"(v));
#endif
    }
#endif
    memcpy(d, s, (size_t)bytes);
}

/* z[i] = AT(i) for i in [0, n), AT a macro of the template's: with stream, the blocks of VMATH_BLOCK whose
 * destination is aligned for it are computed into a buffer and streamed, the rest stored as usual; each
 * element is the same expression either way. A macro, since AT is each template's own. */
#define ROWS_STORE_RUN(z, n, stream, AT)                                                                   \
    do {                                                                                                    \
        int64_t i_ = 0;                                                                                     \
        if (stream) {                                                                                       \
            for (; i_ < (n) && !rows_stream_aligned((z) + i_); ++i_)                                        \
                (z)[i_] = AT(i_);                                                                           \
            for (; i_ + VMATH_BLOCK <= (n); i_ += VMATH_BLOCK) {                                            \
                __typeof__((z)[0]) t_[VMATH_BLOCK];                                                         \
                VMATH_KEEP_LOOP                                                                             \
                for (int k_ = 0; k_ < VMATH_BLOCK; ++k_)                                                    \
                    t_[k_] = AT(i_ + k_);                                                                   \
                rows_stream((z) + i_, t_, (int64_t)sizeof t_);                                              \
            }                                                                                               \
        }                                                                                                   \
        for (; i_ < (n); ++i_)                                                                              \
            (z)[i_] = AT(i_);                                                                               \
    } while (0)

#endif
