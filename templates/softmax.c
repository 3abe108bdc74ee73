/*
 * softmax.c - out = softmax(a) along the last axis, numerically stable: exp(x - max) / sum, in f32.
 * Owner computes: for each row of an output page, the kernel reads the whole input row (which may
 * span pages and cores) for its max and sum, then writes its own part.
 *
 * Operands: 0 a (input), 1 out (output), same shape.
 * Parameters: NDT_T stored type; NDT_LOAD(v) and NDT_STORE(v) conversions to and from f32.
 *
 * Three passes over a row, each in VMATH_BLOCK (16) lanes: the max (exact in any order; a NaN is passed
 * over, as fmaxf does, and then makes the sum and the whole row NaN); exp(x - max), whole blocks with
 * the last padded (eltwise_rows.h), so every element takes the same path in the generic and the
 * specialized kernel, summed in 16 lanes of doubles (element e of a run to lane e % 16, the lanes added
 * in order): the sum's rounding error, about (n/16 + 16) 2^-53 relative, is far below the f32 exps',
 * so the result is within the exps' error (4 ULP for libmvec's, tests/test_vmath.c) plus the
 * reciprocal's, the product's and the store's; then the page's part of the row, times 1 / the sum. A
 * row of at most ROW_KEEP elements keeps its exps from the second pass for the third, which then reads
 * no input; a longer one reads and computes them again.
 *
 * The next row. The first pass reads the row from memory and the other two work in the cache, so the
 * memory would idle while they compute: the second pass prefetches as many elements as the run it works
 * on from just after it, which is the next row wherever rows lie one after another (a shard's pages
 * do). It is a hint: a prefetch never faults, and where the guess is wrong it only costs bandwidth.
 * Measured one thread, 4096x4096, minimum of 7 rounds: 54 to 65 ms against 79 to 87 ms without.
 */
#include <math.h>
#include <stdint.h>

#include "eltwise_rows.h"
#include "nd_accessor.h"

#ifndef NDT_T
#define NDT_T float
#endif
#ifndef NDT_LOAD
#define NDT_LOAD(v) (v)
#endif
#ifndef NDT_STORE
#define NDT_STORE(v) (v)
#endif

enum {
    ROW_KEEP = 4096, /* the longest row whose exps are kept between passes (16 KiB) */
    ROW_STATS = 256, /* rows whose max and sum a core keeps, by row number modulo this */
    ROW_PART = 256   /* exps computed at a time for a page's part of a row known by its max and sum */
};

/* A row's max and sum, kept for the core's other pages of the row (row -1: none). */
typedef struct row_stats {
    int64_t row;
    float max;
    double sum;
} row_stats;

/* The larger of m and v; a NaN v is passed over (the comparison is false). */
#define SOFTMAX_MAX(m, v) ((v) > (m) ? (v) : (m))

/* lane[e % 16] = the larger of it and x[e], over whole blocks of x[0, n); the rest into lane 0. */
static inline void softmax_max(float *restrict lane, const NDT_T *restrict x, int64_t n)
{
    VMATH_FOLD(lane, x, n, SOFTMAX_MAX);
}

/* ex[0, n) = exp(x[0, n) - max), a block of VMATH_BLOCK at a time, the last padded with -inf (exp 0);
 * then lane[e % 16] += ex[e], in a loop of its own, without calls, so the lanes stay in registers. */
static VMATH_WIDE void softmax_exp(float *restrict ex, double *restrict lane, const NDT_T *restrict x, int64_t n,
                                   float max)
{
    int64_t e = 0;
    for (; e + VMATH_BLOCK <= n; e += VMATH_BLOCK) {
        __builtin_prefetch(x + n + e); /* a hint (never a fault): see softmax's note on the next row */
        VMATH_KEEP_LOOP /* one vector loop, not 16 scalar calls */
        for (int k = 0; k < VMATH_BLOCK; ++k)
            ex[e + k] = expf(NDT_LOAD(x[e + k]) - max);
    }
    if (e < n) {
        float v[VMATH_BLOCK], r[VMATH_BLOCK];
        for (int k = 0; k < VMATH_BLOCK; ++k)
            v[k] = e + k < n ? NDT_LOAD(x[e + k]) - max : -INFINITY;
        VMATH_KEEP_LOOP
        for (int k = 0; k < VMATH_BLOCK; ++k)
            r[k] = expf(v[k]);
        for (int64_t k = 0; e + k < n; ++k)
            ex[e + k] = r[k];
    }
    double acc[VMATH_BLOCK];
    for (int k = 0; k < VMATH_BLOCK; ++k)
        acc[k] = lane[k];
    for (e = 0; e + VMATH_BLOCK <= n; e += VMATH_BLOCK)
        for (int k = 0; k < VMATH_BLOCK; ++k)
            acc[k] += (double)ex[e + k];
    for (int k = 0; e + k < n; ++k)
        acc[k] += (double)ex[e + k];
    for (int k = 0; k < VMATH_BLOCK; ++k)
        lane[k] = acc[k];
}

