/*
 * tune.c - ndrun tune: the distribution of one op that runs fastest, found by search and measurement.
 *
 * The candidates, for an op whose operands share the input's dims (elementwise, softmax) or drop its
 * reduced axes (reductions): every way to split the tensor's dims over the grid into equal shards
 * (ways g[d] per dim, at most the dim, the product N, 2N or 4N for N cores: one shard per core, or 2 or
 * 4 dealt round robin), each with row pages and, where the shard's last two dims hold whole 32x32
 * tiles, with tile pages. Every operand takes the candidate's split (a reduction's output the split of
 * its kept dims), so no operand's pages move to another core to line up with another's. A reduction
 * whose output may be Partial also has a pending candidate (enumerate_pending): its first reduced dim
 * split over every core, the output a pending reduction whose copies each fold their own shard, then a
 * reduce_scatter; timed as both launches.
 *
 * An einsum (every operand indexed by letters: matmul, bmm, attention scores, ...) is searched by the
 * ways its output's letters are split, product N, 2N or 4N as above; each input splits the letters it
 * shares with the output the same ways and holds the others whole; and each operand is dealt round
 * robin over the grid. Its model is the busiest core's multiply-adds first (a contraction is bound by
 * them), then its bytes: its output shards, and for each the block of every input it reads, counted
 * twice when another core holds it (read there, and crossing to the reader). Where the op's output may
 * be Partial, a contracted letter that divides over the N cores may be split instead (summed_predict):
 * each core's output a part of a pending sum, then a reduce_scatter; timed as both launches.
 *
 * The cost model, for the target (cores working at once, each on its own memory): the busiest core's
 * bytes. A core reads and writes what it holds of every operand (padding included: reserved pages are
 * moved too); an output element of a reduction or a softmax reads its whole line along the reduced (last)
 * dims, and the share of that line held by other cores is counted twice, once where it is read and once
 * crossing to the reader. Ties go to fewer pages on that core, then to the candidate's text (a fixed
 * order). The top candidates by the model are then built (the JIT) and timed on this machine in
 * interleaved rounds, each from flushed caches, as ndrun compare times; the fastest median wins,
 * unless its 95% interval overlaps another's, a tie that the model breaks. The report says which.
 */
#include <limits.h>
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune.h"

/* ---------------------------------------------------------------- candidates and the model */


void nr_tune_format_dims(char *buf, size_t len, const int64_t *v, int n)
{
    int at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at >= 0 && (size_t)at < len; ++i)
        at += snprintf(buf + at, len - (size_t)at, "%s%lld", i ? "," : "", (long long)v[i]);
}

/* A reduction's output dims from the input's v (shape or shard): the kept dims, a reduced one as 1
 * when the output keeps it; their count. Every dim reduced: one element kept at the input's rank, as
 * the runtime's op check takes it (it refuses a rank-0 or a rank-1 [1] output of a rank-2 input). */
static int out_dims(const tune_job *j, const int64_t *v, int64_t *out)
{
    int nk = 0;
    for (int d = 0; d < j->rank; ++d)
        if (!j->reduced[d] || !j->drops)
            out[nk++] = j->reduced[d] ? 1 : v[d];
    for (int d = 0; nk == 0 && d < j->rank; ++d)
        out[d] = 1;
    return nk ? nk : j->rank;
}

/* "64, 128": dims as a Lua list's items. */
static void lua_list(char *buf, size_t len, const int64_t *v, int n)
{
    buf[0] = '\0';
    for (int i = 0; i < n; ++i)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%lld", i ? ", " : "", (long long)v[i]);
}

/* One operand as a spec's Lua table: its shape, how it is placed (`how`: "shard = { ... }", an einshard
 * or placements), grid and dtype. */
static void lua_operand(char *buf, size_t len, const char *grid, const char *dtype, const int64_t *shape, int n,
                        const char *how)
{
    char s[256];
    lua_list(s, sizeof s, shape, n);
    snprintf(buf, len, "{ shape = { %s }, %s, grid = \"%s\"%s%s%s }", s, how, grid, dtype ? ", dtype = \"" : "",
             dtype ? dtype : "", dtype ? "\"" : "");
}

void nr_tune_lua_dist(char *buf, size_t len, const char *grid, const char *dtype, const int64_t *shape,
                      const int64_t *shard, int n, bool tiles)
{
    char h[256], how[300];
    lua_list(h, sizeof h, shard, n);
    snprintf(how, sizeof how, "shard = { %s }%s", h, tiles ? ", tile = \"32x32\"" : "");
    lua_operand(buf, len, grid, dtype, shape, n, how);
}

/* A target's kernel fixing less than "all" (--fixed): the target says so, `fixed = "pattern"`. */
static void target_fixed(char *buf, size_t len, const tune_job *j)
{
    size_t n = strlen(buf);
    if (strcmp(j->s.fixed, "all") != 0 && n >= 2 && !strcmp(buf + n - 2, " }"))
        snprintf(buf + n - 2, len - (n - 2), ", fixed = \"%s\" }", j->s.fixed);
}

static void summed_target(char *buf, size_t len, const tune_job *j, const cand *c);
static int pending_out_dims(const tune_job *j, int64_t *shape, int64_t *shard);

/* The candidate as a target a spec takes as it is: `{ all = {...} }` when every operand is placed alike,
 * else the input and output by name (a reduction: the output's shard is the kept dims'); a pending-sum
 * candidate's in einshard and placements (summed_target). */
static void spec_target(char *buf, size_t len, const tune_job *j, const cand *c)
{
    char in[1024], out[1024];
    if (c->summed) {
        summed_target(buf, len, j, c);
        return;
    }
    if (j->einsum) { /* every operand by name */
        int at = snprintf(buf, len, "{");
        for (int k = 0; k < j->noperands && at >= 0 && (size_t)at < len; ++k) {
            int64_t shape[ND_MAX_RANK], shard[ND_MAX_RANK];
            int rk = nr_tune_operand_dims(j, c, k, shape, shard);
            nr_tune_lua_dist(in, sizeof in, j->o.grid, j->o.dtype, shape, shard, rk, c->tiles);
            at += snprintf(buf + at, len - (size_t)at, "%s %s = %s", k ? "," : "", j->names[k], in);
        }
        if (at >= 0 && (size_t)at < len)
            snprintf(buf + at, len - (size_t)at, " }");
        return;
    }
    nr_tune_lua_dist(in, sizeof in, j->o.grid, j->o.dtype, j->shape, c->shard, j->rank, c->tiles);
    if (c->pending) { /* the output a pending reduction over the cores, one copy each */
        int64_t oshape[ND_MAX_RANK], oshard[ND_MAX_RANK];
        char how[96];
        int nk = pending_out_dims(j, oshape, oshard);
        snprintf(how, sizeof how, "placements = \"[Partial(%s)]\", mesh = \"%lld\"", j->pending, (long long)j->cores);
        lua_operand(out, sizeof out, j->o.grid, j->o.dtype, oshape, nk, how);
        snprintf(buf, len, "{ %s = %s, %s = %s }", j->in_name, in, j->out_name, out);
        return;
    }
    if (!j->o.axes) {
        snprintf(buf, len, "{ all = %s }", in);
        return;
    }
    int64_t oshape[ND_MAX_RANK], oshard[ND_MAX_RANK];
    int nk = out_dims(j, j->shape, oshape);
    out_dims(j, c->shard, oshard);
    nr_tune_lua_dist(out, sizeof out, j->o.grid, j->o.dtype, oshape, oshard, nk, false);
    snprintf(buf, len, "{ %s = %s, %s = %s }", j->in_name, in, j->out_name, out);
}

void nr_tune_spec_target(char *buf, size_t len, const tune_job *j, const cand *c)
{
    spec_target(buf, len, j, c);
    target_fixed(buf, len, j);
}

/* ---------------------------------------------------------------- einsums */

/* Operand k's shape and shard under candidate c: a letter of the output takes c's shard of it, any
 * other letter (contracted) its whole size, but a pending sum's letter its slice over the cores, and a
 * pending sum's output the reduce_scatter's rows. Returns the operand's rank. */
