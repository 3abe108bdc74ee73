/*
 * tune_chain.c - ndrun tune --chain: the distributions of a chain of ops, and the reshards between them,
 * that make the whole chain fastest, by measurement and dynamic programming.
 *
 * A chain is einsums of two inputs, each after the first taking the previous result as one of its
 * operands, written with the same letters in the same order, with elementwise ops of one input between
 * them, which run on the result before them as it lies. Each einsum's candidates are ndrun tune's for
 * its op (tune.c: its output's letters split, its inputs aligned with them, rows or 32x32 tiles), of
 * which the model's best --top, holding both page kinds, are timed; each elementwise op is timed on each
 * of those candidates' results. Between two einsums, when a candidate's result lies otherwise than a
 * candidate of the next takes it, a reshard (the reshard op, from one distribution to the other) moves
 * it: every such pair's reshard is timed too. Each set (a step's einsums, an elementwise op's runs, a
 * boundary's reshards) is timed in interleaved rounds as ndrun tune times one op.
 *
 * The plan minimizes the sum of those medians. A chain is a path (a step's cost depends on its own
 * candidate and the one before), so dynamic programming over the steps finds the exact minimum in
 * steps x top^2 work: best[s][c] = time[s][c] + min over c' of (best[s-1][c'] + reshard[s][c'][c]). An
 * ILP, as XLA's auto-sharding solves, is what a graph with branches and shared tensors needs; a chain
 * does not. The sum of separately measured medians is the model of the end-to-end time: each piece
 * starts from flushed caches, where in a real chain a small result may still be in cache.
 *
 * --bound says how far the plan can be from the best of the whole space without timing every pair's
 * reshard (a step of 58 candidates would need 58^2): every candidate of every step is timed, and the same
 * dynamic programming over all of them, with the reshards not timed taken as free, gives a time no plan
 * can beat (bound()).
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

enum { CHAIN_STEPS = 8, CHAIN_ELTWISE = 4, CHAIN_TOP_DEFAULT = 3 };

typedef struct chain_step {
    const char *expr;               /* "bx,xy->by" */
    char letters[3][ND_MAX_RANK + 1]; /* the step's operands' letters: a, b, out */
    int chained;                    /* the operand taking the previous result; -1: the first step */
    char shape[256];                /* the op's --shape: sizes in its letters' order */
    tune_job j;                     /* the einsum's candidates (tune.c) */
    int top;                        /* j.c[0 .. top) are timed */
    const char *eltwise[CHAIN_ELTWISE]; /* elementwise ops after it, on its result */
    int neltwise;
    nr_tune_timing einsum[TUNE_TOP_MAX];
    double cost[TUNE_TOP_MAX], cost_half[TUNE_TOP_MAX]; /* einsum and elementwise ops: seconds, +- */
    bool moves[TUNE_TOP_MAX][TUNE_TOP_MAX]; /* [c'][c]: the previous step's c' result needs a reshard */
    nr_tune_timing reshard[TUNE_TOP_MAX][TUNE_TOP_MAX];
    double best[TUNE_TOP_MAX], aligned[TUNE_TOP_MAX]; /* the DP: best plan ending here; without reshards */
    int from[TUNE_TOP_MAX], from_aligned[TUNE_TOP_MAX];
    /* --bound: every candidate j.c[0 .. j.n) timed with its elementwise ops in one set, of which the
     * first top are the ones above (their cost[] is taken from these same rounds); NULL without it.
     * all_best[c]: the least any plan ending in c can take, reshards timed at their medians and the rest
     * free; all_from[c]: the candidate before c on that plan. */
    double *all_cost, *all_half, *all_best;
    int *all_from;
} chain_step;

typedef struct chain {
    const char *shape, *grid, *dtype, *json_out;
    int top, rounds;
    bool bound;                     /* --bound: every candidate of each einsum timed, for a bound on every plan */
    nr_settings s;
    int64_t size[128];              /* each letter's size */
    chain_step step[CHAIN_STEPS];
    int n;
    int plan[CHAIN_STEPS], plan_aligned[CHAIN_STEPS], greedy[CHAIN_STEPS];
    double total, total_half, total_aligned, total_greedy;
    double bound_total, bound_half; /* --bound: the least any plan over every candidate can take (bound()) */
    int bound_plan[CHAIN_STEPS];
    bool checked;                   /* every timed einsum, elementwise op and reshard agreed with its reference */
} chain;

/* ---------------------------------------------------------------- the chain's steps */

/* "bx,xy->by": three letter strings of lowercase letters, each letter once per operand. */
static int parse_expr(const char *text, char (*out)[ND_MAX_RANK + 1], nd_error *err)
{
    const char *p = text;
    for (int k = 0; k < 3; ++k) {
        int n = 0;
        for (; *p >= 'a' && *p <= 'z'; ++p) {
            if (n == ND_MAX_RANK || memchr(out[k], *p, (size_t)n))
                return nd_fail(err, "--chain %s: operand %d %s", text, k + 1,
                               n == ND_MAX_RANK ? "has too many letters" : "repeats a letter");
            out[k][n++] = *p;
        }
        out[k][n] = '\0';
        const char *sep = k == 0 ? "," : k == 1 ? "->" : "";
        if (n == 0 || strncmp(p, sep, strlen(sep)) != 0 || (k == 2 && *p))
            return nd_fail(err, "--chain %s: expected an einsum of two inputs, such as bx,xy->by (lowercase "
                                "letters), or an elementwise op's name", text);
        p += strlen(sep);
    }
    return 0;
}

