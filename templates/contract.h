/*
 * contract.h - the arithmetic every contraction template shares (matmul.c, einsum.c): output runs
 * sorted into classes that share panels, block sizes from the caches, and a register-blocked
 * micro-kernel over packed panels. No accessor calls here: reading operands into the packs stays in
 * the templates, where ndgen finds and specializes the calls. Not for templates other than
 * contractions.
 *
 * The product of a class (output rows with the same panel operand and the same columns) is computed
 * in the GotoBLAS way: the rows' operand is packed MC rows at a time over all of k (CT_MR rows per
 * group, k-major), the other operand once per class in panels of CT_NR columns (k-major), and for each
 * KC-long step of k, for each panel of an NC-wide block of columns, every group of rows multiplies
 * that panel into an f32 block of the output. A panel step (KC x CT_NR) stays in L1 while the groups
 * stream through it from L2; the block of output stays in the last-level cache.
 *
 * Results do not depend on the block sizes: each output element is one f32 sum over k in order, with
 * one multiply-add per k, carried exactly between k steps in f32. So the sizes may follow the caches
 * of the machine that runs the kernel, and the generic and specialized kernels still agree bit for bit.
 */
#ifndef CONTRACT_H
#define CONTRACT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* CT_MR x CT_NR accumulators: 8 x 32 floats are 16 512-bit registers (of 32), or 32 256-bit ones. */
enum { CT_MR = 8, CT_NR = 32, CT_MAX_RANK = 8 };

/* 16 floats, loaded and stored through pointers of this type at any float alignment. */
typedef float ct_vec __attribute__((vector_size(64), aligned(4), may_alias));

/* The micro-kernel alone may fuse a multiply and an add: it is the one place products are summed,
 * whatever the kernel variant, and fusing is what the hardware's peak counts. */
#if defined(__GNUC__) && !defined(__clang__)
#define CT_FUSE __attribute__((optimize("fp-contract=fast")))
#else
#define CT_FUSE
#endif

/* Row i of the tile in two vectors: named variables, not an array, so they stay in registers. */
#define CT_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define CT_DECLARE(i) ct_vec c##i##a, c##i##b;
#define CT_LOAD(i)                                                                                      \
    if (add) {                                                                                          \
        c##i##a = *(const ct_vec *)(c + (i) * ldc);                                                     \
        c##i##b = *(const ct_vec *)(c + (i) * ldc + 16);                                                \
    } else {                                                                                            \
        c##i##a = c##i##b = (ct_vec){0};                                                                \
    }
#define CT_STEP(i)                                                                                      \
    {                                                                                                   \
        const float s = ap[k * CT_MR + (i)];                                                            \
        c##i##a += s * b0;                                                                              \
        c##i##b += s * b1;                                                                              \
    }
#define CT_SAVE(i)                                                                                      \
    *(ct_vec *)(c + (i) * ldc) = c##i##a;                                                               \
    *(ct_vec *)(c + (i) * ldc + 16) = c##i##b;

/* c[CT_MR][CT_NR] (row stride ldc) = (add ? c : 0) + ap (k-major, CT_MR a step) times bp (k-major,
 * CT_NR a step), over kc steps of k. */
CT_FUSE static inline void ct_tile(int64_t kc, const float *restrict ap, const float *restrict bp, float *restrict c,
                                   int64_t ldc, int add)
{
    CT_ROWS(CT_DECLARE)
    CT_ROWS(CT_LOAD)
    for (int64_t k = 0; k < kc; ++k) {
        const ct_vec b0 = *(const ct_vec *)(bp + k * CT_NR), b1 = *(const ct_vec *)(bp + k * CT_NR + 16);
        CT_ROWS(CT_STEP)
    }
    CT_ROWS(CT_SAVE)
}

/* ---------------------------------------------------------------- block sizes */

typedef struct ct_blocks {
    int64_t kc; /* steps of k: a panel step, kc x CT_NR floats, fills at most half of L1 */
    int64_t mc; /* rows packed at a time: an mc x kc step of them fills at most half of L2 */
    int64_t nc; /* columns (a multiple of CT_NR) per output block: mc x nc floats, at most a quarter of
                   the last-level cache per core */
} ct_blocks;