int nr_tune_operand_dims(const tune_job *j, const cand *c, int k, int64_t *shape, int64_t *shard)
{
    const char *out = j->letters[j->noperands - 1], *x = j->letters[k];
    int r = (int)strlen(x);
    for (int i = 0; i < r; ++i) {
        const char *at = strchr(out, x[i]);
        shape[i] = j->size[(unsigned char)x[i]];
        shard[i] = x[i] == c->summed ? shape[i] / j->cores : at ? c->shard[at - out] : shape[i];
    }
    if (c->summed && k == j->noperands - 1) /* the reduce_scatter's result: rows over the cores */
        shard[0] = (shape[0] + j->cores - 1) / j->cores;
    return r;
}

/* A pending-sum candidate's operand k as einshard states it: "i k -> i k*", its summed letter split. */
static void einsum_einshard(char *buf, size_t len, const tune_job *j, const cand *c, int k)
{
    int at = 0;
    buf[0] = '\0';
    for (int side = 0; side < 2; ++side)
        for (const char *p = j->letters[k]; *p && at >= 0 && (size_t)at < len; ++p)
            at += snprintf(buf + at, len - (size_t)at, "%s%c%s", p == j->letters[k] ? side ? " -> " : "" : " ", *p,
                           side && *p == c->summed ? "*" : "");
}

/* The operands of a pending-sum candidate's op, as a spec states them: the inputs in einshard, the output
 * Partial(sum) over a mesh of every core. */
static void summed_target(char *buf, size_t len, const tune_job *j, const cand *c)
{
    int at = snprintf(buf, len, "{");
    for (int k = 0; k < j->noperands && at >= 0 && (size_t)at < len; ++k) {
        int64_t shape[ND_MAX_RANK], shard[ND_MAX_RANK];
        char how[200], e[160], op[512];
        int rk = nr_tune_operand_dims(j, c, k, shape, shard);
        if (k < j->noperands - 1) {
            einsum_einshard(e, sizeof e, j, c, k);
            snprintf(how, sizeof how, "einshard = \"%s\"", e);
        } else {
            snprintf(how, sizeof how, "placements = \"[Partial(sum)]\", mesh = \"%lld\"", (long long)j->cores);
        }
        lua_operand(op, sizeof op, j->o.grid, j->o.dtype, shape, rk, how);
        at += snprintf(buf + at, len - (size_t)at, "%s %s = %s", k ? "," : "", j->names[k], op);
    }
    if (at >= 0 && (size_t)at < len)
        snprintf(buf + at, len - (size_t)at, " }");
}

void nr_tune_spec_then(char *buf, size_t len, const tune_job *j, const cand *c)
{
    buf[0] = '\0';
    if (!c->summed && !c->pending)
        return;
    int64_t shape[ND_MAX_RANK], shard[ND_MAX_RANK];
    char how[64], in[512], out[512];
    int rk = c->pending ? pending_out_dims(j, shape, shard)
                        : nr_tune_operand_dims(j, c, j->noperands - 1, shape, shard);
    snprintf(how, sizeof how, "placements = \"[Partial(%s)]\", mesh = \"%lld\"", c->pending ? j->pending : "sum",
             (long long)j->cores);
    lua_operand(in, sizeof in, j->o.grid, j->o.dtype, shape, rk, how);
    nr_tune_lua_dist(out, sizeof out, j->o.grid, j->o.dtype, shape, shard, rk, false);
    snprintf(buf, len, "{ [\"in\"] = %s, out = %s }", in, out);
    target_fixed(buf, len, j);
}

/* Input k's shard index for the output shard at coordinates q (one per output letter): its letters
 * that the output has, row-major over their ways, in its own letter order. */
static int64_t einsum_input_shard(const tune_job *j, const cand *c, int k, const int64_t *q)
{
    const char *out = j->letters[j->noperands - 1];
    int64_t idx = 0;
    for (const char *p = j->letters[k]; *p; ++p) {
        const char *at = strchr(out, *p);
        if (at)
            idx = idx * c->ways[at - out] + q[at - out];
    }
    return idx;
}

/* The model of an einsum candidate (the file comment), over every output shard: each on core s mod N,
 * its inputs' blocks on their own shards' cores. */
static void summed_predict(const tune_job *j, cand *c);

static void einsum_predict(const tune_job *j, cand *c)
{
    if (c->summed) {
        summed_predict(j, c);
        return;
    }
    const int nout = j->noperands - 1, r = j->rank;
    int64_t shards = 1, out_elems = 1, contracted = 1;
    for (int d = 0; d < r; ++d)
        shards *= c->ways[d], out_elems *= c->shard[d];
    for (int l = 'a'; l <= 'z'; ++l) /* letters of the inputs the output lacks: summed over whole */
        if (j->size[l] && !strchr(j->letters[nout], l))
            contracted *= j->size[l];
    double block[TUNE_OPERANDS];
    int64_t pages[TUNE_OPERANDS];
    for (int k = 0; k <= nout; ++k) {
        int64_t shape[ND_MAX_RANK], shard[ND_MAX_RANK], e = 1;
        int rk = nr_tune_operand_dims(j, c, k, shape, shard);
        for (int i = 0; i < rk; ++i)
            e *= shard[i];
        block[k] = (double)e * (double)j->elem;
        pages[k] = e / (c->tiles ? 32 * 32 : shard[rk - 1]);
    }
    double *flops = calloc((size_t)j->cores, sizeof *flops), *bytes = calloc((size_t)j->cores, sizeof *bytes);
    int64_t *held = calloc((size_t)j->cores, sizeof *held);
    c->flops = c->bytes = 0;
    c->pages = 0;
    for (int64_t s = 0; flops && bytes && held && s < shards; ++s) {
        int64_t q[ND_MAX_RANK], rest = s, core = s % j->cores;
        for (int d = r - 1; d >= 0; --d)
            q[d] = rest % c->ways[d], rest /= c->ways[d];
        flops[core] += (double)out_elems * (double)contracted;
        bytes[core] += block[nout];
        held[core] += pages[nout];
        for (int k = 0; k < nout; ++k) {
            bool local = einsum_input_shard(j, c, k, q) % j->cores == core;
            bytes[core] += local ? block[k] : 2 * block[k];
            held[core] += pages[k];
        }
    }
    for (int64_t i = 0; flops && bytes && held && i < j->cores; ++i) {
        c->flops = flops[i] > c->flops ? flops[i] : c->flops;
        c->bytes = bytes[i] > c->bytes ? bytes[i] : c->bytes;
        c->pages = held[i] > c->pages ? held[i] : c->pages;
    }
    if (!flops || !bytes || !held) /* out of memory: ranked last, not guessed */
        c->flops = c->bytes = INFINITY;
    free(flops);
    free(bytes);
    free(held);
}

/* A pending-sum candidate: core q holds slice q of the summed letter of each input (its own: both
 * inputs' slices q are on core q) and computes its part of the whole output, a multiply-add per output
 * element per element of the contracted letters over N; then the reduce_scatter: each core writes its
 * rows of the result, reading them from every part, the N - 1 other cores' counted twice. */
static void summed_predict(const tune_job *j, cand *c)
{
    const int nout = j->noperands - 1;
    double contracted = 1, out = 1, bytes = 0; /* out: the output's elements, whole on every core */
    int64_t pages = 0;
    for (int l = 'a'; l <= 'z'; ++l)
        if (j->size[l] && !strchr(j->letters[nout], l))
            contracted *= (double)j->size[l];
    double mine = 0; /* the reduce_scatter's result: this core's rows (the output's shard) */
    for (int k = 0; k <= nout; ++k) {
        int64_t shape[ND_MAX_RANK], shard[ND_MAX_RANK], e = 1, rows = 1;
        int rk = nr_tune_operand_dims(j, c, k, shape, shard);
        for (int i = 0; i < rk; ++i)
            e *= k == nout ? shape[i] : shard[i], rows *= shard[i];
        if (k == nout)
            out = (double)e, mine = (double)rows * (double)j->elem;
        bytes += (double)e * (double)j->elem; /* an input's slice, or the whole part written */
        pages += e / (k == nout ? shape[rk - 1] : shard[rk - 1]);
    }
    c->flops = out * contracted / (double)j->cores;
    c->bytes = bytes + mine * (double)(2 * j->cores - 1) + mine;
    c->pages = pages;
}

/* Every pending-sum candidate: each contracted letter that divides over the cores (einshard, and JAX,
 * require it), with row pages, when the op's output may be Partial. */
