/*
 * contract.h - the arithmetic every contraction template shares (matmul.c, einsum.c): output runs
 * sorted into classes that share panels, block sizes from the caches, and a register-blocked
 * micro-kernel over packed panels. No accessor calls here: reading operands into the packs stays in
 * the templates, where ndgen finds and specializes the calls. Not for templates other than
 * contractions.
 *
 * The product of a class (output rows with the same panel operand whose columns touch the same panels)
 * is computed in the GotoBLAS way: for each block of NC columns and each step of KC along k, the panel operand's
 * block (KC x NC, in panels of CT_NR columns, k-major) is packed once and stays in L2 while every
 * row of the class passes, MC rows at a time (packed row-major, KC long, so packing copies runs);
 * each panel (KC x CT_NR, in L1) meets every group of CT_MR rows in turn, adding into f32
 * accumulators for the class's rows, stored into the output once k is done. At the last step of k, an
 * f32 output's panels that lie within every run of the class are stored by the tile itself, straight
 * from its registers (ct_product), and only the rest go through the accumulators.
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

#include "eltwise_rows.h"
#include "target.h"

/* CT_VL floats a vector, the compile target's width (target.h); a tile row is two vectors.
 * Accumulators: 8 x 2 where the target has 32 vector registers, 6 x 2 where it has 16 (the BLIS Haswell
 * shape: 12 accumulators, two panel vectors, one broadcast). */
enum { CT_VL = ND_VBYTES / 4, CT_NR = 2 * CT_VL, CT_MR = ND_VREGS >= 32 ? 8 : 6 };

/* Whether the template's stored elements (NDT_T, defined before this is used) are the f32 values the
 * products take: a row may then be read in place, and the tile may store into the output. */
#define CT_IN_PLACE _Generic((NDT_T)0, float: 1, default: 0)

/* CT_VL floats, loaded and stored through pointers of this type at any float alignment; never passed
 * by value (target.h). */
typedef float ct_vec __attribute__((vector_size(ND_VBYTES), aligned(4), may_alias));

/* The micro-kernel alone may fuse a multiply and an add: it is the one place products are summed,
 * whatever the kernel variant, and fusing is what the hardware's peak counts. */
#if defined(__GNUC__) && !defined(__clang__)
#define CT_FUSE __attribute__((optimize("fp-contract=fast")))
#else
#define CT_FUSE
#endif

/* Row i of the tile in two vectors: named variables, not an array, so they stay in registers. CT_ROWS
 * names the most rows any target takes; rows from CT_MR on are constant-false branches, folded away
 * (ndgen reads this header once per generated file, so it may not test target.h's macros in #if). */
#define CT_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define CT_DECLARE(i)                                                                                   \
    ct_vec c##i##a, c##i##b;                                                                            \
    const float *restrict a##i = ap + (i) * lda;
#define CT_LOAD(i)                                                                                      \
    if ((i) >= CT_MR) {                                                                                 \
    } else if (add) {                                                                                   \
        c##i##a = *(const ct_vec *)(cin + (i) * ldc);                                                   \
        c##i##b = *(const ct_vec *)(cin + (i) * ldc + CT_VL);                                           \
    } else {                                                                                            \
        c##i##a = c##i##b = (ct_vec){0};                                                                \
    }
#define CT_STEP(i)                                                                                      \
    if ((i) < CT_MR) {                                                                                  \
        const float s = a##i[k];                                                                        \
        c##i##a += s * b0;                                                                              \
        c##i##b += s * b1;                                                                              \
    }