/* The op whose letters are the step's under a renaming (matmul ik,kj->ij for bx,xy->by), or NULL. */
static const nda_kernel_entry *match_op(nd_kernels *k, const chain_step *st)
{
    for (int i = 0; i < nd_kernels_count(k); ++i) {
        const nda_kernel_entry *e = nd_kernels_entry(k, i);
        if (!e->indices || e->signatures || !nr_named_indices(e))
            continue;
        char map[128] = {0}, back[128] = {0}; /* op letter -> step letter, and back */
        bool same = true;
        for (int o = 0; o < 3 && same; ++o) {
            const char *x = e->indices[o], *y = st->letters[o];
            same = strlen(x) == strlen(y);
            for (; same && *x; ++x, ++y) {
                unsigned char a = (unsigned char)*x, b = (unsigned char)*y;
                same = a < 128 && (map[a] == 0 || map[a] == (char)b) && (back[b] == 0 || back[b] == (char)a);
                if (same)
                    map[a] = (char)b, back[b] = (char)a;
            }
        }
        if (same)
            return e;
    }
    return NULL;
}

/* Elementwise op `name` after step s: an op of the libraries with one input and one output over the
 * same dims (`...`), each output element reading its input at its own coordinates or along its row
 * (relu, gelu, softmax), and no launch scalars: it runs on the result as it lies and leaves it so. */
static int check_eltwise(nd_kernels *k, const char *name, nd_error *err)
{
    bool named = false;
    for (int i = 0; i < nd_kernels_count(k); ++i) {
        const nda_kernel_entry *e = nd_kernels_entry(k, i);
        if (strcmp(e->op, name) != 0)
            continue;
        named = true;
        if (e->noperands == 2 && e->noutputs == 1 && e->indices && !strcmp(e->indices[0], "...") &&
            !strcmp(e->indices[1], "...") && !e->scalars && !e->partial &&
            (e->reads == NDA_READS_POINTWISE || e->reads == NDA_READS_LAST_AXIS))
            return 0;
    }
    return named ? nd_failc(err, ND_EREFUSED, "--chain %s: not an op of one input that keeps its dims and reads "
                                              "each element where it lies or along its row (relu, gelu, softmax, "
                                              "...): a chain runs it on the result as it lies", name)
                 : nd_failc(err, ND_ENOENT, "--chain %s: no such op in the kernel libraries", name);
}

/* The step's einsum job: its op, and its --shape in the op's letter order (the step's letters' sizes). */
static int setup_step(chain *ch, nd_kernels *k, int s, nd_error *err)
{
    chain_step *st = &ch->step[s];
    if (parse_expr(st->expr, st->letters, err))
        return -1;
    for (int e = 0; e < st->neltwise; ++e)
        if (check_eltwise(k, st->eltwise[e], err))
            return -1;
    const nda_kernel_entry *e = match_op(k, st);
    if (!e)
        return nd_failc(err, ND_EREFUSED, "--chain %s: no einsum op of two inputs in the kernel libraries has "
                                          "these letters under a renaming (matmul ik,kj->ij, bmm bik,bkj->bij, "
                                          "scores bhqd,bhkd->bhqk, matvec ij,j->i, ...)",
                        st->expr);
    int at = 0;
    char seen[64] = "";
    for (int o = 0; o < 3; ++o)
        for (int i = 0; e->indices[o][i]; ++i) {
            char l = st->letters[o][i];
            if (strchr(seen, l))
                continue;
            strncat(seen, &l, 1);
            if (!ch->size[(unsigned char)l])
                return nd_fail(err, "--shape %s: no size for letter '%c' of %s", ch->shape, l, st->expr);
            at += snprintf(st->shape + at, sizeof st->shape - (size_t)at, "%s%lld", at ? "," : "",
                           (long long)ch->size[(unsigned char)l]);
        }
    st->chained = -1;
    if (s > 0) {
        const char *prev = ch->step[s - 1].letters[2];
        st->chained = !strcmp(st->letters[0], prev) ? 0 : !strcmp(st->letters[1], prev) ? 1 : -1;
        if (st->chained < 0)
            return nd_failc(err, ND_EREFUSED, "--chain %s: neither input is the previous result '%s' as written "
                                              "(the same letters in the same order; a chain does not permute)",
                            st->expr, prev);
    }
    tune_job *j = &st->j;
    j->o.op = e->op, j->o.shape = st->shape, j->o.grid = ch->grid, j->o.dtype = ch->dtype;
    j->o.top = ch->top, j->o.rounds = ch->rounds;
    j->s = ch->s;
    if (nr_tune_prepare(j, k, err)) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return nd_fail(err, "--chain %s (%s %s): %s", st->expr, e->op, st->shape, why);
    }
    st->top = ch->top < j->n ? ch->top : j->n;
    nr_tune_both_page_kinds(j, st->top);
    return 0;
}

/* Candidate c of step s as the step's letters split: "--split b=1,y=2 --tile 32x32". */
static void cand_text(char *buf, size_t len, const chain *ch, int s, int c)
{
    const chain_step *st = &ch->step[s];
    const cand *x = &st->j.c[c];
    if (x->summed) { /* the step's letter at the op letter's place */
        for (int k = 0; k < 2; ++k)
            for (int i = 0; st->j.letters[k][i]; ++i)
                if (st->j.letters[k][i] == x->summed) {
                    snprintf(buf, len, "--sum-over %c=%lld", st->letters[k][i], (long long)st->j.cores);
                    return;
                }
    }
    int at = snprintf(buf, len, "--split ");
    for (int d = 0; st->letters[2][d] && at >= 0 && (size_t)at < len; ++d)
        at += snprintf(buf + at, len - (size_t)at, "%s%c=%lld", d ? "," : "", st->letters[2][d], (long long)x->ways[d]);
    if (x->tiles && at >= 0 && (size_t)at < len)
        snprintf(buf + at, len - (size_t)at, " --tile 32x32");
}

/* ---------------------------------------------------------------- what is timed */