static void enumerate_summed(tune_job *j)
{
    const char *out = j->letters[j->noperands - 1];
    for (int k = 0; j->partial_out && j->cores > 1 && k < j->noperands - 1; ++k)
        for (const char *p = j->letters[k]; *p && j->n < TUNE_MAX; ++p) {
            bool seen = strchr(out, *p) || (k == 1 && strchr(j->letters[0], *p));
            if (seen || j->size[(unsigned char)*p] % j->cores != 0)
                continue;
            cand c = {.summed = *p, .median = NAN};
            for (int d = 0; d < j->rank; ++d)
                c.ways[d] = 1, c.shard[d] = j->shape[d];
            einsum_predict(j, &c);
            snprintf(c.text, sizeof c.text, "--sum-over %c=%lld", *p, (long long)j->cores);
            j->c[j->n++] = c;
        }
}

/* "i=2,j=1": the ways of each output letter. */
static void einsum_ways_text(char *buf, size_t len, const tune_job *j, const int64_t *ways)
{
    int at = 0;
    buf[0] = '\0';
    for (int d = 0; d < j->rank && at >= 0 && (size_t)at < len; ++d)
        at += snprintf(buf + at, len - (size_t)at, "%s%c=%lld", d ? "," : "", j->letters[j->noperands - 1][d],
                       (long long)ways[d]);
}

/* Whether every operand's shard holds whole 32x32 tiles over its last two dims. */
static bool einsum_whole_tiles(const tune_job *j, const cand *c)
{
    for (int k = 0; k < j->noperands; ++k) {
        int64_t shape[ND_MAX_RANK], shard[ND_MAX_RANK];
        int rk = nr_tune_operand_dims(j, c, k, shape, shard);
        if (rk < 2 || shard[rk - 1] % 32 || shard[rk - 2] % 32)
            return false;
    }
    return true;
}

/* ---------------------------------------------------------------- other ops */

/* The model's bytes and pages for the busiest core (the file comment). */
static void predict(const tune_job *j, cand *c)
{
    int64_t shards = 1, shard_elems = 1, line = 1, line_ways = 1, out_elems = 1;
    for (int d = 0; d < j->rank; ++d) {
        shards *= c->ways[d];
        shard_elems *= c->shard[d];
        if (j->reduced[d]) {
            line *= j->shape[d];
            line_ways *= c->ways[d];
        } else {
            out_elems *= c->shard[d];
        }
    }
    int64_t per_core = (shards + j->cores - 1) / j->cores; /* shards dealt round robin */
    int64_t page = c->tiles ? 32 * 32 : c->shard[j->rank - 1];
    double held = (double)per_core * (double)shard_elems * (double)j->elem; /* one operand, padded */
    double out = j->drops ? (double)per_core * (double)out_elems * (double)j->elem : held;
    double reads = j->ninputs * held;
    if (line > 1) { /* each output element reads its line (softmax: each row piece the core holds reads its
                       row); other cores' share of the line counted twice */
        double lines = (double)per_core * (double)out_elems; /* reduction: the kept dims' elements */
        if (!j->drops) /* softmax: the row pieces, its shard's elements over the last dim's share */
            lines = (double)per_core * (double)shard_elems / (double)c->shard[j->rank - 1];
        reads = lines * (double)line * (double)j->elem * (1.0 + (double)(line_ways - 1) / (double)line_ways);
    }
    c->bytes = reads + out;
    c->pages = per_core * (shard_elems / page) * (j->ninputs + 1);
}

/* ---------------------------------------------------------------- pending reductions */

/* A pending candidate's output: the kept dims whole on every core, and the reduce_scatter's result,
 * the first kept dim split by rows over the cores. Returns its rank. */
static int pending_out_dims(const tune_job *j, int64_t *shape, int64_t *shard)
{
    int nk = out_dims(j, j->shape, shape);
    for (int i = 0; i < nk; ++i)
        shard[i] = shape[i];
    shard[0] = (shape[0] + j->cores - 1) / j->cores;
    return nk;
}

/* Core q holds chunk q of the first reduced dim and folds it into its whole copy of the output; then the
 * reduce_scatter: each core writes its rows of the result, reading them from every part, the N - 1 other
 * cores' counted twice (as a pending sum's, summed_predict). */
static void pending_predict(const tune_job *j, cand *c)
{
    int64_t shape[ND_MAX_RANK], shard[ND_MAX_RANK], in = 1, out = 1, mine = 1;
    int nk = pending_out_dims(j, shape, shard);
    for (int d = 0; d < j->rank; ++d)
        in *= c->shard[d];
    for (int i = 0; i < nk; ++i)
        out *= shape[i], mine *= shard[i];
    c->bytes = (double)j->elem * ((double)in + (double)out + (double)mine * (double)(2 * j->cores));
    c->pages = in / c->shard[j->rank - 1] + out / shape[nk - 1] + (2 * j->cores) * (mine / shard[nk - 1]);
}

/* The pending candidate of a reduction whose output may be Partial: the first reduced dim split over
 * every core, one shard each, so that the chunk each copy folds (the chunk rule) is its own core's shard;
 * the output a pending j->pending over the cores; then a reduce_scatter. Every output element is then
 * folded by every core, not by the one holding it. Needs as many indices of that dim as cores. */
static void enumerate_pending(tune_job *j)
{
    int f = 0;
    while (f < j->rank && !j->reduced[f])
        ++f;
    if (!j->pending || j->cores < 2 || f == j->rank || j->shape[f] < j->cores || j->n >= TUNE_MAX)
        return;
    cand c = {.pending = true, .median = NAN};
    char dims[128];
    for (int d = 0; d < j->rank; ++d)
        c.ways[d] = 1, c.shard[d] = j->shape[d];
    c.ways[f] = j->cores;
    c.shard[f] = (j->shape[f] + j->cores - 1) / j->cores;
    pending_predict(j, &c);
    nr_tune_format_dims(dims, sizeof dims, c.shard, j->rank);
    snprintf(c.text, sizeof c.text, "--shard %s, out Partial(%s)", dims, j->pending);
    j->c[j->n++] = c;
}

/* Every ways vector with product N, 2N or 4N (each way at most its dim), in a fixed order. */
static void enumerate(tune_job *j, int d, int64_t *ways, int64_t product)
{
    if (d == j->rank) {
        if (product != j->cores && product != 2 * j->cores && product != 4 * j->cores)
            return;
        for (int tiles = 0; tiles < 2 && j->n < TUNE_MAX; ++tiles) {
            cand c = {.tiles = tiles, .median = NAN};
            bool whole_tiles = j->rank >= 2;
            char dims[128];
            for (int k = 0; k < j->rank; ++k) {
                c.ways[k] = ways[k];
                c.shard[k] = (j->shape[k] + ways[k] - 1) / ways[k];
                if (k >= j->rank - 2)
                    whole_tiles &= c.shard[k] % 32 == 0;
            }
            if (j->einsum) {
                if (tiles && !einsum_whole_tiles(j, &c))
                    continue;
                einsum_predict(j, &c);
                einsum_ways_text(dims, sizeof dims, j, c.ways);
                snprintf(c.text, sizeof c.text, "--split %s%s", dims, c.tiles ? " --tile 32x32" : "");
                j->c[j->n++] = c;
                continue;
            }
            int kept = 0; /* an output without the reduced dims holds tiles only at rank 2 or more */
            for (int k = 0; k < j->rank; ++k)
                kept += !(j->drops && j->reduced[k]);
            if (tiles && (!whole_tiles || kept < 2 || (j->drops && (j->reduced[j->rank - 1] || j->reduced[j->rank - 2]))))
                continue;
            predict(j, &c);
            nr_tune_format_dims(dims, sizeof dims, c.shard, j->rank);
            snprintf(c.text, sizeof c.text, "--shard %s%s", dims, c.tiles ? " --tile 32x32" : "");
            j->c[j->n++] = c;
        }
        return;
    }
    for (int64_t w = 1; w <= j->shape[d] && product * w <= 4 * j->cores; ++w) {
        ways[d] = w;
        enumerate(j, d + 1, ways, product * w);
    }
}

static int by_model(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->flops != y->flops)
        return x->flops < y->flops ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? -1 : 1;
    if (x->pages != y->pages)
        return x->pages < y->pages ? -1 : 1;
    return strcmp(x->text, y->text);
}

/* --also "A,B[:tile]": the candidate with that shard (and 32x32 tiles) is one the user picked; it must
 * be among the candidates (a split into equal shards over the grid). */