#define CT_SAVE(i)                                                                                      \
    if ((i) >= CT_MR) {                                                                                 \
    } else if (stream && rows_stream_aligned(cout[i])) {                                                \
        const ct_vec t##i[2] = {c##i##a, c##i##b}; /* a copy: the accumulators' address is never taken */ \
        rows_stream(cout[i], t##i, (int64_t)sizeof t##i);                                               \
    } else {                                                                                            \
        *(ct_vec *)cout[i] = c##i##a;                                                                   \
        *(ct_vec *)(cout[i] + CT_VL) = c##i##b;                                                         \
    }

/* Row i of the tile, CT_NR floats at cout[i], = (add ? cin[i * ldc ..] : 0) + row i of ap (CT_MR rows,
 * row stride lda) times bp (k-major, CT_NR a step), over kc steps of k. Every load of cin comes before
 * the first store, so cout may be cin's rows (accumulators kept between steps of k) or anywhere else
 * (the output's own rows, ct_product); with stream, rows aligned for it are stored non-temporally. */
CT_FUSE static inline void ct_tile(int64_t kc, const float *ap, int64_t lda, const float *restrict bp, const float *cin,
                                   int64_t ldc, float *const *cout, int add, int stream)
{
    CT_ROWS(CT_DECLARE)
    CT_ROWS(CT_LOAD)
    for (int64_t k = 0; k < kc; ++k) {
        const ct_vec b0 = *(const ct_vec *)(bp + k * CT_NR), b1 = *(const ct_vec *)(bp + k * CT_NR + CT_VL);
        CT_ROWS(CT_STEP)
    }
    CT_ROWS(CT_SAVE)
}

/* A class of one row (a matrix-vector product) would waste CT_MR - 1 of the tile's rows. Instead each
 * lane j of its panel operand is a row of kc floats at lane_rows[j] (read in place where the operand holds
 * its k contiguously, else packed as a row) and c[j] = (add ? c[j] : 0) + the sum over kc steps of
 * r[k] lane_rows[j][k], for the n lanes. Each lane sums in CT_DOT_LANES (16) partial sums (k mod 16),
 * held in CT_DOT_NV vectors whatever the target's width, folded in a fixed order, then the tail in
 * order: so the result is the same bits on every target. The rounding differs from ct_tile's sequential
 * sum (bound (kc/16 + 16) eps sum|r lane_rows[j]| against kc eps sum|r lane_rows[j]|), but the path is
 * chosen from the output's runs alone, so the generic and specialized kernels take the same one. CT_MR
 * lanes at a time keep independent chains, and as many memory streams, in flight. */
enum { CT_DOT_LANES = 16, CT_DOT_NV = CT_DOT_LANES / CT_VL };
_Static_assert(CT_DOT_LANES % CT_VL == 0, "a dot product's 16 partial sums fill whole vectors");

/* A lane's sum: its 16 partial sums acc[] (over k < k0) folded in lane order, then steps [k0, kc) in order. */
CT_FUSE static inline float ct_dot_end(const ct_vec *acc, int64_t k0, int64_t kc, const float *r, const float *p)
{
    float t = 0.0f;
    for (int l = 0; l < CT_DOT_LANES; ++l)
        t += acc[l / CT_VL][l % CT_VL];
    for (int64_t k = k0; k < kc; ++k)
        t += r[k] * p[k];
    return t;
}

CT_FUSE static inline float ct_dot(int64_t kc, const float *restrict r, const float *restrict p)
{
    ct_vec acc[CT_DOT_NV] = {{0}};
    int64_t k = 0;
    for (; k + CT_DOT_LANES <= kc; k += CT_DOT_LANES)
        for (int v = 0; v < CT_DOT_NV; ++v)
            acc[v] += *(const ct_vec *)(r + k + v * CT_VL) * *(const ct_vec *)(p + k + v * CT_VL);
    return ct_dot_end(acc, k, kc, r, p);
}

CT_FUSE static inline void ct_dots(int64_t kc, const float *restrict r, const float *const *lane_rows, float *restrict c,
                                   int64_t n, int add)
{
    int64_t j = 0;
    for (; j + CT_MR <= n; j += CT_MR) {
        ct_vec acc[CT_MR][CT_DOT_NV] = {{{0}}};
        int64_t k = 0;
        for (; k + CT_DOT_LANES <= kc; k += CT_DOT_LANES)
            for (int v = 0; v < CT_DOT_NV; ++v) {
                const ct_vec rv = *(const ct_vec *)(r + k + v * CT_VL);
                for (int i = 0; i < CT_MR; ++i)
                    acc[i][v] += rv * *(const ct_vec *)(lane_rows[j + i] + k + v * CT_VL);
            }
        for (int i = 0; i < CT_MR; ++i)
            c[j + i] = (add ? c[j + i] : 0.0f) + ct_dot_end(acc[i], k, kc, r, lane_rows[j + i]);
    }
    for (; j < n; ++j)
        c[j] = (add ? c[j] : 0.0f) + ct_dot(kc, r, lane_rows[j]);
}

/* ---------------------------------------------------------------- block sizes */

typedef struct ct_blocks {
    int64_t kc; /* steps of k: at most 256, and a panel step, kc x CT_NR floats, at most L1 */
    int64_t mc; /* rows packed at a time: mc x kc floats, at most a quarter of L2 */
    int64_t nc; /* columns (a multiple of CT_NR) per block: kc x nc floats, at most half of L2 */
} ct_blocks;

static inline int64_t ct_round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
static inline int64_t ct_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* A cache size the C library reports, or the fallback when it does not (sysconf gives 0 or -1). */
static inline int64_t ct_cache(int name, int64_t fallback)
{
    long v = sysconf(name);
    return v > 0 ? (int64_t)v : fallback;
}

/* Block sizes for the caches of the machine running the kernel. The fallbacks, for systems that do not
 * say, are the smallest caches of current x86-64 and Arm server cores (32 KiB L1d, 512 KiB L2), so
 * blocks never outgrow a cache; the clamps keep steps long enough to amortize loading and storing the
 * accumulators (kc >= 64) and blocks small enough to bound the packs. */
static inline ct_blocks ct_blocks_here(void)
{
    int64_t l1 = ct_cache(_SC_LEVEL1_DCACHE_SIZE, 32 << 10), l2 = ct_cache(_SC_LEVEL2_CACHE_SIZE, 512 << 10);
    ct_blocks b;
    /* 256 steps of k, or fewer when a panel step of them would not fit L1: 256 with AVX-512 and 32 KiB of
     * L1 (a whole L1 of panel) rather than 128 (half of it) took bmm 8x512x512x512 from 1.06-1.10 to
     * 1.03-1.05 times oneDNN's time in the same runs (bench/template_ab.sh -r 5 HEAD bmm, Zen 4), its
     * accumulators loaded and stored half as often; matmul 2048 and scores did not move. With AVX2 the
     * panel is half as wide and 256 was already the step: 512 (a whole L1) was slower, 1.13-1.23 against
     * 1.08-1.14. */
    b.kc = ct_clamp(l1 / (CT_NR * 4) / 16 * 16, 64, 256);
    b.mc = ct_clamp(l2 / 4 / (b.kc * 4) / CT_MR * CT_MR, CT_MR, 1024 / CT_MR * CT_MR); /* whole groups of rows */
    b.nc = ct_clamp(l2 / 2 / (b.kc * 4) / CT_NR * CT_NR, CT_NR, 8192);
    return b;
}

/* Blocks for a core whose classes all have one row (ct_dots): a whole panel-operand row is one step
 * of k (up to 16384), so packing streams rows of the operand rather than kc-long pieces of as many
 * rows; a block of columns keeps its packed rows within half of L2 (at least one panel). */
static inline ct_blocks ct_blocks_rows(int64_t K)
{
    ct_blocks b = ct_blocks_here();
    b.kc = ct_clamp(K, 64, 16384);
    b.mc = CT_MR;
    b.nc = ct_clamp(ct_cache(_SC_LEVEL2_CACHE_SIZE, 512 << 10) / 2 / (b.kc * 4) / CT_NR * CT_NR, CT_NR, 8192);
    return b;
}

/* ---------------------------------------------------------------- runs of output */

/* One run of output: a row of one page, columns [c0, c0 + w) at dst, whose first element has output
 * coordinate x. key numbers the run's class: runs of one class share the panel operand's coordinates,
 * so they multiply the same panels. */
typedef struct ct_run {
    int64_t key, c0, w, order;
    int64_t x[ROWS_MAX_RANK];
    void *dst;
} ct_run;

/* The panels a run's columns touch: the first, and one past the last. */
static inline int64_t ct_panel0(const ct_run *r) { return r->c0 / CT_NR; }
static inline int64_t ct_panel1(const ct_run *r) { return (r->c0 + r->w + CT_NR - 1) / CT_NR; }

/* A class is the runs of one key whose columns touch the same panels: every row of a class is computed
 * over the whole of those panels anyway, so runs that split a panel's columns between them (narrow output
 * pages) share one packing of it instead of packing it once each, which grew with the columns squared. */
static int ct_run_cmp(const void *p, const void *q)
{
    const ct_run *a = p, *b = q;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (ct_panel0(a) != ct_panel0(b))
        return ct_panel0(a) < ct_panel0(b) ? -1 : 1;
    if (ct_panel1(a) != ct_panel1(b))
        return ct_panel1(a) < ct_panel1(b) ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* Runs grouped by class (key, then panels), in page order within a class. */
static inline void ct_sort_runs(ct_run *r, int64_t n)
{
    qsort(r, (size_t)n, sizeof *r, ct_run_cmp);
}

/* The end of the class that starts at run i: the first run after it with another key or panels. */
static inline int64_t ct_class_end(const ct_run *r, int64_t n, int64_t i)
{
    int64_t e = i + 1;
    while (e < n && r[e].key == r[i].key && ct_panel0(&r[e]) == ct_panel0(&r[i]) &&
           ct_panel1(&r[e]) == ct_panel1(&r[i]))
        ++e;
    return e;
}

static inline bool ct_one_row_classes(const ct_run *r, int64_t n)
{
    for (int64_t i = 0; i < n; i = ct_class_end(r, n, i))
        if (ct_class_end(r, n, i) != i + 1)
            return false;
    return true;
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

/* ---------------------------------------------------------------- runs read, kept */

/* The run an accessor call gave for one line of an operand (a row of the panel operand, or a run's row
 * of the rows' operand): positions [at, at + n) along the line, the first at p; n is 0 before any call.
 * A later block that reads inside it takes it from here instead of looking it up again, so a line lying
 * in one page is looked up once per core, not once per panel and step of k. */
typedef struct ct_seg {
    const void *p;
    int64_t at, n;
} ct_seg;

static inline bool ct_seg_holds(const ct_seg *g, int64_t at) { return at >= g->at && at < g->at + g->n; }

/* ---------------------------------------------------------------- the product */

/* Buffers of one core's contraction: the packs and the output's f32 accumulators, 64-byte aligned. */
typedef struct ct_work {
    ct_blocks bl;
    int64_t K, npanels; /* steps of k; panels that cover the output's columns */
    int64_t ncp;        /* panels per block of columns */
    float *apack;       /* mc rows of kc floats, row-major: a block of the rows' operand */
    float *bpack;       /* ncp panels of kc x CT_NR floats, k-major: a block of the panel operand */
    float *cblock;      /* a class's rows, ldc floats apart */
    int64_t ldc;        /* ncp * CT_NR, and one line more when that is a multiple of 1 KiB: rows 4 KiB apart
                           fall in the same cache sets, and a tile's 8 rows would evict each other */
    const float **lane_rows; /* classes of one row (ct_dots): each lane's row of the panel operand */
    bool direct;             /* the last step of k stores whole panels straight into the output (ct_product) */
    bool stream;             /* the output is stored non-temporally (rows_streaming, eltwise_rows.h) */
} ct_work;

static inline float *ct_alloc(int64_t floats)
{
    size_t bytes = ((size_t)floats * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

static inline void ct_work_free(ct_work *w)
{
    free(w->apack), free(w->bpack), free(w->cblock), free(w->lane_rows);
}

/* Allocates for blocks bl, K steps of k, N output columns and classes of at most nrows runs; false
 * when out of memory (nothing held). direct: the output holds f32 (CT_IN_PLACE), so the last step of k
 * may store into it (ct_product); stream: as the output is stored (rows_streaming). */
static inline bool ct_work_init(ct_work *w, ct_blocks bl, int64_t K, int64_t N, int64_t nrows, bool direct, bool stream)
{
    w->bl = bl;
    w->direct = direct;
    w->stream = stream;
    w->K = K;
    w->npanels = (N + CT_NR - 1) / CT_NR;
    w->ncp = w->bl.nc / CT_NR < w->npanels ? w->bl.nc / CT_NR : w->npanels;
    w->apack = ct_alloc(w->bl.mc * w->bl.kc);
    w->bpack = ct_alloc(w->ncp * w->bl.kc * CT_NR);
    w->ldc = w->ncp * CT_NR + (w->ncp * CT_NR % 256 == 0 ? 16 : 0);
    w->cblock = ct_alloc(ct_round_up(nrows, CT_MR) * w->ldc);
    w->lane_rows = malloc((size_t)(w->ncp * CT_NR) * sizeof *w->lane_rows);
    if (w->apack && w->bpack && w->cblock && w->lane_rows)
        return true;
    ct_work_free(w);
    return false;
}

/*
 * One step of the product, in the order the loops take them: for each class of runs [i, e), for each
 * block of panels [jc, jc + np) among those its columns touch, for each step of k [pc, pc + kn), for
 * each block of its rows [ic, ic + mr): the template packs the panel block when ic is 0 (once per
 * step of k, for all the class's rows) and the rows, then calls ct_product, and stores the class's
 * columns of the block after its last step (ct_stored).
 */
typedef struct ct_step {
    int64_t i, e, p1;   /* the class, and the end of its panels */
    int64_t d0, d1;     /* the panels [d0, d1) that lie within every run of the class (ct_product) */
    int64_t jc, np, pc, kn, ic, mr;
} ct_step;

/* The panels the class's columns touch start at jc and end at p1. A run's columns lie within the N
 * the panels cover, but a compiler cannot see that once sizes are constants, and would warn about (or
 * assume) an index past the pack; the bound states it. */
static inline void ct_class(const ct_work *w, const ct_run *r, int64_t n, ct_step *s)
{
    const int64_t end = ct_panel1(&r[s->i]);
    int64_t lo = r[s->i].c0, hi = r[s->i].c0 + r[s->i].w; /* the columns every run of the class holds */
    s->e = ct_class_end(r, n, s->i);
    for (int64_t t = s->i + 1; t < s->e; ++t) {
        lo = r[t].c0 > lo ? r[t].c0 : lo;
        hi = r[t].c0 + r[t].w < hi ? r[t].c0 + r[t].w : hi;
    }
    s->d0 = (lo + CT_NR - 1) / CT_NR;
    s->d1 = hi / CT_NR > s->d0 ? hi / CT_NR : s->d0;
    s->jc = ct_panel0(&r[s->i]);
    s->p1 = end < w->npanels ? end : w->npanels;
    s->np = s->p1 - s->jc < w->ncp ? s->p1 - s->jc : w->ncp;
    s->pc = s->ic = 0;
    s->kn = w->K < w->bl.kc ? w->K : w->bl.kc;
    s->mr = s->e - s->i < w->bl.mc ? s->e - s->i : w->bl.mc;
}

static inline ct_step ct_first(const ct_work *w, const ct_run *r, int64_t n)
{
    ct_step s = {.i = 0};
    if (n > 0)
        ct_class(w, r, n, &s);
    return s;
}

static inline void ct_next(const ct_work *w, const ct_run *r, int64_t n, ct_step *s)
{
    const int64_t nrows = s->e - s->i;
    if ((s->ic += s->mr) < nrows) {
        s->mr = nrows - s->ic < w->bl.mc ? nrows - s->ic : w->bl.mc;
        return;
    }
    s->ic = 0;
    s->mr = nrows < w->bl.mc ? nrows : w->bl.mc;
    if ((s->pc += s->kn) < w->K) {
        s->kn = w->K - s->pc < w->bl.kc ? w->K - s->pc : w->bl.kc;
        return;
    }
    s->pc = 0;
    s->kn = w->K < w->bl.kc ? w->K : w->bl.kc;
    if ((s->jc += s->np) < s->p1) {
        s->np = s->p1 - s->jc < w->ncp ? s->p1 - s->jc : w->ncp;
        return;
    }
    s->i = s->e;
    if (s->i < n)
        ct_class(w, r, n, s);
}

/* Whether the step is the last of its block of columns: the class's columns there are complete. */
static inline bool ct_stored(const ct_work *w, const ct_step *s)
{
    return s->ic + s->mr == s->e - s->i && s->pc + s->kn >= w->K;
}

/* Whether the step stores panel p (of the whole output) straight into the class's runs: at the last
 * step of k, where the output holds f32 (w->direct) and every run of the class holds the panel's
 * columns. Else the panel's tiles go to the accumulators, which CT_STORE_RUNS stores. Stored from the
 * tile's registers, the output is written once, its store misses overlapping the tile's arithmetic,
 * instead of written to the accumulators and copied after (attention scores 2,8,512,64,512, products
 * over 64: that copy was a third of the kernel's time). */
static inline bool ct_direct(const ct_work *w, const ct_step *s, int64_t p)
{
    return w->direct && s->pc + s->kn >= w->K && p >= s->d0 && p < s->d1;
}

/* The columns of the step's block that ct_product stored into the runs, [*x0, *x1), when it stored
 * any (else unchanged): the direct panels within the block. */
static inline void ct_stored_direct(const ct_work *w, const ct_step *s, int64_t *x0, int64_t *x1)
{
    const int64_t p0 = s->d0 > s->jc ? s->d0 : s->jc, p1 = s->d1 < s->jc + s->np ? s->d1 : s->jc + s->np;
    if (ct_direct(w, s, p0) && p1 > p0)
        *x0 = p0 * CT_NR, *x1 = p1 * CT_NR;
}

/* Where the tile of panel p (of the whole output) and group g of the step's rows stores its rows:
 * the runs' own columns when direct (the result), else the accumulators; rows past the step's go to
 * the accumulators' padding rows, never read. */
static inline bool ct_tile_rows(const ct_work *w, const ct_run *r, const ct_step *s, int64_t p, int64_t g,
                                float **cout)
{
    const int64_t row0 = s->ic + g * CT_MR;
    float *c = w->cblock + row0 * w->ldc + (p - s->jc) * CT_NR;
    const bool direct = ct_direct(w, s, p);
    for (int64_t i = 0; i < CT_MR; ++i) {
        const ct_run *ri = direct && row0 + i < s->ic + s->mr ? r + s->i + row0 + i : NULL;
        cout[i] = ri ? (float *)ri->dst + (p * CT_NR - ri->c0) : c + i * w->ldc;
    }
    return direct;
}

/* The step's rows times its panels, added to the accumulators (set, at the first step of k), a tile
 * of panel p and group g of CT_MR rows at a time, the next tile's rows fetched while one runs.
 * Panel by panel, each panel (in L1) meets every group of rows (in L2) in turn; but a step that
 * stores into the output goes group by group across the panels (in L2), so that the output is written
 * along its rows: down a panel, it was written 128 bytes a row, 16 times over each row's lines, which
 * the hardware's prefetchers do not follow (scores 2,8,512,64,512: the tiles' stores then held the
 * kernel). */
static inline void ct_product(const ct_work *w, const ct_run *r, const ct_step *s)
{
    const int64_t kc = w->bl.kc, ldc = w->ldc, ng = (s->mr + CT_MR - 1) / CT_MR, n = s->np * ng;
    const bool rows_first = ct_direct(w, s, s->jc);
    float *tr[2][CT_MR]; /* the rows of this tile and the next */
    bool nt[2];          /* whether they are streamed: stored into the output, non-temporally */
    int64_t p = 0, g = 0;
    nt[0] = ct_tile_rows(w, r, s, s->jc, 0, tr[0]) && w->stream;
    for (int64_t t = 0; t < n; ++t) {
        const int64_t pn = rows_first ? (t + 1) % s->np : (t + 1) / ng, gn = rows_first ? (t + 1) / s->np : (t + 1) % ng;
        if (t + 1 < n) {
            nt[(t + 1) & 1] = ct_tile_rows(w, r, s, s->jc + pn, gn, tr[(t + 1) & 1]) && w->stream;
            for (int i = 0; i < CT_MR && !nt[(t + 1) & 1]; ++i) { /* streamed rows bypass the caches */
                __builtin_prefetch(tr[(t + 1) & 1][i], 1, 3);
                __builtin_prefetch(tr[(t + 1) & 1][i] + CT_VL, 1, 3);
            }
        }
        const float *cin = w->cblock + (s->ic + g * CT_MR) * ldc + p * CT_NR;
        ct_tile(s->kn, w->apack + g * CT_MR * kc, kc, w->bpack + p * kc * CT_NR, cin, ldc, tr[t & 1], s->pc > 0,
                nt[t & 1]);
        p = pn, g = gn;
    }
}

/* ct_product for a class of one row (ct_dots): its n lanes' rows are at w->lane_rows. */
static inline void ct_product_row(const ct_work *w, const ct_step *s, int64_t n)
{
    ct_dots(s->kn, w->apack, w->lane_rows, w->cblock, n, s->pc > 0);
}

/* Stores the class's accumulators for the step's block of columns into its runs: their columns that
 * fall within the block, converted by NDT_STORE into the template's NDT_T; with stream, as the
 * elementwise templates store an output past the last-level cache (rows_streaming, eltwise_rows.h),
 * with non-temporal stores. The output is not read again by the kernel, and stored through the caches
 * it evicted the packs and accumulators from L2: attention scores 2,16,1024,64,1024 (a 128 MB output
 * of products over 64) took 30.6-31.8 ms so, 27.0-28.0 streamed (oneDNN: 28.3-29.2), on a 2-CPU Xeon
 * VM. A macro, so that the template's types apply. */
#define CT_STORE_RUNS(wk, r, s, stream)                                                                 \
    for (int64_t ct_i = (s)->i; ct_i < (s)->e; ++ct_i) {                                                 \
        const ct_run *ct_r = (r) + ct_i;                                                                \
        const int64_t ct_col = (s)->jc * CT_NR, ct_end = ct_col + (s)->np * CT_NR;                      \
        const int64_t ct_lo = ct_r->c0 > ct_col ? ct_r->c0 : ct_col;                                    \
        const int64_t ct_hi = ct_r->c0 + ct_r->w < ct_end ? ct_r->c0 + ct_r->w : ct_end;                \
        int64_t ct_x0 = ct_hi, ct_x1 = ct_hi; /* the columns ct_product stored already */               \
        ct_stored_direct(wk, s, &ct_x0, &ct_x1);                                                        \
        CT_STORE_PIECE(wk, s, ct_i, ct_lo, ct_x0 < ct_hi ? ct_x0 : ct_hi, stream)                      \
        CT_STORE_PIECE(wk, s, ct_i, ct_x1 > ct_lo ? ct_x1 : ct_lo, ct_hi, stream)                      \
    }
/* Columns [lo, hi) of the class's row ct_i, from the accumulators: inside CT_STORE_RUNS (its run ct_r,
 * its block's first column ct_col). */
#define CT_STORE_PIECE(wk, s, ct_i, lo, hi, stream)                                                     \
    {                                                                                                   \
        const int64_t ct_a = (lo), ct_b = (hi);                                                         \
        const float *ct_s = (wk)->cblock + (ct_i - (s)->i) * (wk)->ldc + (ct_a - ct_col);               \
        NDT_T *ct_d = (NDT_T *)ct_r->dst + (ct_a - ct_r->c0);                                           \
        if (ct_b > ct_a)                                                                                \
            ROWS_STORE_RUN(ct_d, ct_b - ct_a, (stream), CT_STORE_AT);                                   \
    }
#define CT_STORE_AT(j) NDT_STORE(ct_s[j])

#endif
