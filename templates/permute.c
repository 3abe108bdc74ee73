/*
 * permute.c - out = a with its axes permuted: output axis i is input axis perm[i], the perm coming as
 * the launch's scalars (the runtime checks that it is one, and the shapes). Owner computes: each core
 * fills the output rows it holds.
 *
 * When the last axis stays last, each output row is a contiguous run of an input row, copied as a run.
 * Otherwise output axis q is the input's last axis (perm[q] = last), and the kernel moves tiles of
 * TILE x TILE elements, TILE elements being a 64-byte cache line: TILE output rows next to each other
 * along q by TILE columns. A column's TILE elements are a run along the input's last axis, read in
 * place when they are one run (else gathered), and a whole tile is transposed in registers
 * (transpose.h); so input and output are both touched a whole line at a time. Outputs past the
 * last-level cache are written with non-temporal stores.
 *
 * Rows go in groups of GROUP along q (x0[q] a multiple of GROUP), and a group's tiles are written one
 * column block after another: the GROUP / TILE tiles of a column block read 4 KiB of contiguous bytes
 * of each of TILE input rows, an OS page each, which the prefetchers follow, where one tile at a time
 * reads 64 bytes from each of TILE rows a row apart (measured on a 4096 x 4096 f32 transpose: about
 * 2x). Runs of 512 bytes (8 tiles) left the core waiting on its line fill buffers: a 2-CPU Xeon VM's
 * samples (perf, cpu-clock) were on the prefetches and the tiles' loads, and 4 KiB runs took the
 * transpose from 7.5-8.6 ms to 6.7-7.3 (bench/template_ab.sh -r 5 transpose, 4 KiB pages or huge
 * ones alike); a 256^3 permute 2,0,1, whose runs are 1 KiB whatever GROUP, took 10.5 ms against
 * 9.3-10.7 before, within the rounds' spread. A column block looks up each column once for the whole
 * group when its GROUP elements are one input run (one lookup per GROUP elements), else once per tile
 * and run. Each such block is 16 input rows a row stride apart,
 * so it misses every cache and the TLB: the lines of the block PREFETCH blocks on are prefetched from
 * the runs kept (a 4096 x 4096 f32 transpose on 2 cores: 9.3-9.6 ms to 6.8-6.9; 1 block on, 7.4-7.6;
 * 8 on, 7.3-7.4). A group no kept run serves, with columns shorter than 4 KiB, looks its columns up
 * AHEAD columns before their use and prefetches them: the 256^3 permutes 0,2,1 and 2,0,1, whose
 * columns are 1 KiB, went from 6.9-7.4 and 9.0-11.2 ms to 5.1-5.7 and 6.7-9.6 (a 2-CPU AMD EPYC, Zen
 * 4; bench/template_ab.sh -r 3 permute). The first row of
 * a group that this core holds leads it and writes every row of the group this core holds; the others
 * were written with it. So every row is written once, by the core that holds it. Tiles with rows this
 * core does not hold (shards that split a group) move element by element; so do DRAM outputs, whose
 * rows no core holds: each is its own group.
 *
 * Operands: 0 a (input), 1 out (output). Scalars: perm(a).
 * Parameters: NDT_T, the stored element type (any: elements are moved, not computed).
 */
#include <stdint.h>
#include <string.h>

#include "eltwise_rows.h"
#include "nd_accessor.h"
#include "transpose.h"

#ifndef NDT_T
#define NDT_T float
#endif

enum {
    TILE = (int)(64 / sizeof(NDT_T)), /* elements in a 64-byte line: tiles are TILE x TILE */
    GROUP = 4096 / (int)sizeof(NDT_T), /* rows a leader writes together: input runs of 4 KiB */
    RUNS_KEPT = 4096,                 /* columns whose input runs a leader keeps for the next group */
    PREFETCH = 4,                     /* column blocks ahead whose input lines are prefetched */
    AHEAD = PREFETCH * TILE           /* columns looked up ahead, when no kept run serves the group */
};

/* The input runs of a group's columns, kept for the group after it: when this core next leads the
 * group GROUP rows further along q at the same other coordinates (the next group of the same rows),
 * column j's elements are the kept run's GROUP elements on, in the same page when the run reaches
 * that far; so a run along a long input page is looked up once per page, not once per group. */
typedef struct permute_runs {
    int64_t x0[ROWS_MAX_RANK]; /* the group the runs were read for (none when len is 0) */
    int64_t len;               /* columns kept: min(the row's length, RUNS_KEPT) */
    const NDT_T *p[RUNS_KEPT]; /* column j's run from the group's first row ... */
    int64_t n[RUNS_KEPT];      /* ... and its elements */
} permute_runs;