static int pick_also(tune_job *j, const char *text, nd_error *err)
{
    int64_t shard[ND_MAX_RANK];
    int rank;
    char dims[128];
    const char *colon = strchr(text, ':');
    bool tiles = colon && !strcmp(colon + 1, "tile");
    if (colon && !tiles)
        return nd_fail(err, "--also %s: expected SHARD or SHARD:tile, such as 64,1024:tile", text);
    snprintf(dims, sizeof dims, "%.*s", colon ? (int)(colon - text) : (int)strlen(text), text);
    if (j->einsum) { /* the ways of each output letter, as the candidates print them */
        for (int i = 0; i < j->n; ++i) {
            char w[128];
            einsum_ways_text(w, sizeof w, j, j->c[i].ways);
            if (!j->c[i].summed && j->c[i].tiles == tiles && strcmp(w, dims) == 0) {
                j->c[i].picked = true;
                return 0;
            }
        }
        char example[128];
        einsum_ways_text(example, sizeof example, j, j->c[0].ways);
        return nd_failc(err, ND_EREFUSED, "--also %s: not a candidate: give the ways of each output letter as the "
                                          "candidates print them, such as %s, their product %lld, %lld or %lld%s",
                        text, example, (long long)j->cores, (long long)(2 * j->cores), (long long)(4 * j->cores),
                        tiles ? ", every operand holding whole 32x32 tiles" : "");
    }
    if (nd_parse_dims("--also", dims, shard, &rank, err))
        return -1;
    for (int i = 0; rank == j->rank && i < j->n; ++i)
        if (!j->c[i].pending && j->c[i].tiles == tiles && !memcmp(j->c[i].shard, shard, (size_t)rank * sizeof *shard)) {
            j->c[i].picked = true;
            return 0;
        }
    return nd_failc(err, ND_EREFUSED, "--also %s: not a candidate: the shard must split [%s] into equal shards, one, "
                                      "two or four per core of %s%s", text, j->o.shape, j->o.grid,
                    tiles ? ", holding whole 32x32 tiles" : "");
}

/* The timed set holds the model's best of each page kind: a template's speed depends on the page kind
 * in ways the byte model does not see (matmul 2048 on 2x1 cores: 130 to 140 ms with 32x32 tiles, 88 to
 * 89 with rows; scores 2,8,512,64,512: 11 ms with tiles, 3.9 with rows), so measurement decides. When
 * the top `top` (2 or more) hold one kind, the best candidate of the other moves in as the last. */
void nr_tune_both_page_kinds(tune_job *j, int top)
{
    if (top < 2)
        return;
    bool kind[2] = {false, false};
    for (int i = 0; i < top; ++i)
        kind[j->c[i].tiles] = true;
    for (int i = top; i < j->n && !(kind[0] && kind[1]); ++i)
        if (!kind[j->c[i].tiles]) {
            cand x = j->c[i];
            memmove(&j->c[top], &j->c[top - 1], (size_t)(i - top + 1) * sizeof *j->c);
            j->c[top - 1] = x;
            kind[x.tiles] = true;
        }
}

/* ---------------------------------------------------------------- measurement */

int nr_tune_parts(const cand *c) { return c->summed || c->pending ? 2 : 1; }

/* Part 1 of a pending-sum or pending candidate: the reduce_scatter of its output into rows over the
 * cores, as ndrun compare's arguments into a[]; returns their count. */
static int summed_scatter_args(const tune_job *j, const cand *c, const char **a)
{
    static char shape_text[160], shard_text[160], mesh[32], placements[32];
    int n = 0;
    int64_t shape[ND_MAX_RANK], shard[ND_MAX_RANK];
    int rk = c->pending ? pending_out_dims(j, shape, shard)
                        : nr_tune_operand_dims(j, c, j->noperands - 1, shape, shard);
    snprintf(placements, sizeof placements, "[Partial(%s)]", c->pending ? j->pending : "sum");
    nr_tune_format_dims(shape_text, sizeof shape_text, shape, rk);
    nr_tune_format_dims(shard_text, sizeof shard_text, shard, rk);
    snprintf(mesh, sizeof mesh, "%lld", (long long)j->cores);
    a[n++] = "--op", a[n++] = "reduce_scatter", a[n++] = "--shape", a[n++] = shape_text, a[n++] = "--grid",
    a[n++] = j->o.grid;
    if (j->o.dtype)
        a[n++] = "--dtype", a[n++] = j->o.dtype;
    a[n++] = "--operand", a[n++] = "in", a[n++] = "--placements", a[n++] = placements, a[n++] = "--mesh",
    a[n++] = mesh;
    a[n++] = "--operand", a[n++] = "out", a[n++] = "--shard", a[n++] = shard_text;
    a[n] = NULL;
    return n;
}

/* Candidate c's part as ndrun compare's arguments into a[] (TUNE_ARGS + 1 of them, NULL last): the op
 * over the grid, every operand split as c (a reduction's output by c's kept dims); part 1 the
 * reduce_scatter of a pending sum. Returns their count; the static texts hold the strings until the
 * next call. */
static int case_args(const tune_job *j, const cand *c, int part, const char **a)
{
    static char text[TUNE_ARGS][160];
    int n = 0;
    char dims[128];
    if (part == 1)
        return summed_scatter_args(j, c, a);
    a[n++] = "--op", a[n++] = j->o.op, a[n++] = "--shape", a[n++] = j->o.shape, a[n++] = "--grid", a[n++] = j->o.grid;
    if (j->o.dtype)
        a[n++] = "--dtype", a[n++] = j->o.dtype;
    if (c->summed) { /* the inputs in einshard, their summed letter split; the output a pending sum */
        for (int k = 0; k < j->noperands - 1; ++k) {
            einsum_einshard(text[k], sizeof text[k], j, c, k);
            a[n++] = "--operand", a[n++] = j->names[k], a[n++] = "--einshard", a[n++] = text[k];
        }
        snprintf(text[TUNE_ARGS - 1], sizeof text[TUNE_ARGS - 1], "%lld", (long long)j->cores);
        a[n++] = "--operand", a[n++] = j->names[j->noperands - 1], a[n++] = "--placements", a[n++] = "[Partial(sum)]";
        a[n++] = "--mesh", a[n++] = text[TUNE_ARGS - 1];
    } else if (j->einsum) { /* each operand its own shard */
        for (int k = 0; k < j->noperands; ++k) {
            int64_t shape[ND_MAX_RANK], shard[ND_MAX_RANK];
            int rk = nr_tune_operand_dims(j, c, k, shape, shard);
            nr_tune_format_dims(text[k], sizeof text[k], shard, rk);
            a[n++] = "--operand", a[n++] = j->names[k], a[n++] = "--shard", a[n++] = text[k];
            if (c->tiles)
                a[n++] = "--tile", a[n++] = "32x32";
        }
    } else if (c->pending) { /* the input split, the output a pending reduction with one copy per core */
        nr_tune_format_dims(text[0], sizeof text[0], c->shard, j->rank);
        snprintf(text[1], sizeof text[1], "[Partial(%s)]", j->pending);
        snprintf(text[2], sizeof text[2], "%lld", (long long)j->cores);
        int64_t oshape[ND_MAX_RANK], oshard[ND_MAX_RANK];
        nr_tune_format_dims(text[3], sizeof text[3], oshape, pending_out_dims(j, oshape, oshard));
        a[n++] = "--axes", a[n++] = j->o.axes, a[n++] = "--operand", a[n++] = j->in_name, a[n++] = "--shard",
        a[n++] = text[0], a[n++] = "--operand", a[n++] = j->out_name, a[n++] = "--shape", a[n++] = text[3],
        a[n++] = "--placements", a[n++] = text[1], a[n++] = "--mesh", a[n++] = text[2];
    } else {
        nr_tune_format_dims(text[0], sizeof text[0], c->shard, j->rank);
        a[n++] = "--shard", a[n++] = text[0];
        if (c->tiles)
            a[n++] = "--tile", a[n++] = "32x32";
        if (j->o.axes) {
            int64_t kept[ND_MAX_RANK];
            int nk = out_dims(j, c->shard, kept);
            nr_tune_format_dims(dims, sizeof dims, kept, nk);
            snprintf(text[1], sizeof text[1], "%s", dims);
            a[n++] = "--axes", a[n++] = j->o.axes, a[n++] = "--operand", a[n++] = j->out_name, a[n++] = "--shard",
            a[n++] = text[1];
        }
    }
    a[n] = NULL;
    return n;
}

