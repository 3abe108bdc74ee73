/*
 * einsum.c - out = the contraction of a and b by their index notation, for instance "bik,bkj->bij"
 * (batched matmul), "bhqd,bhkd->bhqk" or "ij,j->i"; plain matmul has its own kernel, matmul.c.
 * Letters missing from the output are reduced, accumulating in f32. Owner computes: each core fills
 * the output pages it holds, reading a and b wherever they live, including from other cores when a
 * reduced axis is sharded.
 *
 * Every contraction is a batch of matrix products, computed as matmul.c computes one (contract.h):
 * the output's columns are its last axis, and the operand with that letter is the panel operand,
 * packed in panels of CT_NR columns over k (every combination of the reduced letters, the last
 * fastest); the other operand gives the rows. Output rows that share the panel operand's letters (a
 * batch) and whose columns touch the same panels form a class and multiply those panels. When both operands have the
 * column letter, no panel serves several columns: each output element is then a run of its own.
 * Packing reads runs along k where an operand's last axis is the last reduced letter, across columns
 * where it is the column letter, and one element at a time otherwise.
 *
 * Operands: 0 a, 1 b (inputs), 2 out (output). NDT_INDICES comes from the spec's index notation. When
 * out is Partial, each copy computes its share of the sum over k, by the chunk rule.
 * Parameters: NDT_T stored type; NDT_LOAD(v) and NDT_STORE(v) conversions to and from f32 (NDT_LOAD_PLAIN,
 * NDT_STORE_PLAIN: whether they are the dtype's own, which ndgen sets).
 */
#include <stdint.h>
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
#ifndef NDT_LOAD_PLAIN /* 0 (ndgen sets it) where the spec gives its own NDT_LOAD: then every element read */
#define NDT_LOAD_PLAIN 1 /* goes through it, and no f32 row is read in place */
#endif
#ifndef NDT_STORE_PLAIN /* 0 (ndgen sets it) where the spec gives its own NDT_STORE: then every element */
#define NDT_STORE_PLAIN 1 /* goes through it, and the tile stores no f32 output itself (contract.h) */
#endif
#ifndef NDT_INDICES
#define NDT_INDICES {"ik", "kj", "ij"}
#endif

enum { MAX_LETTERS = 2 * ROWS_MAX_RANK };

/* How one operand's coordinate follows the output's and the reduced letters. */
typedef struct side {
    int rank;
    int64_t dim[ROWS_MAX_RANK];
    int src[ROWS_MAX_RANK]; /* per axis: >= 0, that output axis; < 0, reduced letter -1 - src */
    bool along_k;           /* its last axis is the last reduced letter */
    bool along_j;           /* its last axis is the output's last (the columns) */
} side;

typedef struct plan {
    side s[2];             /* a, b */
    int panel;             /* the operand with the column letter whose panels are packed: 1 (b) unless only a has it */
    bool narrow;           /* both operands have the column letter: runs of one element */
    int ro, nred;
    int64_t od[ROWS_MAX_RANK], pd[ROWS_MAX_RANK];
    int64_t red_size[MAX_LETTERS], K; /* K: the combinations of the reduced letters */
} plan;

/* Operand s's letters ix: those not in out are added to the reduced list red (once each). */
static void plan_side(plan *p, side *s, const char *ix, const char *out, const int64_t *dims, char *red)
{
    s->rank = (int)strlen(ix);
    for (int i = 0; i < s->rank; ++i) {
        s->dim[i] = dims[i];
        const char *at = strchr(out, ix[i]);
        if (at) {
            s->src[i] = (int)(at - out);
            continue;
        }
        const char *known = memchr(red, ix[i], (size_t)p->nred);
        int k = known ? (int)(known - red) : p->nred++;
        red[k] = ix[i];
        p->red_size[k] = known && p->red_size[k] > dims[i] ? p->red_size[k] : dims[i];
        s->src[i] = -1 - k;
    }
}

/* How many of the operand's axes follow source src (an output axis, or -1 - a reduced letter). */
static int count_src(const side *s, int src)
{
    int n = 0;
    for (int i = 0; i < s->rank; ++i)
        n += s->src[i] == src;
    return n;
}

static bool has_axis(const side *s, int axis) { return count_src(s, axis) > 0; }