/* z[0, n) = ex[0, n) times inv, 1 / the sum: a multiplication where a division costs 10 cycles a vector. */
static VMATH_WIDE void softmax_scale(NDT_T *restrict z, const float *restrict ex, int64_t n, float inv, bool stream)
{
#define SOFTMAX_AT(i) NDT_STORE(ex[i] * inv)
    ROWS_STORE_RUN(z, n, stream, SOFTMAX_AT);
#undef SOFTMAX_AT
}

void softmax(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int r = nda_rank(out);
    int64_t od[ROWS_MAX_RANK] = {0}, pd[ROWS_MAX_RANK] = {0};
    for (int i = 0; i < r; ++i) {
        od[i] = nda_dim(out, i);
        pd[i] = nda_page_dim(out, i);
    }
    const int64_t width = od[r - 1];
    const bool keep = width <= ROW_KEEP;
    const bool stream = rows_streaming(2 * rows_bytes(r, od, (int64_t)sizeof(NDT_T))); /* a, out: eltwise_rows.h */
    float ex[ROW_KEEP];
    /* The row whose max and sum (and exps, when kept) were computed last: pages of one row that follow
     * each other (a row split over narrow pages) reuse them, so a row is read twice per run of its
     * pages, not twice per page. */
    int64_t last[ROWS_MAX_RANK] = {0};
    bool have_last = false;
    float max = -INFINITY;
    double sum = 0;
    /* Rows met before but not last: their max and sum, so that pages cutting rows across narrow pages
     * (pages one element wide along the row, several rows each) do not read a row again per element; such a
     * page's part is then computed from its own elements, as a long row's is. */
    row_stats seen[ROW_STATS];
    for (int i = 0; i < ROW_STATS; ++i)
        seen[i] = (row_stats){-1, 0, 0};
    float part[ROW_PART]; /* those exps: ex keeps the last row's */
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[ROWS_MAX_RANK], x[ROWS_MAX_RANK] = {0}, off;
        rows w;
        nda_page_coord(out, nda_iter_page(&it), pc);
        NDT_T *z = (NDT_T *)nda_iter_ptr(&it);
        rows_begin(&w, r, od, pd, pc);
        do {
            const int64_t len = rows_get(&w, x, &off);
            if (len == 0)
                continue;
            const int64_t first = x[r - 1];
            bool same = have_last;
            for (int i = 0; i + 1 < r && same; ++i)
                same = last[i] == x[i];
            int64_t row = 0; /* the row's number among the tensor's rows */
            for (int i = 0; i + 1 < r; ++i)
                row = row * od[i] + x[i];
            row_stats *kept = &seen[row % ROW_STATS];
            const bool known = !same && kept->row == row; /* its max and sum, not its exps */
            if (!same && !known) {
                float lane[VMATH_BLOCK];
                double sums[VMATH_BLOCK] = {0};
                max = -INFINITY, sum = 0;
                for (int k = 0; k < VMATH_BLOCK; ++k)
                    lane[k] = -INFINITY;
                for (x[r - 1] = 0; x[r - 1] < width;) { /* the whole row: its max, */
                    int64_t n;
                    const NDT_T *p = nda_elem_read(core, a, x, &n);
                    softmax_max(lane, p, n);
                    x[r - 1] += n;
                }
                for (int k = 0; k < VMATH_BLOCK; ++k)
                    max = SOFTMAX_MAX(max, lane[k]);
                for (x[r - 1] = 0; x[r - 1] < width;) { /* its exps and their sum, */
                    int64_t n;
                    const NDT_T *p = nda_elem_read(core, a, x, &n);
                    for (int64_t e = 0; e < n; e += ROW_KEEP) { /* kept, or a chunk at a time */
                        const int64_t m = rows_min(n - e, ROW_KEEP);
                        softmax_exp(keep ? ex + x[r - 1] + e : ex, sums, p + e, m, max);
                    }
                    x[r - 1] += n;
                }
                for (int k = 0; k < VMATH_BLOCK; ++k)
                    sum += sums[k];
                for (int i = 0; i + 1 < r; ++i)
                    last[i] = x[i];
                have_last = true;
                *kept = (row_stats){row, max, sum};
            }
            if (keep && !known) { /* then this page's part of the row, from its kept exps, */
                softmax_scale(z + off, ex + first, len, (float)(1 / sum), stream);
                continue;
            }
            /* or from its exps computed again (each element's exp is the same whichever block it is in) */
            const float rmax = known ? kept->max : max;
            const double rsum = known ? kept->sum : sum;
            float *buf = known ? part : ex;
            const int64_t chunk = known ? ROW_PART : ROW_KEEP;
            for (x[r - 1] = first; x[r - 1] < first + len;) {
                int64_t n;
                const NDT_T *p = nda_elem_read(core, a, x, &n);
                n = rows_min(n, first + len - x[r - 1]);
                for (int64_t e = 0; e < n; e += chunk) {
                    const int64_t m = rows_min(n - e, chunk);
                    double unused[VMATH_BLOCK] = {0};
                    softmax_exp(buf, unused, p + e, m, rmax);
                    softmax_scale(z + off + x[r - 1] - first + e, buf, m, (float)(1 / rsum), stream);
                }
                x[r - 1] += n;
            }
        } while (rows_next(&w));
    }
}