int nr_tune_case(const tune_job *j, const cand *c, int part, nr_case *out, nd_error *err)
{
    static char label[200];
    const char *a[TUNE_ARGS + 1];
    int n = case_args(j, c, part, a);
    snprintf(label, sizeof label, part == 1 ? "%s, its reduce_scatter" : "%s", c->text);
    return nr_case_from_args(label, a, n, out, err);
}

/* "ndrun compare" and candidate c's part's arguments, each quoted for a POSIX shell where it needs it. */
static void print_command(FILE *fp, const tune_job *j, const cand *c, int part)
{
    const char *a[TUNE_ARGS + 1];
    int n = case_args(j, c, part, a);
    fputs("ndrun compare", fp);
    for (int i = 0; i < n; ++i)
        if (a[i][strspn(a[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789,._/=:+-")] == '\0')
            fprintf(fp, " %s", a[i]);
        else /* no argument holds a single quote: letters, digits, brackets, parentheses, spaces, '*', '>' */
            fprintf(fp, " '%s'", a[i]);
}

typedef struct timed {
    nr_setup su;
    nd_kernel_pick pick;
    double t[TUNE_ROUNDS_MAX];
    nr_spans spans; /* its tensors, made cold before each run (nr_cold) */
    bool open;
} timed;

/* Runs su's specialized kernel once, its output cleared first (a Partial one: every part zeroed). */
static int run_once(nd_kernels *k, nr_setup *su, nd_error *err)
{
    int o = su->n - 1;
    memset(su->host[o], 0, (size_t)nr_bytes(su, o));
    if (nd_tensor_write(su->t[o], su->host[o], nr_bytes(su, o), err))
        return -1;
    nr_watch_begin("specialized", su->entry->op, NULL); /* --watchdog: a kernel that never returns stops */
    int rc = nd_run(&(nd_launch_desc){.device = su->dev, .kernels = k, .op = su->entry->op, .tensors = su->t,
                                      .ntensors = su->n, .scalars = su->scalars, .nscalars = su->nscalars,
                                      .variant = ND_VARIANT_SPECIALIZED, .picked = nr_watch_picked}, err);
    nr_watch_end();
    return rc;
}

/* Whether the result in out's output agrees with the op's plain reference on ref's inputs (ref == out
 * for one launch; for two, ref the op's, out its reduce_scatter's). */
static int agrees(nr_setup *ref, nr_setup *out, nd_error *err)
{
    const int o = ref->n - 1, lo = out->n - 1;
    const int64_t bytes = nr_bytes(ref, o);
    if (nr_bytes(out, lo) != bytes)
        return nd_fail(err, "its result has %lld bytes, the op's output %lld", (long long)nr_bytes(out, lo),
                       (long long)bytes);
    void *want = malloc((size_t)bytes);
    nr_result *r = calloc(1, sizeof *r);
    int rc = want && r ? 0 : nd_failc(err, ND_ENOMEM, "out of host memory");
    rc = rc || nd_tensor_read(out->t[lo], out->host[lo], bytes, err) || nr_reference(ref->dev, ref, want, err);
    if (!rc) {
        r->match = true;
        if (!nr_outputs_match(ref, out->host[lo], want, "its result", r))
            rc = nd_fail(err, "does not agree with the op's reference: %s", r->mismatch);
    }
    free(want);
    free(r);
    return rc;
}

/* A case of one launch checked before it is timed (nr_tune_time): *checked stays true only when it has
 * a reference and its output is whole (a Partial output is checked end to end by its caller:
 * nr_tune_verify). */
static int check_case(nd_kernels *k, nr_setup *su, bool *checked, nd_error *err)
{
    if (!nr_has_reference(su) || su->dist[su->n - 1].spec.parts != 1) {
        *checked = false;
        return 0;
    }
    return run_once(k, su, err) || agrees(su, su, err) ? -1 : 0;
}


static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int nr_tune_time(nd_kernels *k, const nr_settings *s, int n, int rounds,
                 int (*make)(void *ctx, int i, nr_case *out, nd_error *err), void *ctx, nr_tune_timing *out,
                 bool *checked, nd_error *err)
{
    timed *tm = calloc((size_t)n, sizeof *tm);
    int rc = tm ? 0 : nd_failc(err, ND_ENOMEM, "out of memory");
    for (int i = 0; i < n && !rc; ++i) {
        nr_case nc;
        if ((rc = make(ctx, i, &nc, err)))
            break;
        rc = nr_setup_open(k, &nc, s, &tm[i].su, err);
        tm[i].open = rc == 0;
        if (!rc)
            rc = nd_kernels_pick(k, tm[i].su.entry->op, tm[i].su.t, tm[i].su.n, ND_VARIANT_SPECIALIZED, &tm[i].pick,
                                 err);
        if (!rc && nr_setup_spans(&tm[i].su, NULL, &tm[i].spans))
            rc = nd_failc(err, ND_ENOMEM, "out of memory");
        if (!rc && checked)
            rc = check_case(k, &tm[i].su, checked, err);
        if (rc) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            nd_fail(err, "candidate %s: %s", nc.label, why);
        }
    }
    int done = 0;
    const nr_spans *last = NULL;
    for (double start = nr_now(); !rc && done < TUNE_ROUNDS_MAX && (done < rounds || nr_now() - start < 0.2 * n);
         ++done)
        for (int q = 0; q < n && !rc; ++q) {
            timed *x = &tm[(q + done) % n];
            nd_launch_stats st;
            nr_cold(x->su.dev, &x->spans, last);
            last = &x->spans;
            nr_watch_begin("specialized", x->pick.entry->op, x->pick.entry->symbol);
            rc = nd_launch_entry(x->su.dev, x->pick.entry, x->su.t, x->su.n, x->su.scalars, x->su.nscalars, &st, err);
            nr_watch_end();
            x->t[done] = st.seconds;
        }
    for (int i = 0; i < n && !rc; ++i) {
        qsort(tm[i].t, (size_t)done, sizeof *tm[i].t, cmp_double);
        out[i].median = tm[i].t[done / 2];
        snprintf(out[i].fixed, sizeof out[i].fixed, "%s", tm[i].pick.fixed ? tm[i].pick.fixed : "none");
        out[i].tight = nr_median_tight(tm[i].t, done, &out[i].half);
    }
    for (int i = 0; tm && i < n; ++i) {
        if (tm[i].open)
            nr_setup_close(&tm[i].su);
        nr_spans_free(&tm[i].spans);
    }
    free(tm);
    return rc;
}

/* The parts of the top candidates, in one list: entry i is part part[i] of candidate cand[i]. */
typedef struct parts_list {
    const tune_job *j;
    int *cand, *part;
} parts_list;

static int make_part(void *ctx, int i, nr_case *out, nd_error *err)
{
    const parts_list *l = ctx;
    return nr_tune_case(l->j, &l->j->c[l->cand[i]], l->part[i], out, err);
}

int nr_tune_time_candidates(const tune_job *j, nd_kernels *k, int top, nr_tune_timing *out, nd_error *err)
{
    parts_list l = {.j = j, .cand = malloc(2 * (size_t)top * sizeof *l.cand),
                    .part = malloc(2 * (size_t)top * sizeof *l.part)};
    nr_tune_timing *t = malloc(2 * (size_t)top * sizeof *t);
    int n = 0, rc = l.cand && l.part && t ? 0 : nd_failc(err, ND_ENOMEM, "out of memory");
    for (int i = 0; i < top && !rc; ++i)
        for (int p = 0; p < nr_tune_parts(&j->c[i]); ++p)
            l.cand[n] = i, l.part[n++] = p;
    rc = rc || nr_tune_time(k, &j->s, n, j->o.rounds, make_part, &l, t, NULL, err); /* checked: measure */
    for (int e = 0; e < n && !rc;) { /* a candidate's parts are consecutive entries, part 0 first */
        double median[2], half[2];
        int i = l.cand[e], np = 0;
        nr_tune_timing *o = &out[i];
        memcpy(o->fixed, t[e].fixed, sizeof o->fixed); /* the op's own kernel, not the reduce_scatter's */
        for (; e < n && l.cand[e] == i; ++e, ++np) {
            assert(np < 2); /* nr_tune_parts */
            median[np] = t[e].median, half[np] = t[e].half;
        }
        o->tight = nr_sum_intervals(median, half, np, &o->median, &o->half);
    }
    free(l.cand);
    free(l.part);
    free(t);
    return rc;
}

/* Carries the Partial output of `from` into the Partial first input of `to`, part by part: how the two
 * launches of a pending candidate meet on a device. */
static int carry_parts(const nr_setup *from, nr_setup *to, nd_error *err)
{
    const int o = from->n - 1, parts = from->dist[o].spec.parts;
    const int64_t bytes = nr_bytes(from, o);
    if (to->dist[0].spec.parts != parts || nr_bytes(to, 0) != bytes)
        return nd_fail(err, "its reduce_scatter's input (%d parts, %lld bytes) is not the op's output (%d parts, "
                       "%lld bytes)", to->dist[0].spec.parts, (long long)nr_bytes(to, 0), parts, (long long)bytes);
    void *buf = malloc((size_t)bytes);
    int rc = buf ? 0 : nd_failc(err, ND_ENOMEM, "out of host memory");
    for (int q = 0; q < parts && !rc; ++q)
        rc = nd_tensor_read_part(from->t[o], q, buf, bytes, err) ||
             nd_tensor_write_part(to->t[0], q, buf, bytes, err);
    free(buf);
    return rc ? -1 : 0;
}

/*
 * Checks candidate c end to end before it is timed, as ndrun bench checks a row: its specialized kernel
 * once on the seed's inputs, and for a candidate of two launches (a pending sum or reduction, then its
 * reduce_scatter) the first's Partial output carried into the second, whose result is then the op's;
 * that result against the op's plain reference on the same inputs (nr_outputs_match). A candidate that
 * disagrees is an error, never a recommendation. *checked is false when the op has no reference.
 */
int nr_tune_verify(const tune_job *j, nd_kernels *k, const cand *c, bool *checked, nd_error *err)
{
    nr_setup su[2];
    nr_case nc;
    int nparts = nr_tune_parts(c), open = 0, rc = 0;
    for (; open < nparts && !rc; ++open)
        if ((rc = nr_tune_case(j, c, open, &nc, err) || nr_setup_open(k, &nc, &j->s, &su[open], err)))
            break;
    nr_setup *last = &su[nparts - 1];
    *checked = !rc && nr_has_reference(&su[0]);
    rc = rc || run_once(k, &su[0], err);
    if (!rc && nparts == 2)
        rc = carry_parts(&su[0], &su[1], err) || run_once(k, &su[1], err);
    if (!rc && *checked)
        rc = agrees(&su[0], last, err);
    for (int p = 0; p < open && p < nparts; ++p)
        nr_setup_close(&su[p]);
    if (rc) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        nd_fail(err, "candidate %s: %s", c->text, why);
    }
    return rc;
}

/* The top candidates, checked (nr_tune_verify), then timed together. */
static int measure(tune_job *j, nd_kernels *k, int top, nd_error *err)
{
    nr_tune_timing *t = calloc((size_t)top, sizeof *t);
    int rc = t ? 0 : nd_failc(err, ND_ENOMEM, "out of memory");
    j->checked = top > 0;
    for (int i = 0; i < top && !rc; ++i) {
        bool checked = false;
        rc = nr_tune_verify(j, k, &j->c[i], &checked, err);
        j->checked = j->checked && checked;
    }
    rc = rc || nr_tune_time_candidates(j, k, top, t, err);
    for (int i = 0; i < top && !rc; ++i) {
        j->c[i].median = t[i].median, j->c[i].half = t[i].half, j->c[i].tight = t[i].tight;
        memcpy(j->c[i].fixed, t[i].fixed, sizeof j->c[i].fixed);
    }
    free(t);
    return rc;
}

/* The measured winner among the top (limit.c, nr_pick_fastest): the fastest median, or the model's
 * better of those within noise of it (at +-114%, a scores candidate 3.5 times slower had tied with
 * everything and won). Sets *tie. */
static int winner(const tune_job *j, int top, bool *tie)
{
    double *median = malloc((size_t)top * sizeof *median), *half = malloc((size_t)top * sizeof *half);
    bool *tight = malloc((size_t)top * sizeof *tight);
    int pick = 0;
    *tie = true; /* out of memory: the model's best, said to be a tie */
    if (median && half && tight) {
        for (int i = 0; i < top; ++i)
            median[i] = j->c[i].median, half[i] = j->c[i].half, tight[i] = j->c[i].tight;
        pick = nr_pick_fastest(median, half, tight, top, tie);
    }
    free(median);
    free(half);
    free(tight);
    return pick;
}

/* ---------------------------------------------------------------- the report */

static void report_text(FILE *fp, const tune_job *j, int top, int win, bool tie)
{
    fprintf(fp, "%s %s %s on %s: %d candidates, the model's best %d %s\n", j->o.op, j->o.dtype ? j->o.dtype : "f32",
            j->o.shape, j->o.grid, j->n, top, j->o.predict_only ? "listed (--predict-only: none timed)" : "timed");
    fprintf(fp, "rank  candidate                              model: busiest core%s    pages   measured (median, 95%%)\n",
            j->einsum ? "'s multiply-adds and" : "");
    for (int i = 0; i < (j->o.predict_only ? top : j->n < top ? j->n : top); ++i) {
        const cand *c = &j->c[i];
        fprintf(fp, "%4d  %-38s ", i + 1, c->text);
        if (j->einsum)
            fprintf(fp, "%14.0f MAC ", c->flops);
        fprintf(fp, "%12.0f bytes %8lld", c->bytes, (long long)c->pages);
        if (!isnan(c->median))
            fprintf(fp, "   %9.3f ms +-%.0f%%", c->median * 1e3, c->half * 100);
        fprintf(fp, "%s%s\n", c->picked ? "  (--also)" : "", i == win && !isnan(c->median) ? "  <- chosen" : "");
    }
    if (!j->o.predict_only) {
        fprintf(fp, "%s\n", j->checked ? "checked first: every timed candidate's result agrees with the op's reference "
                                         "(a pending one's two launches end to end)"
                                       : "not checked: the op's spec gives no reference");
        if (tie)
            fputs("the fastest medians' intervals overlap: a tie within noise, broken by the model\n", fp);
        else if (!j->c[win].tight)
            fprintf(fp, "the chosen candidate is fastest beyond noise: no other's interval reaches its own, "
                        "though that is +-%.0f%%, wider than the %.0f%% the rounds aim for\n",
                    j->c[win].half * 100, NR_TIGHT * 100);
        else
            fputs("the chosen candidate is fastest beyond noise\n", fp);
    }
    if (strcmp(j->s.fixed, "all") != 0)
        fprintf(fp, "kernels fixing at most \"%s\" (--fixed): one per candidate's pattern serves every %s\n",
                j->s.fixed, !strcmp(j->s.fixed, "pattern") ? "tensor shape" : "tensor shape and core grid");
    fputs("target: ", fp);
    print_command(fp, j, &j->c[win], 0);
    if (nr_tune_parts(&j->c[win]) == 2) { /* its output pending: the reduce_scatter that resolves it */
        fputs("\nthen: ", fp);
        print_command(fp, j, &j->c[win], 1);
    }
    fputc('\n', fp);
    char lua[1200];
    nr_tune_spec_target(lua, sizeof lua, j, &j->c[win]);
    fprintf(fp, "spec target: %s\n", lua);
    nr_tune_spec_then(lua, sizeof lua, j, &j->c[win]);
    if (lua[0])
        fprintf(fp, "then reduce_scatter: %s\n", lua);
}

static void report_json(FILE *fp, const void *ctx)
{
    const tune_job *j = ctx;
    fprintf(fp, "{\n  \"op\": \"%s\", \"shape\": \"%s\", \"grid\": \"%s\", \"candidates\": %d, \"chosen\": %d,\n"
                "  \"checked\": %s,\n  \"ranked\": [\n", j->o.op, j->o.shape, j->o.grid, j->n, j->chosen,
            j->checked ? "true" : "false");
    for (int i = 0; i < j->n; ++i) {
        const cand *c = &j->c[i];
        char lua[1200];
        nr_tune_spec_target(lua, sizeof lua, j, c);
        fprintf(fp, "    {\"candidate\": \"%s\", \"spec_target\": ", c->text);
        nr_json_str(fp, lua);
        nr_tune_spec_then(lua, sizeof lua, j, c);
        if (lua[0]) {
            fputs(", \"then_reduce_scatter\": ", fp);
            nr_json_str(fp, lua);
        }
        if (j->einsum)
            fprintf(fp, ", \"model_multiply_adds\": %.0f", c->flops);
        fprintf(fp, ", \"model_bytes\": %.0f, \"pages\": %lld, \"picked\": %s", c->bytes, (long long)c->pages,
                c->picked ? "true" : "false");
        if (!isnan(c->median))
            fprintf(fp, ", \"median_seconds\": %.9g, \"half_width\": %.4g, \"tight\": %s, \"kernel_fixed\": \"%s\"",
                    c->median, c->half, c->tight ? "true" : "false", c->fixed);
        fprintf(fp, "}%s\n", i + 1 < j->n ? "," : "");
    }
    fputs("  ]\n}\n", fp);
}

/* The chosen candidate's output, drawn by ndgen show --format svg into path (ndgen writes it whole or not
 * at all, through its own safe-write path). */
static int draw_winner(const tune_job *j, const cand *c, const char *path, nd_error *err)
{
    char ndgen[PATH_MAX + 64], shape[160], shard[160];
    int64_t v[ND_MAX_RANK], s[ND_MAX_RANK];
    int r;
    bool tiles = c->tiles;
    if (nr_own_ndgen(ndgen, sizeof ndgen, err))
        return -1;
    if (j->einsum) {
        r = nr_tune_operand_dims(j, c, j->noperands - 1, v, s);
    } else if (j->o.axes) { /* the reduction's output: its kept dims (one element when none) */
        r = out_dims(j, j->shape, v);
        out_dims(j, c->shard, s);
        tiles = false;
    } else {
        r = j->rank;
        memcpy(v, j->shape, sizeof v), memcpy(s, c->shard, sizeof s);
    }
    nr_tune_format_dims(shape, sizeof shape, v, r);
    nr_tune_format_dims(shard, sizeof shard, s, r);
    const char *argv[] = {ndgen, "show", "--shape", shape, "--shard", shard, "--grid", j->o.grid,
                          "--format", "svg", "--output", path, tiles ? "--tile" : NULL, "32x32", NULL, NULL, NULL};
    if (j->o.dtype) /* after the tile pair, or in its place */
        argv[tiles ? 14 : 12] = "--dtype", argv[tiles ? 15 : 13] = j->o.dtype;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execv(ndgen, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return nd_failc(err, ND_ESYS, "--svg-out %s: could not run %s show", path, ndgen);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return nd_fail(err, "--svg-out %s: %s show --shape %s --shard %s --grid %s%s --format svg failed (%s %d)",
                       path, ndgen, shape, shard, j->o.grid, tiles ? " --tile 32x32" : "",
                       WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return 0;
}

/* ---------------------------------------------------------------- the command */

static const char tune_usage[] =
    "usage: ndrun tune --op NAME --shape D0,.. --grid XxY [--axes A,..] [--dtype T] [options]\n"
    "\n"
    "Searches the distributions of one op for the fastest: every split of the tensor's dims over the grid\n"
    "into equal shards (one, two or four per core, dealt round robin), with row pages and, where they fit,\n"
    "32x32 tiles, every operand split alike. A cost model ranks them (the busiest core's bytes, other\n"
    "cores' share of a reduced line counted twice; then its pages), and the best --top are built and timed\n"
    "in interleaved rounds as ndrun compare times them: the fastest median wins, a tie within the 95%\n"
    "intervals going to the model. Ops: those whose operands share the input's dims (elementwise,\n"
    "softmax), reductions (--axes), and einsums of two inputs (matmul, bmm, scores, ...: --shape gives one\n"
    "size per index letter, as ndrun compare reads it; the output's letters are split, each input splits\n"
    "the letters it shares with the output alike and holds the rest whole; the model ranks the busiest\n"
    "core's multiply-adds first, then its bytes). Every timed candidate is first run and checked against\n"
    "the op's reference (a pending one end to end, through its reduce_scatter); one that disagrees stops\n"
    "the tune with an error naming it. The target lines are ndrun compare commands. For a chain of ops:\n"
    "ndrun tune --chain --help.\n"
    "\n"
    "Options:\n"
    "  --op NAME         the op (required)\n"
    "  --shape D0,..     the input's shape (required)\n"
    "  --grid XxY        the cores (required)\n"
    "  --axes A,..       a reduction's axes\n"
    "  --dtype T         every operand's dtype (default f32)\n"
    "  --top K           candidates to time, 1 to 16 (default 4), or all: every candidate, an\n"
    "                    exhaustive search that shows whether the model's order missed a faster one\n"
    "  --repeats N       at least N rounds (default 8, the fewest with a 95% interval)\n"
    "  --also SHARD[:tile]  time this distribution too (one you picked, such as 64,1024 or 64,1024:tile;\n"
    "                    for an einsum the ways of its output letters, such as i=2,j=1)\n"
    "  --predict-only    rank by the model alone; time nothing\n"
    "  --fixed SET       time kernels that fix at most SET: all (default), pattern (the tensor shape at run\n"
    "                    time) or shard (the core grid too); the spec target says fixed = SET\n"
    "  --json-out FILE   the ranked list as JSON (whole or not at all)\n"
    "  --svg-out FILE    the chosen distribution of the output drawn by ndgen show --format svg (which\n"
    "                    writes it whole or not at all)\n"
    "  --threads N, --cache-dir DIR: as ndrun compare\n";

/* One option of ndrun tune at argv[*i]: a string into *slot, a number from 1 to hi into *num, else one
 * of ndrun's common options (--threads, --cache-dir, ...); a distribution's option is refused, as the
 * command (`who`) chooses them. Advances *i past a value. */
int nr_tune_option(int argc, char **argv, int *i, const char **slot, int *num, int hi, nr_settings *s,
                   const char *who, nd_error *err)
{
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "--fixed")) { /* the kernels timed fix at most this set (docs/partial.md) */
        if (!v || ndreg_fixed_parse(v) < 0)
            return nd_fail(err, "--fixed %s: expected all, pattern or shard (docs/partial.md)", v ? v : "needs a value;");
        s->fixed = v, ++*i;
        return 0;
    }
    if ((slot || num) && !v)
        return nd_fail(err, "%s: needs a value", a);
    if (slot) {
        *slot = v, ++*i;
        return 0;
    }
    if (num) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || end == v || n < 1 || n > hi)
            return nd_fail(err, "%s %s: expected a number from 1 to %d", a, v, hi);
        *num = (int)n, ++*i;
        return 0;
    }
    nr_case ignored = {.nflags = 1};
    int rc = nr_parse_common(argc, argv, i, &ignored, s, err);
    if (rc > 0)
        return nd_fail(err, "%s: unknown option; see %s --help", a, who);
    if (rc < 0)
        return -1;
    if (ignored.op || ignored.flags[0].flags.shard || ignored.nflags > 1)
        return nd_fail(err, "%s: %s chooses the distributions itself", a, who);
    return 0;
}

