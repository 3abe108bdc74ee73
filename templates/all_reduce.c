/*
 * all_reduce.c - out = the parts of a Partial tensor `in` combined by its reduce op (sum, avg, max, min or
 * product): the collective that resolves a pending reduction. Owner computes: each core fills the pages
 * of `out` its own copy holds, reading part q of each from the copy of part q in the same position as
 * its own (so one part is local). With `out` replicated this is an all-reduce; with `out` sharded over
 * the cores that held the parts, a reduce-scatter. Parts are combined in order 0, 1, ..., so every copy
 * of `out` is bitwise the same; avg sums them and divides once, at the end. The reduce op is a run-time
 * value of the generic kernel and a constant of a specialized one, whose other branches fold away.
 *
 * When in and out share shape and page box the kernel works page by page; otherwise it walks each
 * output page row by row and reads runs of in's pages.
 *
 * Operands: 0 in (input, Partial), 1 out (output), indexed "...".
 * Parameters: NDT_T, the stored element type; NDT_LOAD(v) and NDT_STORE(v), conversions to and from
 * float, in which the parts are combined.
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

enum { AR_MAX_PAGE = 4096 }; /* elements of one output page summed on the stack */

/* Combines a run of m elements of one part into acc by reduce op op, or stores it there for the first
 * part. A max or min is NaN when any part is, as reduce_max's is (so a pending max from reduce_max
 * combines to the whole reduce_max), numpy's and jax.lax.max's: written as a comparison and a select,
 * as fmaxf and fminf pass NaN over. */
static void ar_combine(float *acc, const NDT_T *x, int64_t m, int first, int op)
{
    if (first) {
        for (int64_t e = 0; e < m; ++e)
            acc[e] = NDT_LOAD(x[e]);
    } else if (op == ND_REDUCE_MAX) {
        for (int64_t e = 0; e < m; ++e) {
            const float v = NDT_LOAD(x[e]);
            acc[e] = v > acc[e] || v != v ? v : acc[e];
        }
    } else if (op == ND_REDUCE_MIN) {
        for (int64_t e = 0; e < m; ++e) {
            const float v = NDT_LOAD(x[e]);
            acc[e] = v < acc[e] || v != v ? v : acc[e];
        }
    } else if (op == ND_REDUCE_PRODUCT) {
        for (int64_t e = 0; e < m; ++e)
            acc[e] *= NDT_LOAD(x[e]);
    } else { /* sum, and avg before its division */
        for (int64_t e = 0; e < m; ++e)
            acc[e] += NDT_LOAD(x[e]);
    }
}

/* The combined value of acc[e]: avg divides the sum by the number of parts. */
static float ar_value(float acc, int op, int64_t parts) { return op == ND_REDUCE_AVG ? acc / (float)parts : acc; }

void all_reduce(const nda_core *core, const nda_args *args)
{
    const nda_tensor *in = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int64_t parts = nda_parts(in);
    const int op = nda_part_reduce(in);
    float acc[AR_MAX_PAGE];
    /* Each path declares what only it uses, so a specialized kernel keeps one path and no unused name. */
    if (nda_same_paging(in, out)) { /* page by page, in slices of acc */
        const int64_t n = nda_page_bytes(out) / (int64_t)sizeof(NDT_T);
        for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
            NDT_T *y = (NDT_T *)nda_iter_ptr(&it);
            for (int64_t base = 0; base < n; base += AR_MAX_PAGE) {
                const int64_t len = n - base < AR_MAX_PAGE ? n - base : AR_MAX_PAGE;
                for (int64_t q = 0; q < parts; ++q)
                    ar_combine(acc, (const NDT_T *)nda_part_page_read(core, in, q, nda_iter_page(&it)) + base, len,
                               q == 0, op);
                for (int64_t e = 0; e < len; ++e)
                    y[base + e] = NDT_STORE(ar_value(acc[e], op, parts));
            }
        }
        return;
    }
    const int64_t r = nda_rank(out);
    int64_t od[ROWS_MAX_RANK], pd[ROWS_MAX_RANK], id[ROWS_MAX_RANK], ip[ROWS_MAX_RANK];
    for (int i = 0; i < r; ++i) {
        od[i] = nda_dim(out, i);
        pd[i] = nda_page_dim(out, i);
        id[i] = nda_dim(in, i);
        ip[i] = nda_page_dim(in, i);
    }
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) { /* row by row */
        NDT_T *y = (NDT_T *)nda_iter_ptr(&it);
        int64_t pc[ROWS_MAX_RANK], x[ROWS_MAX_RANK] = {0}, off;
        rows w;
        nda_page_coord(out, nda_iter_page(&it), pc);
        rows_begin(&w, (int)r, od, pd, pc);
        do {
            const int64_t m = rows_get(&w, x, &off);
            for (int64_t j = 0; j < m;) { /* runs inside one page of in, at most AR_MAX_PAGE long */
                int64_t ipc[ROWS_MAX_RANK], in_off = 0;
                for (int i = 0; i < r; ++i) {
                    ipc[i] = x[i] / ip[i];
                    in_off = in_off * ip[i] + x[i] % ip[i];
                }
                const int64_t page = nda_page_id(in, ipc), last = r - 1;
                int64_t run = rows_min(m - j, rows_min(ip[last] - x[last] % ip[last], id[last] - x[last]));
                run = rows_min(run, AR_MAX_PAGE);
                for (int64_t q = 0; q < parts; ++q)
                    ar_combine(acc, (const NDT_T *)nda_part_page_read(core, in, q, page) + in_off, run, q == 0, op);
                for (int64_t e = 0; e < run; ++e)
                    y[off + j + e] = NDT_STORE(ar_value(acc[e], op, parts));
                j += run;
                x[last] += run;
            }
        } while (rows_next(&w));
    }
}
