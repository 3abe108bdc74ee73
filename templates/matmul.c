/*
 * matmul.c - out[i,j] = sum_k a[i,k] * b[k,j], for any distributions of a, b and out, accumulating
 * in f32. Owner computes: each core fills the output pages it holds.
 *
 * The core's output rows are cut into runs (a row of one page: row i, columns c0..c0+w), sorted so
 * that runs whose columns touch the same panels follow each other, whatever pages they lie in. b is packed once per
 * core in panels of CT_NR columns (k-major), the runs' rows of a MC at a time, and contract.h
 * multiplies them in cache-sized blocks with a register-blocked micro-kernel.
 * Each row of b and each run's row of a keeps the last run an accessor call gave for it (ct_seg), so a
 * row lying in one page is looked up once per core (a 2048^3 product on 2 cores: 1.5 lookups per input
 * page, against 80 when each panel and step of k looked its rows up again).
 * Reads of a and b go through nda_elem_read, so they may live on any core; what the kernel computes
 * does not depend on where they live, nor on the block sizes.
 *
 * Operands: 0 a [M, K], 1 b [K, N] (inputs), 2 out [M, N] (output). When out is Partial (a pending
 * sum over its copies), each copy computes its part: the products over its share of k, by the chunk
 * rule, so the parts add up to a @ b whatever the inputs' distributions.
 * Parameters: NDT_T stored type; NDT_LOAD(v) and NDT_STORE(v) conversions to and from f32 (NDT_STORE_PLAIN:
 * whether NDT_STORE is the dtype's own, which ndgen sets).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
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
#ifndef NDT_STORE_PLAIN /* 0 (ndgen sets it) where the spec gives its own NDT_STORE: then every element */
#define NDT_STORE_PLAIN 1 /* goes through it, and the tile stores no f32 output itself (contract.h) */
#endif

void matmul(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *b = nda_operand(args, 1);
    const nda_tensor *out = nda_operand(args, 2);
    const int64_t M = nda_dim(out, 0), N = nda_dim(out, 1);
    const int64_t ph = nda_page_dim(out, 0), pw = nda_page_dim(out, 1);
    int64_t k0, k1; /* a Partial out holds one part of the sum over k: this core's copy adds k in [k0, k1) */
    nda_part_range(core, out, nda_dim(a, 1), &k0, &k1);
    const int64_t K = k1 - k0;
    const int64_t od[2] = {M, N};
    const bool stream = rows_streaming_output(rows_bytes(2, od, (int64_t)sizeof(NDT_T))); /* eltwise_rows.h */
    ct_run *runs = NULL;
    int64_t nruns = 0, cap = 0;
    bool ok = true;
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[2];
        nda_page_coord(out, nda_iter_page(&it), pc);
        const int64_t r0 = pc[0] * ph, c0 = pc[1] * pw;
        const int64_t h = M - r0 < ph ? M - r0 : ph, w = N - c0 < pw ? N - c0 : pw;
        for (int64_t r = 0; r < h; ++r)
            ok = ok && ct_push(&runs, &nruns, &cap,
                               &(ct_run){.c0 = c0, .w = w, .x = {r0 + r, c0}, .dst = (NDT_T *)nda_iter_ptr(&it) + r * pw});
    }
    ct_seg *bseg = ok && nruns > 0 ? calloc((size_t)K + 1, sizeof *bseg) : NULL; /* b's rows k0.. */
    ct_seg *aseg = bseg ? calloc((size_t)nruns, sizeof *aseg) : NULL;             /* each run's row of a */
    ct_work wk;
    /* no memory: nothing is written, which the result check shows; or nothing to write */
    if (!aseg || !ct_work_init(&wk, ct_blocks_here(), K, N, nruns, CT_IN_PLACE && NDT_STORE_PLAIN, stream)) {
        free(aseg), free(bseg), free(runs);
        return;
    }
    ct_sort_runs(runs, nruns);
    for (ct_step s = ct_first(&wk, runs, nruns); s.i < nruns; ct_next(&wk, runs, nruns, &s)) {
        if (s.ic == 0) { /* b's block: rows [pc, pc + kn) of its panels [jc, jc + np) */
            const int64_t j1 = rows_min((s.jc + s.np) * CT_NR, N);
            for (int64_t k = 0; k < s.kn; ++k) {
                ct_seg *g = &bseg[s.pc + k];
                for (int64_t j = s.jc * CT_NR; j < j1;) { /* row k of b, a run at a time, cut at the panels */
                    if (!ct_seg_holds(g, j)) {
                        int64_t y[2] = {k0 + s.pc + k, j};
                        g->p = nda_elem_read(core, b, y, &g->n);
                        g->at = j;
                    }
                    const NDT_T *pb = (const NDT_T *)g->p + (j - g->at);
                    const int64_t n = rows_min(g->at + g->n - j, j1 - j);
                    for (int64_t t = 0; t < n;) {
                        const int64_t c = j + t, m = rows_min(n - t, CT_NR - c % CT_NR);
                        float *bp = wk.bpack + (c / CT_NR - s.jc) * wk.bl.kc * CT_NR + k * CT_NR + c % CT_NR;
                        for (int64_t e = 0; e < m; ++e)
                            bp[e] = NDT_LOAD(pb[t + e]);
                        t += m;
                    }
                    j += n;
                }
                for (int64_t j = j1; j % CT_NR; ++j) /* past the last column: zeros */
                    wk.bpack[(j / CT_NR - s.jc) * wk.bl.kc * CT_NR + k * CT_NR + j % CT_NR] = 0.0f;
            }
        }
        for (int64_t t = 0; t < ct_round_up(s.mr, CT_MR); ++t) { /* a's rows, [pc, pc + kn) of each; zeros past */
            float *ap = wk.apack + t * wk.bl.kc;
            if (t >= s.mr) {
                memset(ap, 0, (size_t)s.kn * sizeof *ap);
                continue;
            }
            ct_seg *g = &aseg[s.i + s.ic + t];
            for (int64_t k = 0; k < s.kn;) {
                if (!ct_seg_holds(g, s.pc + k)) {
                    int64_t y[2] = {runs[s.i + s.ic + t].x[0], k0 + s.pc + k};
                    g->p = nda_elem_read(core, a, y, &g->n);
                    g->at = s.pc + k;
                }
                const NDT_T *pa = (const NDT_T *)g->p + (s.pc + k - g->at);
                const int64_t n = rows_min(g->at + g->n - (s.pc + k), s.kn - k);
                for (int64_t e = 0; e < n; ++e)
                    ap[k + e] = NDT_LOAD(pa[e]);
                k += n;
            }
        }
        ct_product(&wk, runs, &s);
        if (ct_stored(&wk, &s))
            CT_STORE_RUNS(&wk, runs, &s, stream)
    }
    ct_work_free(&wk);
    free(aseg), free(bseg), free(runs);
}