/* y = the input coordinate of group x0's column c, its first row's element (output axis i is input
 * axis perm[i]; the input's last axis is the column). */
static inline void permute_column(int64_t *y, const int *perm, int r, const int64_t *x0, int64_t c)
{
    for (int i = 0; i < r; ++i)
        y[perm[i]] = x0[i] + (i == r - 1 ? c : 0);
}

/* Prefetches the first nt elements of a column's run p of n, looked up AHEAD columns before its use: a
 * block's columns are TILE input rows a row apart, which the hardware's prefetchers do not follow line
 * by line (a 256^3 permute 0,2,1: four fifths of the kernel's samples were on the tiles' loads). */
static inline void permute_prefetch(const NDT_T *p, int64_t n, int nt)
{
    for (int64_t l = 0; l < rows_min(nt, n); l += TILE)
        __builtin_prefetch(p + l);
}

/* Whether group x0 is the one GROUP rows along q after the group whose runs k keeps, at the same other
 * coordinates: then each kept column's run, when it reaches GROUP + nt elements, serves it GROUP on. */
static inline bool permute_follows(const permute_runs *k, const int64_t *x0, int r, int q)
{
    if (k->len == 0 || x0[q] != k->x0[q] + GROUP)
        return false;
    for (int i = 0; i < r; ++i)
        if (i != q && x0[i] != k->x0[i])
            return false;
    return true;
}

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

/* Whether any of the n rows is this core's (not NULL). */
static inline bool permute_any(NDT_T *const *row, int n)
{
    for (int b = 0; b < n; ++b)
        if (row[b])
            return true;
    return false;
}

/* Columns [j0, j0 + jn) of a tile's nt rows: row[b][j0 + j] = col[j][b]; rows not this core's (NULL) are
 * skipped. A whole tile (whole: 1, or 2 to stream it) is transposed in registers (transpose.h). */
