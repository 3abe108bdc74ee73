/*
 * einsum.c - out = the contraction of a and b by their index notation, for instance "bik,bkj->bij"
 * (batched matmul), "bhqd,bhkd->bhqk" or "ij,j->i"; plain matmul has its own kernel, matmul.c.
 * Letters missing from the output are reduced, accumulating in f32. Owner computes: each core fills
 * the output pages it holds, reading a and b wherever they live, including from other cores when a
 * reduced axis is sharded.
 *
 * Each output row (a run along the output's last axis) is accumulated in chunks: for every combination
 * of the reduced letters, the kernel gathers the row's values of a and of b, each a constant along
 * the row (the letter is not theirs), a contiguous run (it is their last axis) or a strided gather,
 * then adds their product: an inner loop the compiler vectorizes.
 *
 * Operands: 0 a, 1 b (inputs), 2 out (output). NDT_INDICES comes from the spec's index notation.
 * Parameters: NDT_T stored type; NDT_LOAD(v) and NDT_STORE(v) conversions to and from f32.
 */
#include <stdint.h>
#include <string.h>

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
#ifndef NDT_INDICES
#define NDT_INDICES {"ik", "kj", "ij"}
#endif

enum { CHUNK = 256, MAX_LETTERS = 2 * ROWS_MAX_RANK };

/* How one input's coordinate follows an output row. */
typedef struct side {
    int rank;
    int src[ROWS_MAX_RANK]; /* per axis: >= 0, that output axis; < 0, reduced letter -1 - src */
    int row_axis;           /* its axis for the row's letter, or -1 */
    int step;               /* 0: constant along the row; 1: a contiguous run; -1: one element at a time */
} side;

typedef struct plan {
    side a, b;
    int nred;
    int64_t red_size[MAX_LETTERS];
    bool all[MAX_LETTERS];
} plan;

/* The letters of ix not in out, added to the reduced list (once each); sizes from dims. */
static void plan_side(plan *p, side *s, const char *ix, const char *out, const int64_t *dims, char *red)
{
    const int ro = (int)strlen(out);
    s->rank = (int)strlen(ix);
    s->row_axis = -1;
    for (int i = 0; i < s->rank; ++i) {
        const char *at = strchr(out, ix[i]);
        if (at) {
            s->src[i] = (int)(at - out);
            s->row_axis = s->src[i] == ro - 1 ? i : s->row_axis;
            continue;
        }
        const char *known = memchr(red, ix[i], (size_t)p->nred);
        int k = known ? (int)(known - red) : p->nred++;
        red[k] = ix[i];
        p->red_size[k] = dims[i];
        p->all[k] = true;
        s->src[i] = -1 - k;
    }
    s->step = s->row_axis < 0 ? 0 : s->row_axis == s->rank - 1 ? 1 : -1;
}

/* The input coordinate for the row's first element x (output coordinates) and reduced values q. */
static void side_coord(const side *s, int64_t *y, const int64_t *x, const int64_t *q)
{
    for (int i = 0; i < s->rank; ++i)
        y[i] = s->src[i] >= 0 ? x[s->src[i]] : q[-1 - s->src[i]];
}

void einsum(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *b = nda_operand(args, 1);
    const nda_tensor *out = nda_operand(args, 2);
    static const char *const ix[] = NDT_INDICES;
    const int ro = nda_rank(out);
    int64_t ad[ROWS_MAX_RANK], bd[ROWS_MAX_RANK], od[ROWS_MAX_RANK], pd[ROWS_MAX_RANK];
    for (int i = 0; i < nda_rank(a); ++i)
        ad[i] = nda_dim(a, i);
    for (int i = 0; i < nda_rank(b); ++i)
        bd[i] = nda_dim(b, i);
    for (int i = 0; i < ro; ++i) {
        od[i] = nda_dim(out, i);
        pd[i] = nda_page_dim(out, i);
    }
    plan p = {.nred = 0};
    char red[MAX_LETTERS];
    plan_side(&p, &p.a, ix[0], ix[2], ad, red);
    plan_side(&p, &p.b, ix[1], ix[2], bd, red);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[ROWS_MAX_RANK], x[ROWS_MAX_RANK] = {0}, off;
        rows w;
        nda_page_coord(out, nda_iter_page(&it), pc);
        NDT_T *z = (NDT_T *)nda_iter_ptr(&it);
        rows_begin(&w, ro, od, pd, pc);
        do {
            const int64_t len = rows_get(&w, x, &off);
            for (int64_t j0 = 0; j0 < len;) {
                const int64_t m = rows_min(CHUNK, len - j0);
                float acc[CHUNK], av[CHUNK], bv[CHUNK];
                int64_t q[MAX_LETTERS] = {0}, ya[ROWS_MAX_RANK], yb[ROWS_MAX_RANK];
                for (int64_t e = 0; e < m; ++e)
                    acc[e] = 0.0f;
                do { /* every combination of the reduced letters */
                    side_coord(&p.a, ya, x, q);
                    side_coord(&p.b, yb, x, q);
                    for (int64_t e = 0; e < (p.a.step ? m : 1);) {
                        int64_t n;
                        const NDT_T *pa = nda_elem_read(core, a, ya, &n);
                        n = p.a.step == 1 ? rows_min(n, m - e) : 1;
                        for (int64_t k = 0; k < n; ++k)
                            av[e + k] = NDT_LOAD(pa[k]);
                        e += n;
                        if (p.a.step)
                            ya[p.a.row_axis] += n;
                    }
                    for (int64_t e = 0; e < (p.b.step ? m : 1);) {
                        int64_t n;
                        const NDT_T *pb = nda_elem_read(core, b, yb, &n);
                        n = p.b.step == 1 ? rows_min(n, m - e) : 1;
                        for (int64_t k = 0; k < n; ++k)
                            bv[e + k] = NDT_LOAD(pb[k]);
                        e += n;
                        if (p.b.step)
                            yb[p.b.row_axis] += n;
                    }
                    if (!p.a.step) {
                        const float s = av[0];
                        for (int64_t e = 0; e < m; ++e)
                            acc[e] += s * bv[e];
                    } else if (!p.b.step) {
                        const float s = bv[0];
                        for (int64_t e = 0; e < m; ++e)
                            acc[e] += av[e] * s;
                    } else {
                        for (int64_t e = 0; e < m; ++e)
                            acc[e] += av[e] * bv[e];
                    }
                } while (rows_odometer(q, p.all, p.red_size, p.nred));
                for (int64_t e = 0; e < m; ++e)
                    z[off + j0 + e] = NDT_STORE(acc[e]);
                j0 += m;
                x[ro - 1] += m;
            }
        } while (rows_next(&w));
    }
}