static int parse(int argc, char **argv, tune_job *j, nd_error *err)
{
    tune_opts *o = &j->o;
    o->top = TUNE_TOP_DEFAULT, o->rounds = 8; /* the fewest with a 95% interval (nr_median_tight) */
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **slot = !strcmp(a, "--op") ? &o->op : !strcmp(a, "--shape") ? &o->shape
                            : !strcmp(a, "--grid") ? &o->grid : !strcmp(a, "--dtype") ? &o->dtype
                            : !strcmp(a, "--axes") ? &o->axes : !strcmp(a, "--json-out") ? &o->json_out
                            : !strcmp(a, "--svg-out") ? &o->svg_out : NULL;
        int *num = !strcmp(a, "--top") ? &o->top : !strcmp(a, "--repeats") ? &o->rounds : NULL;
        if (!strcmp(a, "--also")) {
            if (!v || o->nalso == TUNE_TOP_MAX)
                return nd_fail(err, "--also: %s", v ? "at most 16" : "needs a value");
            o->also[o->nalso++] = v, ++i;
            continue;
        }
        if (!strcmp(a, "--predict-only")) {
            o->predict_only = true;
            continue;
        }
        if (num == &o->top && v && !strcmp(v, "all")) { /* every candidate: an exhaustive search */
            o->top = TUNE_MAX, ++i;
            continue;
        }
        if (nr_tune_option(argc, argv, &i, slot, num, num == &o->top ? TUNE_TOP_MAX : TUNE_ROUNDS_MAX, &j->s,
                           "ndrun tune", err))
            return -1;
    }
    if (!o->op || !o->shape || !o->grid)
        return nd_fail(err, "--%s: required", !o->op ? "op" : !o->shape ? "shape" : "grid");
    return 0;
}