/* The result of step s under its candidate c, or its operand k: shape, shard, rank; tiles in *tiles. */
static int operand_dims(const chain *ch, int s, int c, int k, int64_t *shape, int64_t *shard, bool *tiles)
{
    const chain_step *st = &ch->step[s];
    *tiles = st->j.c[c].tiles;
    return nr_tune_operand_dims(&st->j, &st->j.c[c], k, shape, shard);
}

/* One set of cases to time: step s's elementwise op e's runs, or its reshards. */
typedef struct timing_set {
    chain *ch;
    int s, e;                       /* e: the elementwise op; -2: the reshards */
    int pair[TUNE_TOP_MAX * TUNE_TOP_MAX][2]; /* reshards: previous candidate, this one */
    char text[6][200];              /* the strings of the case being opened */
} timing_set;

static int make_case(void *ctx, int i, nr_case *out, nd_error *err)
{
    timing_set *t = ctx;
    const chain *ch = t->ch;
    const chain_step *st = &ch->step[t->s];
    const char *a[24];
    int n = 0;
    int64_t shape[ND_MAX_RANK], shard[ND_MAX_RANK];
    bool tiles;
    a[n++] = "--grid", a[n++] = ch->grid;
    if (ch->dtype)
        a[n++] = "--dtype", a[n++] = ch->dtype;
    if (t->e >= 0) { /* the elementwise op on candidate i's result, as it lies */
        int r = operand_dims(ch, t->s, i, 2, shape, shard, &tiles);
        nr_tune_format_dims(t->text[0], sizeof t->text[0], shape, r);
        nr_tune_format_dims(t->text[1], sizeof t->text[1], shard, r);
        a[n++] = "--op", a[n++] = st->eltwise[t->e], a[n++] = "--shape", a[n++] = t->text[0];
        a[n++] = "--shard", a[n++] = t->text[1];
        if (tiles)
            a[n++] = "--tile", a[n++] = "32x32";
        char text[160];
        cand_text(text, sizeof text, ch, t->s, i);
        snprintf(t->text[5], sizeof t->text[5], "%s after step %d's %s", st->eltwise[t->e], t->s + 1, text);
        return nr_case_from_args(t->text[5], a, n, out, err);
    }
    /* a reshard from the previous step's candidate's result to this candidate's chained operand */
    const int from = t->pair[i][0], to = t->pair[i][1];
    bool tiles_to;
    int64_t shard_to[ND_MAX_RANK];
    int r = operand_dims(ch, t->s - 1, from, 2, shape, shard, &tiles);
    operand_dims(ch, t->s, to, st->chained, shape, shard_to, &tiles_to);
    nr_tune_format_dims(t->text[0], sizeof t->text[0], shape, r);
    nr_tune_format_dims(t->text[1], sizeof t->text[1], shard, r);
    nr_tune_format_dims(t->text[2], sizeof t->text[2], shard_to, r);
    a[n++] = "--op", a[n++] = "reshard", a[n++] = "--shape", a[n++] = t->text[0];
    a[n++] = "--operand", a[n++] = "a", a[n++] = "--shard", a[n++] = t->text[1];
    if (tiles)
        a[n++] = "--tile", a[n++] = "32x32";
    a[n++] = "--operand", a[n++] = "out", a[n++] = "--shard", a[n++] = t->text[2];
    if (tiles_to)
        a[n++] = "--tile", a[n++] = "32x32";
    snprintf(t->text[5], sizeof t->text[5], "reshard %d -> %d before step %d", from + 1, to + 1, t->s + 1);
    return nr_case_from_args(t->text[5], a, n, out, err);
}

/* Whether the previous step's candidate `from` leaves its result otherwise than candidate `to` of step s
 * takes it (shards and page kind; both dealt round robin over the same grid, so equal shards lie alike). */
static bool needs_reshard(const chain *ch, int s, int from, int to)
{
    int64_t shape[ND_MAX_RANK], a[ND_MAX_RANK], b[ND_MAX_RANK];
    bool ta, tb;
    int r = operand_dims(ch, s - 1, from, 2, shape, a, &ta);
    operand_dims(ch, s, to, ch->step[s].chained, shape, b, &tb);
    return ta != tb || memcmp(a, b, (size_t)r * sizeof *a) != 0;
}

/* Moves candidate c of step s into its timed set (after the timed ones), unless it is there. */
static void add_timed(chain_step *st, int c)
{
    if (c < st->top || c >= st->j.n || st->top == TUNE_TOP_MAX)
        return;
    cand x = st->j.c[c];
    memmove(&st->j.c[st->top + 1], &st->j.c[st->top], (size_t)(c - st->top) * sizeof *st->j.c);
    st->j.c[st->top++] = x;
}

/* The model ranks each step alone, so its best of two steps may never line up. For each timed candidate
 * of step s - 1, the model's best candidate of step s that takes its result as it lies joins step s's
 * timed set (forward: at s); for each timed candidate of step s, the model's best of step s - 1 whose
 * result it takes as it lies joins step s - 1's (backward); each of both page kinds, where one exists.
 * The plan then weighs staying aligned against resharding wherever either side's model allows. */
static void add_aligned(chain *ch, int s, bool forward)
{
    chain_step *st = &ch->step[s], *prev = &ch->step[s - 1];
    const int n = forward ? prev->top : st->top;
    chain_step *to = forward ? st : prev;
    for (int i = 0; i < n; ++i)
        for (int tiles = 0; tiles < 2; ++tiles) { /* the best of each page kind: the model does not see it */
            int c = 0;
            while (c < to->j.n && (to->j.c[c].tiles != tiles ||
                                   (forward ? needs_reshard(ch, s, i, c) : needs_reshard(ch, s, c, i))))
                ++c;
            add_timed(to, c);
        }
}

/* For each page kind, the pair of candidates of steps s - 1 and s that line up (the first's result as the
 * second takes it) with the least sum of model ranks joins both timed sets: with each step ranked alone,
 * a plan that never reshards (data parallel, say) may otherwise never be timed at all. */