static void plan_init(plan *p, const char *const *ix, const int64_t *ad, const int64_t *bd, int ro)
{
    char red[MAX_LETTERS];
    p->ro = ro;
    p->nred = 0;
    plan_side(p, &p->s[0], ix[0], ix[2], ad, red);
    plan_side(p, &p->s[1], ix[1], ix[2], bd, red);
    p->K = 1;
    for (int k = 0; k < p->nred; ++k)
        p->K *= p->red_size[k];
    for (int o = 0; o < 2; ++o) {
        side *s = &p->s[o];
        const int last = s->src[s->rank - 1]; /* a run along it moves that letter alone, if no other axis has it */
        s->along_k = p->nred > 0 && last == -p->nred && count_src(s, last) == 1;
        s->along_j = last == ro - 1 && count_src(s, last) == 1;
    }
    p->panel = has_axis(&p->s[1], ro - 1) || !has_axis(&p->s[0], ro - 1);
    p->narrow = has_axis(&p->s[0], ro - 1) && has_axis(&p->s[1], ro - 1);
}

/* The class of a run at output coordinate x: the panel operand's output letters but the columns. */
static int64_t plan_key(const plan *p, const int64_t *x)
{
    int64_t key = 0;
    for (int i = 0; i + 1 < p->ro; ++i)
        key = key * p->od[i] + (has_axis(&p->s[p->panel], i) ? x[i] : 0);
    return key;
}

/*
 * Reading one operand into a pack: lanes by K steps of k from k0. Rows of runs are packed row-major,
 * lane l and step k at pack[l * ld + k]; columns of a panel k-major, at pack[(l / CT_NR) * ld * CT_NR
 * + k * CT_NR + l % CT_NR]. The kernel reads at y, up to max elements, stores them at dst with stride
 * `stride`, and calls pack_next with how many it stored.
 */
typedef struct pack {
    const plan *p;
    const side *s;
    int op;                 /* the operand: 0 a, 1 b */
    const ct_run *runs;     /* lanes are these runs' rows; NULL: columns j0 + l of coordinate base */
    int64_t base[ROWS_MAX_RANK], j0, lanes, k0, K, ld;
    float *pack;
    bool across;            /* read across lanes (columns), one k at a time */
    bool rowwise;           /* lanes are columns, stored as rows (a class of one row: ct_dots) */
    const float **lane_rows; /* rowwise: each lane's row, in place when the operand holds it whole */
    ct_seg *segs;           /* lanes that are runs read along k: each lane's run kept (contract.h), or NULL */
    int64_t l, k;           /* position */
    int64_t y[ROWS_MAX_RANK], max, stride;
    int64_t line;           /* along k: positions from k0 + k to the end of the last reduced letter's line */
    float *dst;
} pack;

/* The operand's coordinate at the position, and where and how much to read. */
static void pack_seek(pack *k)
{
    const plan *p = k->p;
    int64_t q[MAX_LETTERS], rest = k->k0 + k->k, x[ROWS_MAX_RANK];
    for (int i = p->nred - 1; i >= 0; --i) {
        q[i] = rest % p->red_size[i];
        rest /= p->red_size[i];
    }
    memcpy(x, k->runs ? k->runs[k->l].x : k->base, sizeof x);
    if (!k->runs)
        x[p->ro - 1] = k->j0 + k->l;
    for (int i = 0; i < k->s->rank; ++i)
        k->y[i] = k->s->dim[i] == 1 ? 0 : k->s->src[i] >= 0 ? x[k->s->src[i]] : q[-1 - k->s->src[i]];
    if (k->runs || k->rowwise)
        k->dst = k->pack + k->l * k->ld + k->k;
    else
        k->dst = k->pack + (k->l / CT_NR) * k->ld * CT_NR + k->k * CT_NR + k->l % CT_NR;
    k->stride = k->runs || k->rowwise || k->across ? 1 : CT_NR;
    k->line = p->nred > 0 ? p->red_size[p->nred - 1] - q[p->nred - 1] : 1;
    if (k->across) /* the rest of the block's lanes: a run crosses panels (pack_store) */
        k->max = k->lanes - k->l;
    else
        k->max = k->s->along_k ? rows_min(k->K - k->k, k->line) : 1;
}

/* Stores the n values read at the position, converted by NDT_LOAD, at dst, stride apart; a run read across
 * lanes is cut at each panel's end (its next lane is the next panel's first column). */