static inline void permute_put(NDT_T *const *row, const NDT_T *const *col, int nt, int whole, int64_t j0, int jn)
{
    if (whole) {
        tr_tile((void *const *)row, j0, (const void *const *)col, sizeof(NDT_T), whole == 2);
        return;
    }
    for (int b = 0; b < nt; ++b)
        if (row[b])
            for (int j = 0; j < jn; ++j)
                row[b][j0 + j] = col[j][b];
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
    const bool runs = q == r - 1;             /* rows stay rows */
    const bool alone = nda_self(core, out) < 0; /* this core holds none of out: each row a group of one */
    const int stream = rows_streaming(2 * rows_bytes(r, od, (int64_t)sizeof(NDT_T))); /* a, out: eltwise_rows.h */
    int64_t y[ROWS_MAX_RANK] = {0};
    permute_runs kept; /* 64 KiB on the stack: RUNS_KEPT pointers and counts */
    kept.len = 0;      /* none kept: no group follows */
    for (int i = 0; i < ROWS_MAX_RANK; ++i)
        kept.x0[i] = 0;
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
            /* x's group: rows x0 + b e_q, b < nt, x0[q] a multiple of GROUP. The first row of it this
             * core holds leads: it writes every row of the group this core holds (row[b]; NULL for the
             * others), so every row is written once, by its holder. A core holding none of the output
             * (DRAM: its pages are in banks) writes each row alone, a group of one. */
            int64_t x0[ROWS_MAX_RANK] = {0}, tpc[ROWS_MAX_RANK];
            for (int i = 0; i < r; ++i)
                x0[i] = i == q && !alone ? x[q] - x[q] % GROUP : x[i];
            const int nt = alone ? 1 : (int)rows_min(GROUP, od[q] - x0[q]), k = (int)(x[q] - x0[q]);
            bool led = false; /* by an earlier row of the group: then it was written with it */
            for (int b = k - 1; b >= 0 && !led; --b) {
                x0[q] += b;
                permute_in_page(x0, pd, r, tpc);
                led = nda_is_local(core, out, nda_page_id(out, tpc));
                x0[q] -= b;
            }
            if (led)
                continue;
            NDT_T *row[GROUP];
            int whole[GROUP / TILE]; /* per tile of TILE rows: 0 some row not this core's, 1 all, 2 all and
                                      * streamed (rows aligned for it) */
            for (int b = 0; b <= k; ++b) /* rows before the leader are no row of this core's (led) */
                row[b] = b == k ? z + off : NULL;
            for (int b = k + 1; b < nt; ++b) {
                x0[q] += b;
                const int64_t toff = permute_in_page(x0, pd, r, tpc);
                const int64_t page = nda_page_id(out, tpc);
                row[b] = nda_is_local(core, out, page) ? (NDT_T *)nda_page_addr(out, page) + toff : NULL;
                x0[q] -= b;
            }
            for (int t = 0; t * TILE < nt; ++t) {
                whole[t] = t * TILE + TILE <= nt ? 1 + stream : 0;
                for (int b = t * TILE; b < t * TILE + TILE && b < nt && whole[t]; ++b)
                    whole[t] = !row[b] ? 0 : whole[t] == 2 && !rows_stream_aligned(row[b]) ? 1 : whole[t];
            }
            const bool follows = permute_follows(&kept, x0, r, q); /* once per group, not per column */
            /* Without kept runs, and columns shorter than a group's 4 KiB (which the prefetchers follow: a
             * 4096 x 4096 transpose gained nothing from it, 4.29 against 4.18 ms, within the 4% by which
             * the second of two identical runs was slower), columns c .. c + AHEAD - 1 are looked up
             * ahead and prefetched. */
            const bool look = !follows && nt < GROUP;
            const NDT_T *ahead_p[AHEAD];
            int64_t ahead_n[AHEAD];
            for (int64_t c = 0; c < AHEAD && c < len && look; ++c) {
                permute_column(y, perm, r, x0, c);
                ahead_p[c] = nda_elem_read(core, a, y, &ahead_n[c]);
                permute_prefetch(ahead_p[c], ahead_n[c], nt);
            }
            for (int64_t j0 = 0; j0 < len; j0 += TILE) {
                const int jn = (int)rows_min(TILE, len - j0);
                const NDT_T *run[TILE]; /* column j0 + j from the group's first row */
                bool one = true;        /* every column's nt elements are one input run */
                for (int j = 0; j < jn; ++j) {
                    int64_t n, c = j0 + j, f = c + PREFETCH * TILE;
                    if (follows && f < kept.len && kept.n[f] >= GROUP + nt) /* a later block's column */
                        for (int l = 0; l < nt; l += TILE)
                            __builtin_prefetch(kept.p[f] + GROUP + l);
                    if (follows && c < kept.len && kept.n[c] >= GROUP + nt) {
                        run[j] = kept.p[c] + GROUP, n = kept.n[c] - GROUP;
                    } else if (look) { /* looked up AHEAD columns before, or before the first block */
                        const int64_t s = c % AHEAD; /* f's slot too */
                        run[j] = ahead_p[s], n = ahead_n[s];
                        if (f < len) {
                            permute_column(y, perm, r, x0, f);
                            ahead_p[s] = nda_elem_read(core, a, y, &ahead_n[s]);
                            permute_prefetch(ahead_p[s], ahead_n[s], nt);
                        }
                    } else {
                        permute_column(y, perm, r, x0, c);
                        run[j] = nda_elem_read(core, a, y, &n);
                    }
                    one = one && n >= nt;
                    if (c < RUNS_KEPT)
                        kept.p[c] = run[j], kept.n[c] = n;
                }
                for (int t = 0; t * TILE < nt; ++t) { /* the tiles of rows t TILE .. t TILE + TILE - 1 */
                    NDT_T *const *trow = row + t * TILE;
                    const int tn = (int)rows_min(TILE, nt - t * TILE);
                    if (!whole[t] && !permute_any(trow, tn))
                        continue;
                    NDT_T buf[TILE][TILE];
                    const NDT_T *col[TILE]; /* column j0 + j's tn elements: in place, or gathered in buf[j] */
                    for (int j = 0; j < jn && one; ++j)
                        col[j] = run[j] + t * TILE;
                    for (int j = 0; j < jn && !one; ++j) { /* a run along the input's last axis */
                        for (int i = 0; i < r; ++i)
                            y[perm[i]] = x0[i] + (i == r - 1 ? j0 + j : i == q ? t * TILE : 0);
                        int64_t n;
                        const NDT_T *p = nda_elem_read(core, a, y, &n);
                        if (n >= tn) { /* the whole column in one run: read in place */
                            col[j] = p;
                            continue;
                        }
                        for (int b = 0;;) { /* the run ends inside the column: gather its pieces */
                            const int m = (int)rows_min(n, tn - b);
                            memcpy(buf[j] + b, p, (size_t)m * sizeof(NDT_T));
                            b += m;
                            if (b == tn)
                                break;
                            y[r - 1] += m;
                            p = nda_elem_read(core, a, y, &n);
                        }
                        col[j] = buf[j];
                    }
                    permute_put(trow, col, tn, jn == TILE ? whole[t] : 0, j0, jn);
                }
            }
            for (int i = 0; i < r; ++i) /* the runs kept are this group's now */
                kept.x0[i] = x0[i];
            kept.len = rows_min(len, RUNS_KEPT);
        } while (rows_next(&w));
    }
}