static void add_aligned_pair(chain *ch, int s)
{
    chain_step *st = &ch->step[s], *prev = &ch->step[s - 1];
    for (int tiles = 0; tiles < 2; ++tiles) {
        int bp = -1, bc = -1;
        for (int p = 0; p < prev->j.n && (bp < 0 || p < bp + bc); ++p)
            for (int c = 0; prev->j.c[p].tiles == tiles && c < st->j.n && (bp < 0 || p + c < bp + bc); ++c)
                if (!needs_reshard(ch, s, p, c))
                    bp = p, bc = c;
        if (bp >= 0) {
            add_timed(prev, bp);
            add_timed(st, bc);
        }
    }
}

/* Step s's einsum candidates j.c[0 .. m) checked, then timed in one set, and each elementwise op on each
 * of their results in another: cost[c] (seconds) and half[c] (the 95% half widths summed, in seconds)
 * of einsum and elementwise ops together, and the einsum's own timing in einsum[c]. */
static int time_candidates(chain *ch, nd_kernels *k, int s, int m, timing_set *t, nr_tune_timing *einsum,
                           double *cost, double *half, nd_error *err)
{
    chain_step *st = &ch->step[s];
    nr_tune_timing *elt = calloc((size_t)m, sizeof *elt);
    int rc = elt ? 0 : nd_failc(err, ND_ENOMEM, "out of memory");
    for (int c = 0; c < m && !rc; ++c) { /* as a one-op tune checks its candidates */
        bool checked = false;
        rc = nr_tune_verify(&st->j, k, &st->j.c[c], &checked, err);
        ch->checked = ch->checked && checked;
    }
    rc = rc || nr_tune_time_candidates(&st->j, k, m, einsum, err);
    for (int c = 0; c < m && !rc; ++c)
        cost[c] = einsum[c].median, half[c] = einsum[c].median * einsum[c].half;
    for (int e = 0; e < st->neltwise && !rc; ++e) {
        t->e = e;
        rc = nr_tune_time(k, &ch->s, m, ch->rounds, make_case, t, elt, &ch->checked, err);
        for (int c = 0; c < m && !rc; ++c)
            cost[c] += elt[c].median, half[c] += elt[c].median * elt[c].half;
    }
    free(elt);
    return rc;
}

/* Step s: its timed candidates (with --bound, every candidate, in the same rounds), then the reshards into
 * it from the previous step's timed candidates. */
static int time_step(chain *ch, nd_kernels *k, int s, nd_error *err)
{
    chain_step *st = &ch->step[s];
    const int m = ch->bound ? st->j.n : st->top;
    timing_set *t = calloc(1, sizeof *t);
    nr_tune_timing *einsum = calloc((size_t)m, sizeof *einsum);
    double *cost = calloc((size_t)m, sizeof *cost), *half = calloc((size_t)m, sizeof *half);
    int rc = t && einsum && cost && half ? 0 : nd_failc(err, ND_ENOMEM, "out of memory");
    if (t)
        t->ch = ch, t->s = s;
    rc = rc || time_candidates(ch, k, s, m, t, einsum, cost, half, err);
    for (int c = 0; c < st->top && !rc; ++c)
        st->einsum[c] = einsum[c], st->cost[c] = cost[c], st->cost_half[c] = half[c];
    int npairs = 0;
    for (int from = 0; !rc && s > 0 && from < ch->step[s - 1].top; ++from)
        for (int to = 0; to < st->top; ++to)
            if ((st->moves[from][to] = needs_reshard(ch, s, from, to)))
                t->pair[npairs][0] = from, t->pair[npairs++][1] = to;
    nr_tune_timing *r = rc ? NULL : calloc((size_t)npairs + 1, sizeof *r);
    if (!rc) {
        t->e = -2;
        rc = r ? npairs ? nr_tune_time(k, &ch->s, npairs, ch->rounds, make_case, t, r, &ch->checked, err) : 0
               : nd_failc(err, ND_ENOMEM, "out of memory");
    }
    for (int i = 0; i < npairs && !rc; ++i)
        st->reshard[t->pair[i][0]][t->pair[i][1]] = r[i];
    if (!rc && ch->bound) {
        st->all_best = calloc((size_t)m, sizeof *st->all_best), st->all_from = calloc((size_t)m, sizeof *st->all_from);
        rc = st->all_best && st->all_from ? 0 : nd_failc(err, ND_ENOMEM, "out of memory");
        st->all_cost = cost, st->all_half = half, cost = half = NULL;
    }
    free(r);
    free(cost);
    free(half);
    free(einsum);
    free(t);
    return rc;
}

/* ---------------------------------------------------------------- the plan */

static double reshard_cost(const chain *ch, int s, int from, int to, bool half)
{
    const chain_step *st = &ch->step[s];
    if (!st->moves[from][to])
        return 0;
    return half ? st->reshard[from][to].median * st->reshard[from][to].half : st->reshard[from][to].median;
}

/* The reshard from candidate p of step s - 1 into candidate c of step s as far as it is known: its median
 * when both were timed (the --top), 0 when the result lies as c takes it, and 0 (a bound: a reshard
 * takes no less) when it would be needed but was not timed. */
static double reshard_known(const chain *ch, int s, int p, int c)
{
    if (p < ch->step[s - 1].top && c < ch->step[s].top)
        return reshard_cost(ch, s, p, c, false);
    return 0;
}

/* --bound: the same dynamic programming as plan(), over every candidate of every step, with the reshards
 * reshard_known gives. Every plan of the whole space costs at least its steps' medians and the timed
 * reshards on it, so none is faster than the least of these, bound_total; the timed plans are among
 * them with their real costs, so bound_total is at most the plan's total (the same medians). */