static inline int64_t ct_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* A cache size the C library reports, or the fallback when it does not (sysconf gives 0 or -1). */
static inline int64_t ct_cache(int name, int64_t fallback)
{
    long v = sysconf(name);
    return v > 0 ? (int64_t)v : fallback;
}

/* Block sizes for the caches of the machine running the kernel. The fallbacks, for systems that do not
 * say, are the smallest caches of current x86-64 and Arm server cores (32 KiB L1d, 512 KiB L2, 1 MiB
 * of L3 per core), so blocks never outgrow a cache; the clamps keep steps long enough to amortize
 * loading and storing the accumulators (kc >= 64) and blocks small enough to bound the packs. */
static inline ct_blocks ct_blocks_here(void)
{
    int64_t l1 = ct_cache(_SC_LEVEL1_DCACHE_SIZE, 32 << 10), l2 = ct_cache(_SC_LEVEL2_CACHE_SIZE, 512 << 10);
    int64_t cores = ct_cache(_SC_NPROCESSORS_ONLN, 1), l3 = ct_cache(_SC_LEVEL3_CACHE_SIZE, cores << 20);
    ct_blocks b;
    b.kc = ct_clamp(l1 / 2 / (CT_NR * 4) / 16 * 16, 64, 512);
    b.mc = ct_clamp(l2 / 2 / (b.kc * 4) / CT_MR * CT_MR, CT_MR, 1024);
    b.nc = ct_clamp(l3 / cores / 4 / (b.mc * 4) / CT_NR * CT_NR, CT_NR, 8192);
    return b;
}

/* ---------------------------------------------------------------- runs of output */

/* One run of output: a row of one page, columns [c0, c0 + w) at dst, whose first element has output
 * coordinate x. key numbers the run's class: runs of one class share the panel operand's coordinates,
 * so they multiply the same panels. */
typedef struct ct_run {
    int64_t key, c0, w, order;
    int64_t x[CT_MAX_RANK];
    void *dst;
} ct_run;

static int ct_run_cmp(const void *p, const void *q)
{
    const ct_run *a = p, *b = q;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->c0 != b->c0)
        return a->c0 < b->c0 ? -1 : 1;
    if (a->w != b->w)
        return a->w < b->w ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* Runs grouped by class (key, then columns), in page order within a class. */
static inline void ct_sort_runs(ct_run *r, int64_t n)
{
    qsort(r, (size_t)n, sizeof *r, ct_run_cmp);
}

/* The end of the class that starts at run i: the first run after it with another key or columns. */
static inline int64_t ct_class_end(const ct_run *r, int64_t n, int64_t i)
{
    int64_t e = i + 1;
    while (e < n && r[e].key == r[i].key && r[e].c0 == r[i].c0 && r[e].w == r[i].w)
        ++e;
    return e;
}

/* Appends a run to a growing array; false when out of memory (the array stays valid). */
static inline bool ct_push(ct_run **r, int64_t *n, int64_t *cap, const ct_run *run)
{
    if (*n == *cap) {
        int64_t c = *cap ? 2 * *cap : 256;
        ct_run *g = realloc(*r, (size_t)c * sizeof *g);
        if (!g)
            return false;
        *r = g, *cap = c;
    }
    (*r)[*n] = *run;
    (*r)[*n].order = *n;
    ++*n;
    return true;
}

/* ---------------------------------------------------------------- the product */

/* Buffers of one core's contraction: the packs and the block of output, 64-byte aligned. */
typedef struct ct_work {
    ct_blocks bl;
    int64_t K, npanels; /* steps of k; panels of the panel operand that cover the output's columns */
    float *apack;       /* mc rows: group g at apack + g * K * CT_MR */
    float *bpack;       /* panel p at bpack + p * K * CT_NR */
    float *cblock;      /* mc rows of ldc floats */
    int64_t ldc;
    unsigned char *packed; /* per panel: packed for the current class key */
} ct_work;