static inline void pack_store(const pack *k, const NDT_T *v, int64_t n)
{
    if (!k->across) {
        for (int64_t e = 0; e < n; ++e)
            k->dst[e * k->stride] = NDT_LOAD(v[e]);
        return;
    }
    for (int64_t t = 0; t < n;) {
        const int64_t l = k->l + t, m = rows_min(n - t, CT_NR - l % CT_NR);
        float *d = k->pack + (l / CT_NR) * k->ld * CT_NR + k->k * CT_NR + l % CT_NR;
        for (int64_t e = 0; e < m; ++e)
            d[e] = NDT_LOAD(v[t + e]);
        t += m;
    }
}

/* Whether values remain to pack; none when the pack spans no k (a Partial output's part whose chunk of
 * the sum is empty: more parts than k has values). */
static bool pack_more(const pack *k) { return k->K > 0 && (k->across ? k->k < k->K : k->l < k->lanes); }

static void pack_next(pack *k, int64_t n)
{
    if (k->across && (k->l += n) == k->lanes)
        k->l = 0, ++k->k;
    else if (!k->across && (k->k += n) == k->K)
        k->k = 0, ++k->l;
    if (pack_more(k))
        pack_seek(k);
}

/* Starts a pack of `lanes` lanes, zeroing the last group's missing lanes (none when rowwise: ct_dots
 * reads only the lanes there are). */
static pack pack_begin(const plan *p, int op, const ct_run *runs, ct_seg *segs, const int64_t *base, int64_t j0,
                       int64_t lanes, int64_t k0, int64_t K, int64_t ld, float *dst, bool rowwise)
{
    pack k = {.p = p, .s = &p->s[op], .op = op, .runs = runs, .j0 = j0, .lanes = lanes, .k0 = k0, .K = K, .ld = ld,
              .pack = dst, .rowwise = rowwise};
    k.segs = runs && k.s->along_k ? segs : NULL;
    if (base)
        memcpy(k.base, base, sizeof k.base);
    k.across = !runs && !rowwise && k.s->along_j;
    if (runs && !rowwise)
        memset(dst + lanes * ld, 0, (size_t)((ct_round_up(lanes, CT_MR) - lanes) * ld) * sizeof(float));
    else if (!rowwise)
        for (int64_t l = lanes; l % CT_NR; ++l)
            for (int64_t s = 0; s < K; ++s)
                dst[(l / CT_NR) * ld * CT_NR + s * CT_NR + l % CT_NR] = 0.0f;
    if (pack_more(&k))
        pack_seek(&k);
    return k;
}

