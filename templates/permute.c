/*
 * permute.c - out = a with its axes permuted: output axis i is input axis perm[i], the perm coming as
 * the launch's scalars (the runtime checks that it is one, and the shapes). Owner computes: each core
 * fills the output rows it holds.
 *
 * When the last axis stays last, each output row is a contiguous run of an input row, copied as a run.
 * Otherwise output axis q is the input's last axis (perm[q] = last), and the kernel moves tiles of
 * TILE x TILE elements, TILE elements being a 64-byte cache line: TILE output rows next to each other
 * along q (rows x0 + b e_q, x0[q] a multiple of TILE) by TILE columns. For each column it reads one
 * input run of TILE elements along the input's last axis (one lookup), into a buffer, then writes each
 * row's TILE elements from it: input and output are both touched a whole line at a time, and lookups
 * cost one per TILE elements.
 *
 * Which rows a tile writes: the row that leads it (x0) writes every row of the tile this core holds;
 * the others leave it their part when the leader is this core's, and otherwise write themselves alone
 * (a tile of one row, gathered an element per lookup: DRAM outputs, or shards that split a tile along
 * q with the leader elsewhere). So every row is written once, by the core that holds it.
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

enum { TILE = (int)(64 / sizeof(NDT_T)) }; /* elements in a 64-byte line: tiles are TILE x TILE */

/* The page coordinate of output element x and x's offset in that page (row-major in the page box). */
static inline int64_t permute_in_page(const int64_t *x, const int64_t *pd, int r, int64_t *pc)
{
    int64_t off = 0;
    for (int i = 0; i < r; ++i) {
        pc[i] = x[i] / pd[i];
        off = off * pd[i] + x[i] % pd[i];
    }
    return off;
}

/* Columns [j0, j0 + jn) of the tile's rows from buf (buf[j][b]: column j, row b); rows not this
 * core's (NULL) are skipped. Whole tiles take constant bounds, so the compiler can unroll them. */
static inline void permute_put(NDT_T *const *row, const NDT_T (*buf)[TILE], int nt, int64_t j0, int jn)
{
    if (nt == TILE && jn == TILE) {
        for (int b = 0; b < TILE; ++b)
            if (row[b])
                for (int j = 0; j < TILE; ++j)
                    row[b][j0 + j] = buf[j][b];
        return;
    }
    for (int b = 0; b < nt; ++b)
        if (row[b])
            for (int j = 0; j < jn; ++j)
                row[b][j0 + j] = buf[j][b];
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
    const bool runs = q == r - 1; /* rows stay rows */
    int64_t y[ROWS_MAX_RANK] = {0};
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
            int64_t x0[ROWS_MAX_RANK] = {0}, tpc[ROWS_MAX_RANK];
            for (int i = 0; i < r; ++i)
                x0[i] = i == q ? x[q] - x[q] % TILE : x[i];
            int nt = (int)rows_min(TILE, od[q] - x0[q]);
            NDT_T *row[TILE];
            if (x0[q] != x[q]) { /* x does not lead its tile */
                permute_in_page(x0, pd, r, tpc);
                if (nda_is_local(core, out, nda_page_id(out, tpc)))
                    continue; /* the leader writes this row */
                x0[q] = x[q]; /* alone */
                nt = 1;
            }
            row[0] = z + off;
            for (int b = 1; b < nt; ++b) { /* the tile's other rows this core holds */
                x0[q] += b;
                const int64_t toff = permute_in_page(x0, pd, r, tpc);
                const int64_t page = nda_page_id(out, tpc);
                row[b] = nda_is_local(core, out, page) ? (NDT_T *)nda_page_addr(out, page) + toff : NULL;
                x0[q] -= b;
            }
            for (int64_t j0 = 0; j0 < len; j0 += TILE) {
                const int jn = (int)rows_min(TILE, len - j0);
                NDT_T buf[TILE][TILE];
                for (int j = 0; j < jn; ++j) { /* column j0 + j: a run along the input's last axis */
                    for (int i = 0; i < r; ++i)
                        y[perm[i]] = x0[i] + (i == r - 1 ? j0 + j : 0);
                    for (int b = 0; b < nt;) {
                        int64_t n;
                        const NDT_T *p = nda_elem_read(core, a, y, &n);
                        const int m = (int)rows_min(n, nt - b);
                        if (m == TILE) /* a whole line: a copy of constant size, inlined */
                            memcpy(buf[j], p, sizeof buf[j]);
                        else
                            memcpy(buf[j] + b, p, (size_t)m * sizeof(NDT_T));
                        b += m;
                        y[r - 1] += m;
                    }
                }
                permute_put(row, (const NDT_T(*)[TILE])buf, nt, j0, jn);
            }
        } while (rows_next(&w));
    }
}
