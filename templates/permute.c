/*
 * permute.c - out = a with its axes permuted: output axis i is input axis perm[i], the perm coming as
 * the launch's scalars (the runtime checks that it is one, and the shapes). Owner computes: each core
 * fills the output pages it holds.
 *
 * When the last axis stays last, each output row is a contiguous run of an input row, copied as a run.
 * Otherwise the output axis q that is the input's last axis (perm[q] = last) decides: output rows
 * next to each other along q (in a page, or in pages the core holds one after another, as a transpose's
 * rows are) read input runs along the input's last axis. The kernel gathers such rows in tiles of up to
 * TILE and, column by column, reads one input run of up to TILE elements and writes it across the
 * tile's rows: one lookup per TILE elements, and input and output both touched a cache line at a time.
 * Rows that are not next to each other along q form tiles of one row, gathered an element at a time.
 *
 * Operands: 0 a (input), 1 out (output). Scalars: perm(a).
 * Parameters: NDT_T, the stored element type (any: elements are moved, not computed).
 */
#include <stdint.h>
#include <string.h>

#include "eltwise_rows.h"
#include "nd_accessor.h"

#ifndef NDT_T
#define NDT_T float
#endif

enum { TILE = 16 }; /* output rows transposed at once */

/* Whether row x (length len) continues the tile of nb rows from x0 (length len0) along axis q. */
static inline bool permute_continues(const int64_t *x0, int nb, int64_t len0, const int64_t *x, int64_t len, int q,
                                     int r)
{
    if (nb == 0 || nb == TILE || len != len0)
        return false;
    for (int i = 0; i < r; ++i)
        if (x[i] != x0[i] + (i == q ? nb : 0))
            return false;
    return true;
}

void permute(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *out = nda_operand(args, 1);
    const int r = nda_rank(out);
    int64_t od[ROWS_MAX_RANK], pd[ROWS_MAX_RANK];
    int perm[ROWS_MAX_RANK], q = r - 1;
    for (int i = 0; i < r; ++i) {
        od[i] = nda_dim(out, i);
        pd[i] = nda_page_dim(out, i);
        perm[i] = (int)args->scalars[i];
        q = perm[i] == r - 1 ? i : q;
    }
    const bool runs = perm[r - 1] == r - 1; /* rows stay rows */
    int64_t tx[ROWS_MAX_RANK] = {0}, tlen = 0, y[ROWS_MAX_RANK] = {0};
    NDT_T *tz[TILE];
    int nt = 0; /* rows in the tile: tz[b] is row tx + b along q, tlen long */
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
            if (runs) {
                for (int64_t j = 0; j < len;) {
                    int64_t n;
                    for (int i = 0; i < r; ++i)
                        y[perm[i]] = x[i];
                    const NDT_T *p = nda_elem_read(core, a, y, &n);
                    const int64_t m = rows_min(len - j, n);
                    memcpy(z + off + j, p, (size_t)m * sizeof(NDT_T));
                    j += m;
                    x[r - 1] += m;
                }
                continue;
            }
            if (nt > 0 && !permute_continues(tx, nt, tlen, x, len, q, r)) { /* the tile is done: write it */
                for (int64_t j = 0; j < tlen; ++j) {
                    for (int i = 0; i < r; ++i)
                        y[perm[i]] = tx[i] + (i == r - 1 ? j : 0);
                    for (int b = 0; b < nt;) {
                        int64_t n;
                        const NDT_T *p = nda_elem_read(core, a, y, &n);
                        const int m = (int)rows_min(n, nt - b);
                        for (int t = 0; t < m; ++t)
                            tz[b + t][j] = p[t];
                        b += m;
                        y[r - 1] += m;
                    }
                }
                nt = 0;
            }
            if (nt == 0) {
                memcpy(tx, x, sizeof tx);
                tlen = len;
            }
            tz[nt++] = z + off;
        } while (rows_next(&w));
    }
    for (int64_t j = 0; j < tlen && nt > 0; ++j) { /* the last tile, written as above */
        for (int i = 0; i < r; ++i)
            y[perm[i]] = tx[i] + (i == r - 1 ? j : 0);
        for (int b = 0; b < nt;) {
            int64_t n;
            const NDT_T *p = nda_elem_read(core, a, y, &n);
            const int m = (int)rows_min(n, nt - b);
            for (int t = 0; t < m; ++t)
                tz[b + t][j] = p[t];
            b += m;
            y[r - 1] += m;
        }
    }
}