void einsum(const nda_core *core, const nda_args *args)
{
    const nda_tensor *a = nda_operand(args, 0);
    const nda_tensor *b = nda_operand(args, 1);
    const nda_tensor *out = nda_operand(args, 2);
    static const char *const ix[] = NDT_INDICES;
    int64_t ad[ROWS_MAX_RANK], bd[ROWS_MAX_RANK];
    plan p;
    for (int i = 0; i < nda_rank(a); ++i)
        ad[i] = nda_dim(a, i);
    for (int i = 0; i < nda_rank(b); ++i)
        bd[i] = nda_dim(b, i);
    for (int i = 0; i < nda_rank(out); ++i) {
        p.od[i] = nda_dim(out, i);
        p.pd[i] = nda_page_dim(out, i);
    }
    plan_init(&p, ix, ad, bd, nda_rank(out));
    const bool stream = rows_streaming_output(rows_bytes(p.ro, p.od, (int64_t)sizeof(NDT_T))); /* eltwise_rows.h */
    int64_t k0, k1; /* a Partial out holds one part of the sum over k: this core's copy adds [k0, k1) */
    nda_part_range(core, out, p.K, &k0, &k1);
    ct_run *runs = NULL;
    int64_t nruns = 0, cap = 0;
    bool ok = true;
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        int64_t pc[ROWS_MAX_RANK] = {0}, off;
        ct_run r = {0};
        rows w;
        nda_page_coord(out, nda_iter_page(&it), pc);
        rows_begin(&w, p.ro, p.od, p.pd, pc);
        do {
            const int64_t len = rows_get(&w, r.x, &off), c0 = r.x[p.ro - 1];
            r.key = plan_key(&p, r.x);
            for (int64_t j = 0; j < len; j += r.w) { /* the row, or each element when narrow */
                r.w = p.narrow ? 1 : len;
                r.c0 = r.x[p.ro - 1] = c0 + j;
                r.dst = (NDT_T *)nda_iter_ptr(&it) + off + j;
                ok = ok && ct_push(&runs, &nruns, &cap, &r);
            }
        } while (rows_next(&w));
    }
    if (nruns > 0)
        ct_sort_runs(runs, nruns);
    /* classes of one row each (a matrix-vector product): dot products against the panel operand packed
       as rows, unless it would be packed across its lanes (its last axis is the columns), where the
       tile reads it better */
    const bool dots = ct_one_row_classes(runs, nruns) && !p.s[p.panel].along_j;
    ct_seg *segs = ok && nruns > 0 ? calloc((size_t)nruns, sizeof *segs) : NULL; /* each run's row, read along k */
    ct_work wk;
    const ct_blocks bl = dots ? ct_blocks_rows(k1 - k0) : ct_blocks_here();
    if (!segs || !ct_work_init(&wk, bl, k1 - k0, p.od[p.ro - 1], nruns, CT_IN_PLACE && NDT_STORE_PLAIN && !dots, stream)) {
        free(segs), free(runs); /* no memory: nothing is written; or nothing to write */
        return;
    }
    /* a run's row is read again only past one step of k or one block of columns: else nothing is kept (the
       bookkeeping alone cost scores 2,8,512,64,512 about 10%) */
    ct_seg *keep = k1 - k0 > wk.bl.kc || p.od[p.ro - 1] > wk.ncp * CT_NR ? segs : NULL;
    for (ct_step s = ct_first(&wk, runs, nruns); s.i < nruns; ct_next(&wk, runs, nruns, &s)) {
        pack job[2]; /* the panel operand's block once per step of k, then the step's rows */
        int njobs = 0;
        const int64_t lanes = rows_min((s.jc + s.np) * CT_NR, p.od[p.ro - 1]) - s.jc * CT_NR;
        if (s.ic == 0)
            job[njobs++] = pack_begin(&p, p.panel, NULL, NULL, runs[s.i].x, s.jc * CT_NR, lanes, k0 + s.pc, s.kn,
                                      wk.bl.kc, wk.bpack, dots);
        job[njobs++] = pack_begin(&p, !p.panel, runs + s.i + s.ic, keep ? keep + s.i + s.ic : NULL, NULL, 0, s.mr,
                                  k0 + s.pc, s.kn, wk.bl.kc, wk.apack, dots);
        job[0].lane_rows = dots && s.ic == 0 ? wk.lane_rows : NULL;
        for (int j = 0; j < njobs; ++j)
            for (pack *k = &job[j]; pack_more(k);) {
                int64_t n;
                const NDT_T *v;
                ct_seg *g = k->segs ? &k->segs[k->l] : NULL; /* the lane's run kept from an earlier step of k */
                if (g && ct_seg_holds(g, k->k0 + k->k)) {
                    v = (const NDT_T *)g->p + (k->k0 + k->k - g->at);
                    n = g->at + g->n - (k->k0 + k->k);
                } else {
                    v = k->op ? nda_elem_read(core, b, k->y, &n) : nda_elem_read(core, a, k->y, &n);
                    if (g)
                        *g = (ct_seg){v, k->k0 + k->k, rows_min(n, k->line)}; /* within one line of k */
                }
                n = rows_min(n, k->max);
                if (k->lane_rows && k->k == 0) { /* a lane's row: read in place when it is whole f32, else packed */
                    const bool whole = n == k->K && CT_IN_PLACE && NDT_LOAD_PLAIN;
                    k->lane_rows[k->l] = whole ? (const float *)(const void *)v : k->dst;
                    if (whole) {
                        pack_next(k, n);
                        continue;
                    }
                }
                pack_store(k, v, n);
                pack_next(k, n);
            }
        if (dots)
            ct_product_row(&wk, &s, lanes);
        else
            ct_product(&wk, runs, &s);
        if (ct_stored(&wk, &s))
            CT_STORE_RUNS(&wk, runs, &s, stream)
    }
    ct_work_free(&wk);
    free(segs), free(runs);
}