static void bound(chain *ch)
{
    for (int s = 0; s < ch->n; ++s) {
        chain_step *st = &ch->step[s];
        for (int c = 0; c < st->j.n; ++c) {
            double best = s ? INFINITY : 0;
            st->all_from[c] = -1;
            for (int p = 0; s > 0 && p < ch->step[s - 1].j.n; ++p) {
                const double via = ch->step[s - 1].all_best[p] + reshard_known(ch, s, p, c);
                if (via < best)
                    best = via, st->all_from[c] = p;
            }
            st->all_best[c] = best + st->all_cost[c];
        }
    }
    const chain_step *last = &ch->step[ch->n - 1];
    int end = 0;
    for (int c = 1; c < last->j.n; ++c)
        end = last->all_best[c] < last->all_best[end] ? c : end;
    ch->bound_total = last->all_best[end];
    ch->bound_half = 0;
    for (int s = ch->n - 1, c = end; s >= 0; c = ch->step[s].all_from[c], --s) {
        ch->bound_plan[s] = c;
        ch->bound_half += ch->step[s].all_half[c];
        if (s > 0 && ch->step[s].all_from[c] < ch->step[s - 1].top && c < ch->step[s].top)
            ch->bound_half += reshard_cost(ch, s, ch->step[s].all_from[c], c, true);
    }
    assert(ch->bound_total <= ch->total * (1 + 1e-12));
}

/* best[s][c] over every plan ending in c, and the same over plans without a reshard (INFINITY: none). */
static void plan(chain *ch)
{
    for (int s = 0; s < ch->n; ++s) {
        chain_step *st = &ch->step[s];
        for (int c = 0; c < st->top; ++c) {
            double best = s ? INFINITY : 0, aligned = s ? INFINITY : 0;
            st->from[c] = st->from_aligned[c] = -1;
            for (int p = 0; s > 0 && p < ch->step[s - 1].top; ++p) {
                double via = ch->step[s - 1].best[p] + reshard_cost(ch, s, p, c, false);
                if (via < best)
                    best = via, st->from[c] = p;
                if (!st->moves[p][c] && ch->step[s - 1].aligned[p] < aligned)
                    aligned = ch->step[s - 1].aligned[p], st->from_aligned[c] = p;
            }
            st->best[c] = best + st->cost[c];
            st->aligned[c] = aligned + st->cost[c];
        }
    }
    const chain_step *last = &ch->step[ch->n - 1];
    int end = 0, end_aligned = 0;
    for (int c = 1; c < last->top; ++c) {
        end = last->best[c] < last->best[end] ? c : end;
        end_aligned = last->aligned[c] < last->aligned[end_aligned] ? c : end_aligned;
    }
    ch->total = last->best[end], ch->total_aligned = last->aligned[end_aligned];
    for (int s = ch->n - 1, c = end, a = end_aligned; s >= 0; --s) {
        ch->plan[s] = c, ch->plan_aligned[s] = a;
        c = ch->step[s].from[c], a = a >= 0 ? ch->step[s].from_aligned[a] : -1;
    }
    ch->total_half = ch->total_greedy = 0;
    for (int s = 0; s < ch->n; ++s) {
        const chain_step *st = &ch->step[s];
        int g = 0;
        for (int c = 1; c < st->top; ++c)
            g = st->cost[c] < st->cost[g] ? c : g;
        ch->greedy[s] = g;
        ch->total_greedy += st->cost[g] + (s ? reshard_cost(ch, s, ch->greedy[s - 1], g, false) : 0);
        ch->total_half += st->cost_half[ch->plan[s]] + (s ? reshard_cost(ch, s, ch->plan[s - 1], ch->plan[s], true) : 0);
    }
    if (ch->bound)
        bound(ch);
}

/* ---------------------------------------------------------------- the report */

/* The spec target of the result of step s's candidate c, as the next op or reshard takes it. */
static void result_target(char *buf, size_t len, const chain *ch, int s, int c, int k)
{
    int64_t shape[ND_MAX_RANK], shard[ND_MAX_RANK];
    bool tiles;
    int r = operand_dims(ch, s, c, k, shape, shard, &tiles);
    nr_tune_lua_dist(buf, len, ch->grid, ch->dtype, shape, shard, r, tiles);
}

/* ", fixed = \"pattern\"" for targets whose kernels fix less than all (--fixed), else "". */
static const char *fixed_suffix(const chain *ch)
{
    static char buf[64];
    buf[0] = '\0';
    if (strcmp(ch->s.fixed, "all") != 0)
        snprintf(buf, sizeof buf, ", fixed = \"%s\"", ch->s.fixed);
    return buf;
}

/* --bound: the least time of any plan over every candidate, and where the plan stands against it. */
static void report_bound(FILE *fp, const chain *ch)
{
    fprintf(fp, "bound: every candidate of every einsum timed with its elementwise ops (");
    for (int s = 0; s < ch->n; ++s)
        fprintf(fp, "%s%d", s ? " + " : "", ch->step[s].j.n);
    fprintf(fp, "); reshards between timed candidates at their medians, the others taken as free:\n"
                "  no plan of the whole space takes less than %.3f ms +-%.3f, the least of them:",
            ch->bound_total * 1e3, ch->bound_half * 1e3);
    bool same = true;
    for (int s = 0; s < ch->n; ++s) {
        char text[160];
        const int c = ch->bound_plan[s];
        cand_text(text, sizeof text, ch, s, c);
        fprintf(fp, "%s step %d %s (%.3f ms)", s ? "," : "", s + 1, text, ch->step[s].all_cost[c] * 1e3);
        same = same && c == ch->plan[s];
    }
    const double gap = ch->total - ch->bound_total;
    if (same)
        fprintf(fp, "\n  that is the plan: by these medians, no plan of the whole space is faster\n");
    else if (ch->total_half > NR_TIGHT * ch->total || ch->bound_half > NR_TIGHT * ch->bound_total)
        fprintf(fp, "\n  the plan is %.3f ms (%.1f%%) above it, but the intervals are wider than %.0f%%: too noisy to "
                    "say whether a plan of the whole space is faster; rerun (more --repeats)\n", gap * 1e3,
                100 * gap / ch->bound_total, 100 * NR_TIGHT);
    else if (gap <= ch->total_half + ch->bound_half)
        fprintf(fp, "\n  the plan is %.3f ms (%.1f%%) above it, within the noise: no plan of the whole space is "
                    "faster beyond the noise\n", gap * 1e3, 100 * gap / ch->bound_total);
    else
        fprintf(fp, "\n  the plan is %.3f ms (%.1f%%) above it, more than the noise: a plan through candidates "
                    "outside the --top may be faster, by at most that (a larger --top times their reshards)\n",
                gap * 1e3, 100 * gap / ch->bound_total);
}