/* An einsum: its letters, each letter's size from --shape (one per letter, in order of first appearance
 * over the operands, as ndrun compare reads it), and the output's letters as the search's dims. */
static int setup_einsum(tune_job *j, const nda_kernel_entry *e, nd_error *err)
{
    char letters[64] = "";
    int64_t given[ND_MAX_RANK * 2];
    int n = 0;
    if (j->o.axes)
        return nd_fail(err, "--axes: op '%s' is an einsum, whose letters say what it sums", j->o.op);
    if (e->noperands > TUNE_OPERANDS)
        return nd_failc(err, ND_EREFUSED, "--op %s: %d operands; ndrun tune searches einsums of at most %d",
                        j->o.op, e->noperands, TUNE_OPERANDS);
    j->einsum = true;
    j->noperands = e->noperands;
    j->partial_out = ((e->partial >> (e->noperands - 1)) & 1) && j->dtype == ND_F32;
    for (int k = 0; k < e->noperands; ++k) {
        j->letters[k] = e->indices[k];
        j->names[k] = e->operands[k];
        for (const char *p = e->indices[k]; *p; ++p)
            if (!strchr(letters, *p))
                strncat(letters, p, 1);
    }
    if (nd_parse_dims("--shape", j->o.shape, given, &n, err))
        return -1;
    if ((size_t)n != strlen(letters))
        return nd_fail(err, "--shape %s: op '%s' (%s,%s->%s) needs one size per index letter, %s, in that order",
                       j->o.shape, j->o.op, e->indices[0], e->indices[1], e->indices[2], letters);
    for (int i = 0; i < n; ++i)
        j->size[(unsigned char)letters[i]] = given[i];
    j->rank = (int)strlen(j->letters[e->noperands - 1]);
    for (int d = 0; d < j->rank; ++d)
        j->shape[d] = j->size[(unsigned char)j->letters[e->noperands - 1][d]];
    return 0;
}