static inline float *ct_alloc(int64_t floats)
{
    size_t bytes = ((size_t)floats * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

static inline void ct_work_free(ct_work *w)
{
    free(w->apack), free(w->bpack), free(w->cblock), free(w->packed);
}

/* Allocates for K steps of k and N output columns; false when out of memory (nothing held). */
static inline bool ct_work_init(ct_work *w, int64_t K, int64_t N)
{
    w->bl = ct_blocks_here();
    w->K = K;
    w->npanels = (N + CT_NR - 1) / CT_NR;
    w->ldc = w->bl.nc < w->npanels * CT_NR ? w->bl.nc : w->npanels * CT_NR;
    w->apack = ct_alloc(w->bl.mc * K);
    w->bpack = ct_alloc(w->npanels * K * CT_NR);
    w->cblock = ct_alloc(w->bl.mc * w->ldc);
    w->packed = calloc((size_t)w->npanels, 1);
    if (w->apack && w->bpack && w->cblock && w->packed)
        return true;
    ct_work_free(w);
    return false;
}

/* The panels of the class of runs r: [*lo, *hi), those its columns touch. A run's columns lie within
 * the N the panels cover, but a compiler cannot see that once sizes are constants, and would warn
 * about (or assume) an index past the pack; the bound states it. */
static inline void ct_panels(const ct_work *w, const ct_run *r, int64_t *lo, int64_t *hi)
{
    const int64_t end = (r->c0 + r->w + CT_NR - 1) / CT_NR;
    *lo = r->c0 / CT_NR;
    *hi = end < w->npanels ? end : w->npanels;
}

/* cblock = the groups' packed rows (ngroups of CT_MR) times panels [p0, p0 + np) over all of k: for
 * each step of k, each panel (held in L1) meets every group in turn. */
static inline void ct_product(const ct_work *w, int64_t ngroups, int64_t p0, int64_t np)
{
    const int64_t K = w->K, kc = w->bl.kc;
    if (K == 0) /* an empty sum (a Partial output's empty part): zero */
        memset(w->cblock, 0, (size_t)(ngroups * CT_MR * w->ldc) * sizeof(float));
    for (int64_t k0 = 0; k0 < K; k0 += kc) {
        const int64_t n = K - k0 < kc ? K - k0 : kc;
        for (int64_t p = 0; p < np; ++p) {
            const float *bp = w->bpack + (p0 + p) * K * CT_NR + k0 * CT_NR;
            for (int64_t g = 0; g < ngroups; ++g)
                ct_tile(n, w->apack + g * K * CT_MR + k0 * CT_MR, bp, w->cblock + g * CT_MR * w->ldc + p * CT_NR,
                        w->ldc, k0 > 0);
        }
    }
}

/* Stores the block into the runs (nrows of them from r): their columns that fall within the block's
 * [col, col + ncols), converted by NDT_STORE into the template's NDT_T. A macro, so that the
 * template's types apply. */
#define CT_STORE_RUNS(wk, r, nrows, col, ncols)                                                          \
    for (int64_t ct_i = 0; ct_i < (nrows); ++ct_i) {                                                     \
        const ct_run *ct_r = (r) + ct_i;                                                                \
        const float *ct_c = (wk)->cblock + ct_i * (wk)->ldc;                                              \
        const int64_t ct_lo = ct_r->c0 > (col) ? ct_r->c0 : (col);                                      \
        const int64_t ct_hi = ct_r->c0 + ct_r->w < (col) + (ncols) ? ct_r->c0 + ct_r->w : (col) + (ncols); \
        NDT_T *ct_d = (NDT_T *)ct_r->dst;                                                               \
        for (int64_t ct_j = ct_lo; ct_j < ct_hi; ++ct_j)                                                \
            ct_d[ct_j - ct_r->c0] = NDT_STORE(ct_c[ct_j - (col)]);                                      \
    }

/* Multiplies the packed rows of runs r (nrows of them) by the class's packed panels, and stores the
 * result into the runs, an NC-wide block of columns at a time. */
#define CT_MULTIPLY_STORE(wk, r, nrows)                                                                  \
    {                                                                                                   \
        int64_t ct_lo, ct_hi;                                                                           \
        ct_panels((wk), (r), &ct_lo, &ct_hi);                                                            \
        for (int64_t ct_p = ct_lo; ct_p < ct_hi; ct_p += (wk)->ldc / CT_NR) {                            \
            const int64_t ct_np = ct_hi - ct_p < (wk)->ldc / CT_NR ? ct_hi - ct_p : (wk)->ldc / CT_NR;    \
            ct_product((wk), ((nrows) + CT_MR - 1) / CT_MR, ct_p, ct_np);                                \
            CT_STORE_RUNS((wk), (r), (nrows), ct_p * CT_NR, ct_np * CT_NR)                               \
        }                                                                                               \
    }

#endif