static void report_text(FILE *fp, const chain *ch)
{
    fprintf(fp, "chain of %d einsums on %s (%s), %s: the model's best %d of each and those that line up with a "
                "neighbour's timed, with their elementwise ops and reshards\n", ch->n, ch->grid,
            ch->dtype ? ch->dtype : "f32", ch->shape, ch->top);
    for (int s = 0; s < ch->n; ++s) {
        const chain_step *st = &ch->step[s];
        fprintf(fp, "step %d: %s (%s %s)", s + 1, st->expr, st->j.o.op, st->shape);
        for (int e = 0; e < st->neltwise; ++e)
            fprintf(fp, ", then %s", st->eltwise[e]);
        fprintf(fp, "\n  cand  %-36s %12s %12s  (medians; step = einsum + elementwise)\n", "candidate", "einsum",
                "step");
        for (int c = 0; c < st->top; ++c) {
            char text[160];
            cand_text(text, sizeof text, ch, s, c);
            fprintf(fp, "  %4d  %-36s %9.3f ms %9.3f ms%s\n", c + 1, text, st->einsum[c].median * 1e3,
                    st->cost[c] * 1e3, c == ch->plan[s] ? "  <- planned" : "");
        }
        if (s == 0)
            continue;
        fprintf(fp, "  reshards of step %d's result into step %d (row: step %d's candidate; '-': it lies as taken), ms\n"
                    "       ", s, s + 1, s);
        for (int c = 0; c < st->top; ++c)
            fprintf(fp, " %8d", c + 1);
        for (int p = 0; p < ch->step[s - 1].top; ++p) {
            fprintf(fp, "\n  %4d ", p + 1);
            for (int c = 0; c < st->top; ++c)
                if (st->moves[p][c])
                    fprintf(fp, " %8.3f", st->reshard[p][c].median * 1e3);
                else
                    fprintf(fp, " %8s", "-");
        }
        fputc('\n', fp);
    }
    fprintf(fp, "%s\n", ch->checked ? "checked first: every timed einsum candidate, elementwise op and reshard agrees with "
                                      "its op's reference"
                                    : "not all checked: an op timed here has no reference in its spec");
    fprintf(fp, "plan:");
    for (int s = 0; s < ch->n; ++s)
        fprintf(fp, "%s step %d candidate %d%s", s ? "," : "", s + 1, ch->plan[s] + 1,
                s && ch->step[s].moves[ch->plan[s - 1]][ch->plan[s]] ? " after a reshard" : "");
    fprintf(fp, "\n  %.3f ms +-%.3f: the sum of the medians (+- the sum of their 95%% half widths)\n", ch->total * 1e3,
            ch->total_half * 1e3);
    fprintf(fp, "  each step's own fastest, with the reshards between them: %.3f ms\n", ch->total_greedy * 1e3);
    if (isinf(ch->total_aligned))
        fprintf(fp, "  every plan of the timed candidates reshards somewhere\n");
    else
        fprintf(fp, "  the best plan without a reshard: %.3f ms\n", ch->total_aligned * 1e3);
    if (memcmp(ch->greedy, ch->plan, (size_t)ch->n * sizeof *ch->plan) != 0 &&
        fabs(ch->total_greedy - ch->total) <= ch->total_half)
        fprintf(fp, "  (the plan and the steps' own fastest differ by less than the noise: a tie)\n");
    if (!isinf(ch->total_aligned) && memcmp(ch->plan_aligned, ch->plan, (size_t)ch->n * sizeof *ch->plan) != 0 &&
        ch->total_aligned - ch->total <= ch->total_half)
        fprintf(fp, "  (the plan and the best without a reshard differ by less than the noise: a tie)\n");
    if (ch->bound)
        report_bound(fp, ch);
    fprintf(fp, "spec targets:\n");
    char lua[1600];
    for (int s = 0; s < ch->n; ++s) {
        const chain_step *st = &ch->step[s];
        const int c = ch->plan[s];
        if (s && st->moves[ch->plan[s - 1]][c]) {
            char from[512], to[512];
            result_target(from, sizeof from, ch, s - 1, ch->plan[s - 1], 2);
            result_target(to, sizeof to, ch, s, c, st->chained);
            fprintf(fp, "  step %d, reshard: { a = %s, out = %s%s }\n", s + 1, from, to, fixed_suffix(ch));
        }
        nr_tune_spec_target(lua, sizeof lua, &st->j, &st->j.c[c]);
        fprintf(fp, "  step %d, %s: %s\n", s + 1, st->j.o.op, lua);
        nr_tune_spec_then(lua, sizeof lua, &st->j, &st->j.c[c]);
        if (lua[0])
            fprintf(fp, "  step %d, reduce_scatter: %s\n", s + 1, lua);
        for (int e = 0; e < st->neltwise; ++e) {
            result_target(lua, sizeof lua, ch, s, c, 2);
            fprintf(fp, "  step %d, %s: { all = %s%s }\n", s + 1, st->eltwise[e], lua, fixed_suffix(ch));
        }
    }
}