/* The op's kind, from its registry entry: an einsum, operands sharing the input's dims, or a
 * reduction. */
static int setup_job(tune_job *j, nd_kernels *k, nd_error *err)
{
    nd_dtype t = ND_F32;
    if (nd_parse_dims("--shape", j->o.shape, j->shape, &j->rank, err) ||
        nd_parse_grid("--grid", j->o.grid, &j->gx, &j->gy, err) ||
        (j->o.dtype && nd_parse_dtype("--dtype", j->o.dtype, &t, err)))
        return -1;
    j->cores = (int64_t)j->gx * j->gy;
    j->elem = nd_dtype_size(t);
    j->dtype = t;
    const nda_kernel_entry *e = NULL;
    for (int i = 0; i < nd_kernels_count(k) && !e; ++i)
        if (!strcmp(nd_kernels_entry(k, i)->op, j->o.op))
            e = nd_kernels_entry(k, i);
    if (!e)
        return nd_failc(err, ND_ENOENT, "--op %s: no such op in the kernel libraries", j->o.op);
    j->in_name = e->operands[0];
    j->out_name = e->operands[e->noperands - 1];
    if (e->noutputs != 1)
        return nd_failc(err, ND_EREFUSED, "--op %s: ndrun tune searches ops with one output", j->o.op);
    j->ninputs = e->noperands - 1;
    if (e->indices && nr_named_indices(e))
        return setup_einsum(j, e, err);
    for (int i = 0; i < e->noperands; ++i)
        if (!e->indices || strcmp(e->indices[i], "..."))
            return nd_failc(err, ND_EREFUSED, "--op %s: its operands are indexed by letters but not as an einsum of "
                                              "two inputs; ndrun tune searches einsums, ops whose operands share the "
                                              "input's dims, and reductions", j->o.op);
    bool reduce = e->reads == NDA_READS_AXES;
    if (reduce != (j->o.axes != NULL))
        return nd_fail(err, reduce ? "--op %s: a reduction: give --axes" : "--op %s: --axes is for reductions",
                       j->o.op);
    if (reduce) {
        const char *p = j->o.axes;
        for (;;) { /* "0,2": distinct dims of the input */
            char *end;
            long a = strtol(p, &end, 10);
            if (end == p || a < 0 || a >= j->rank || j->reduced[a] || (*end && *end != ','))
                return nd_fail(err, "--axes %s: expected distinct dims of the rank-%d input, such as 0 or 0,1",
                               j->o.axes, j->rank);
            j->reduced[a] = true;
            if (!*end)
                break;
            p = end + 1;
        }
        j->drops = true;
        const unsigned kinds = (unsigned)(e->partial_reduce >> 8 * (e->noperands - 1)) & 0xffu;
        for (int r = 0; r < ND_REDUCES && !j->pending; ++r)
            if ((kinds >> r & 1u) && (t == ND_F32 || nd_reduce_selects((nd_reduce)r)))
                j->pending = nd_reduce_name((nd_reduce)r);
    } else if (e->reads == NDA_READS_LAST_AXIS) {
        j->reduced[j->rank - 1] = true; /* each output element reads its row */
    }
    return 0;
}

int nr_tune_prepare(tune_job *j, nd_kernels *k, nd_error *err)
{
    int64_t ways[ND_MAX_RANK];
    if (setup_job(j, k, err))
        return -1;
    if (!(j->c = calloc(TUNE_MAX, sizeof *j->c)))
        return nd_failc(err, ND_ENOMEM, "out of memory");
    enumerate(j, 0, ways, 1);
    if (j->einsum)
        enumerate_summed(j);
    enumerate_pending(j);
    qsort(j->c, (size_t)j->n, sizeof *j->c, by_model);
    if (j->n == 0)
        return nd_failc(err, ND_EREFUSED, "no split of [%s] over %s cores into equal shards", j->o.shape, j->o.grid);
    return 0;
}

int nr_tune_main(int argc, char **argv)
{
    tune_job j;
    nd_error err;
    nd_kernels *k = NULL;
    memset(&j, 0, sizeof j);
    j.chosen = -1;
    nr_settings_init(&j.s);
    for (int i = 1; i < argc; ++i)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(tune_usage, stdout);
            return 0;
        }
    if (parse(argc, argv, &j, &err)) {
        fprintf(stderr, "ndrun tune: %s\n", err.msg);
        return 2;
    }
    ndf_output out;
    memset(&out, 0, sizeof out);
    const char *paths[] = {j.o.json_out, j.o.svg_out}, *what[] = {"--json-out", "--svg-out"};
    int rc = ndf_check_clobber(paths, what, 2, NULL, 0, &err);
    rc = rc || (j.o.json_out && nr_outputs_open(&out, paths, what, 1, &err));
    bool opened = j.o.json_out && !rc;
    rc = rc || nr_open_kernels(&j.s, &k, &err) || nr_tune_prepare(&j, k, &err);
    for (int a = 0; !rc && a < j.o.nalso; ++a)
        rc = pick_also(&j, j.o.also[a], &err);
    int top = j.o.top < j.n ? j.o.top : j.n, win = 0;
    if (!rc)
        nr_tune_both_page_kinds(&j, top);
    for (int i = top; i < j.n; ++i) /* the user's picks are timed too, after the model's best */
        if (j.c[i].picked) {
            cand x = j.c[i];
            memmove(&j.c[top + 1], &j.c[top], (size_t)(i - top) * sizeof *j.c);
            j.c[top++] = x;
        }
    bool tie = false;
    if (!rc && !j.o.predict_only && !(rc = measure(&j, k, top, &err)))
        j.chosen = win = winner(&j, top, &tie);
    if (!rc)
        report_text(stdout, &j, top, win, tie);
    if (!rc && opened)
        rc = nr_write_file(&out, report_json, &j, &err);
    else if (opened)
        ndf_abort(&out); /* the old file stays */
    if (!rc && j.o.svg_out)
        rc = draw_winner(&j, &j.c[win], j.o.svg_out, &err);
    nd_kernels_close(k);
    free(j.c);
    if (rc)
        fprintf(stderr, "ndrun tune: %s\n", err.msg);
    return rc ? 1 : 0;
}