static void json_seconds(FILE *fp, double v)
{
    if (isfinite(v))
        fprintf(fp, "%.17g", v);
    else
        fputs("null", fp);
}

static void report_json(FILE *fp, const void *ctx)
{
    const chain *ch = ctx;
    fprintf(fp, "{\n  \"grid\": \"%s\", \"shape\": \"%s\", \"top\": %d, \"checked\": %s,\n  \"steps\": [\n", ch->grid,
            ch->shape, ch->top, ch->checked ? "true" : "false");
    for (int s = 0; s < ch->n; ++s) {
        const chain_step *st = &ch->step[s];
        fprintf(fp, "    {\"einsum\": \"%s\", \"op\": \"%s\", \"eltwise\": [", st->expr, st->j.o.op);
        for (int e = 0; e < st->neltwise; ++e)
            fprintf(fp, "%s\"%s\"", e ? ", " : "", st->eltwise[e]);
        fputs("],\n     \"candidates\": [\n", fp);
        for (int c = 0; c < st->top; ++c) {
            char lua[1600], text[160];
            nr_tune_spec_target(lua, sizeof lua, &st->j, &st->j.c[c]);
            cand_text(text, sizeof text, ch, s, c);
            fprintf(fp, "       {\"candidate\": \"%s\", \"einsum_seconds\": %.17g, \"step_seconds\": %.17g, "
                        "\"best_seconds\": %.17g, \"spec_target\": ", text, st->einsum[c].median, st->cost[c],
                    st->best[c]);
            nr_json_str(fp, lua);
            nr_tune_spec_then(lua, sizeof lua, &st->j, &st->j.c[c]);
            if (lua[0]) {
                fputs(", \"then_reduce_scatter\": ", fp);
                nr_json_str(fp, lua);
            }
            fprintf(fp, "}%s\n", c + 1 < st->top ? "," : "");
        }
        fputs("     ],\n     \"reshard_seconds\": [", fp); /* [previous candidate][candidate]; null: none needed */
        for (int p = 0; s > 0 && p < ch->step[s - 1].top; ++p) {
            fprintf(fp, "%s[", p ? ", " : "");
            for (int c = 0; c < st->top; ++c) {
                fputs(c ? ", " : "", fp);
                json_seconds(fp, st->moves[p][c] ? st->reshard[p][c].median : NAN);
            }
            fputc(']', fp);
        }
        fputc(']', fp);
        if (ch->bound) { /* every candidate, in the order of "all_candidates"; the first are "candidates" */
            fputs(",\n     \"all_candidates\": [", fp);
            for (int c = 0; c < st->j.n; ++c) {
                char text[160];
                cand_text(text, sizeof text, ch, s, c);
                fputs(c ? ", " : "", fp);
                nr_json_str(fp, text);
            }
            fputs("],\n     \"all_step_seconds\": [", fp);
            for (int c = 0; c < st->j.n; ++c)
                fprintf(fp, "%s%.17g", c ? ", " : "", st->all_cost[c]);
            fputc(']', fp);
        }
        fprintf(fp, "}%s\n", s + 1 < ch->n ? "," : "");
    }
    fputs("  ],\n  \"plan\": [", fp);
    for (int s = 0; s < ch->n; ++s)
        fprintf(fp, "%s%d", s ? ", " : "", ch->plan[s]);
    fprintf(fp, "],\n  \"total_seconds\": %.17g, \"total_half_width_seconds\": %.17g, \"greedy_seconds\": %.17g, "
                "\"aligned_seconds\": ", ch->total, ch->total_half, ch->total_greedy);
    json_seconds(fp, ch->total_aligned);
    if (ch->bound)
    {
        fprintf(fp, ",\n  \"bound_seconds\": %.17g, \"bound_half_width_seconds\": %.17g, \"bound_plan\": [",
                ch->bound_total, ch->bound_half);
        for (int s = 0; s < ch->n; ++s)
            fprintf(fp, "%s%d", s ? ", " : "", ch->bound_plan[s]);
        fputc(']', fp);
    }
    fputs("\n}\n", fp);
}

/* ---------------------------------------------------------------- the command */

static const char chain_usage[] =
    "usage: ndrun tune --chain STEP... --shape L=N,... --grid XxY [options]\n"
    "\n"
    "The distributions of a chain of ops, and the reshards between them, that make the chain fastest.\n"
    "Each STEP is an einsum of two inputs (such as bx,xy->by: matmul, bmm, scores, matvec under any\n"
    "letters), each after the first taking the previous result as one input, written with the same\n"
    "letters, or an elementwise op of one input (relu, gelu, ...), which runs on the result before it as\n"
    "it lies. Each einsum's candidates are ndrun tune's for its op; the model's best --top of each (both\n"
    "page kinds) are timed, with the elementwise ops on their results and a reshard for every pair of\n"
    "candidates of consecutive einsums whose result lies otherwise than the next takes it. Dynamic\n"
    "programming over the steps picks the plan with the least sum of medians, and each step's spec target.\n"
    "Everything timed is checked first against its op's reference, as ndrun tune checks its candidates.\n"
    "\n"
    "Options:\n"
    "  --chain STEP...   the steps, in order (required); the words up to the next option\n"
    "  --shape L=N,...   each letter's size (required), such as b=64,x=1024,y=4096,z=1024\n"
    "  --grid XxY        the cores (required)\n"
    "  --dtype T         every operand's dtype (default f32)\n"
    "  --top K           candidates timed per einsum, 1 to 16 (default 3)\n"
    "  --repeats N       at least N rounds per timed set (default 8)\n"
    "  --json-out FILE   every timing, the plan and its spec targets as JSON (whole or not at all)\n"
    "  --fixed SET       time kernels that fix at most SET (all, pattern or shard), as ndrun tune\n"
    "  --bound           also time every other candidate of each einsum, with its elementwise ops, in the\n"
    "                    same rounds, and report the least time any plan of the whole space could take\n"
    "                    (reshards between the timed at their medians, the others free) and how far the\n"
    "                    plan is above it: within the noise, no plan of the whole space is faster\n"
    "  --threads N, --cache-dir DIR: as ndrun compare\n";

/* "b=64,x=1024": each letter's size. */
static int parse_sizes(chain *ch, nd_error *err)
{
    const char *p = ch->shape;
    for (;;) {
        char *end = (char *)p + 2;
        if (!(p[0] >= 'a' && p[0] <= 'z') || p[1] != '=')
            return nd_fail(err, "--shape %s: expected LETTER=SIZE,..., such as b=64,x=1024", ch->shape);
        long long v = p[2] >= '0' && p[2] <= '9' ? strtoll(p + 2, &end, 10) : 0; /* digits only: no blank, no sign */
        if (v < 1 || v > ((int64_t)1 << 40) || (*end && *end != ','))
            return nd_fail(err, "--shape %s: the size of '%c' is not a positive number", ch->shape, p[0]);
        if (ch->size[(unsigned char)p[0]])
            return nd_fail(err, "--shape %s: '%c' given twice", ch->shape, p[0]);
        ch->size[(unsigned char)p[0]] = v;
        if (!*end)
            return 0;
        p = end + 1;
    }
}

static int parse(int argc, char **argv, chain *ch, nd_error *err)
{
    ch->top = CHAIN_TOP_DEFAULT, ch->rounds = 8;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "--bound")) {
            ch->bound = true;
            continue;
        }
        if (!strcmp(a, "--chain")) {
            for (; i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0; ++i) {
                const char *w = argv[i + 1];
                if (strpbrk(w, ",->")) { /* an einsum, or a malformed one: parse_expr says which */
                    if (ch->n == CHAIN_STEPS)
                        return nd_fail(err, "--chain: at most %d einsums", CHAIN_STEPS);
                    ch->step[ch->n++].expr = w;
                } else if (ch->n == 0) {
                    return nd_fail(err, "--chain %s: a chain starts with an einsum; an elementwise op runs on "
                                        "the result before it", w);
                } else if (ch->step[ch->n - 1].neltwise == CHAIN_ELTWISE) {
                    return nd_fail(err, "--chain %s: at most %d elementwise ops after an einsum", w, CHAIN_ELTWISE);
                } else {
                    chain_step *st = &ch->step[ch->n - 1];
                    st->eltwise[st->neltwise++] = w;
                }
            }
            continue;
        }
        const char **slot = !strcmp(a, "--shape") ? &ch->shape : !strcmp(a, "--grid") ? &ch->grid
                            : !strcmp(a, "--dtype") ? &ch->dtype : !strcmp(a, "--json-out") ? &ch->json_out : NULL;
        int *num = !strcmp(a, "--top") ? &ch->top : !strcmp(a, "--repeats") ? &ch->rounds : NULL;
        if (nr_tune_option(argc, argv, &i, slot, num, num == &ch->top ? TUNE_TOP_MAX : TUNE_ROUNDS_MAX, &ch->s,
                           "ndrun tune --chain", err))
            return -1;
    }
    if (ch->n == 0 || !ch->shape || !ch->grid)
        return nd_fail(err, "--%s: required", ch->n == 0 ? "chain (with at least one einsum)" : !ch->shape ? "shape"
                                                                                                         : "grid");
    return parse_sizes(ch, err);
}

int nr_tune_chain_main(int argc, char **argv)
{
    chain *ch = calloc(1, sizeof *ch);
    nd_error err;
    nd_kernels *k = NULL;
    if (!ch) {
        fprintf(stderr, "ndrun tune: out of memory\n");
        return 1;
    }
    nr_settings_init(&ch->s);
    for (int i = 1; i < argc; ++i)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(chain_usage, stdout);
            free(ch);
            return 0;
        }
    if (parse(argc, argv, ch, &err)) {
        fprintf(stderr, "ndrun tune: %s\n", err.msg);
        free(ch);
        return 2;
    }
    ndf_output out;
    memset(&out, 0, sizeof out);
    const char *paths[] = {ch->json_out}, *what[] = {"--json-out"};
    int rc = ch->json_out && nr_outputs_open(&out, paths, what, 1, &err);
    bool opened = ch->json_out && !rc;
    rc = rc || nr_open_kernels(&ch->s, &k, &err);
    for (int s = 0; s < ch->n && !rc; ++s)
        rc = setup_step(ch, k, s, &err);
    for (int s = 1; s < ch->n && !rc; ++s)
        add_aligned_pair(ch, s);
    for (int s = 1; s < ch->n && !rc; ++s)
        add_aligned(ch, s, true);
    for (int s = ch->n - 1; s > 0 && !rc; --s)
        add_aligned(ch, s, false);
    ch->checked = true;
    for (int s = 0; s < ch->n && !rc; ++s)
        rc = time_step(ch, k, s, &err);
    if (!rc) {
        plan(ch);
        report_text(stdout, ch);
    }
    if (!rc && opened)
        rc = nr_write_file(&out, report_json, ch, &err);
    else if (opened)
        ndf_abort(&out); /* the old file stays */
    nd_kernels_close(k);
    for (int s = 0; s < ch->n; ++s)
        free(ch->step[s].j.c), free(ch->step[s].all_cost), free(ch->step[s].all_half),
            free(ch->step[s].all_best), free(ch->step[s].all_from);
    free(ch);
    if (rc)
        fprintf(stderr, "ndrun tune: %s\n", err.msg);
    return rc ? 1 : 0;
}
