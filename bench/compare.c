/*
 * compare.c - one case three ways on the same inputs: the generic kernel, the specialized kernel
 * (prebuilt or specialized on demand) and the plain reference, plus OpenBLAS for an f32 matmul.
 * Results are checked first; then the variants are timed in interleaved rounds, so that a slow
 * moment of a shared machine lands on all of them alike.
 */
#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ndrun.h"

enum { MAX_RUNS = 100000 };

static bool is_exact(const nr_setup *su)
{
    nd_dtype t = su->dist[su->n - 1].spec.dtype;
    return !nd_dtype_floating(t) || nr_moves_data(su->entry);
}

/* Whether got matches want: bit for bit for data movement, else within a relative tolerance (the
 * kernels and the reference may sum or contract multiply-adds in another order). */
bool nr_outputs_match(const nr_setup *su, const void *got, const void *want, const char *what, nr_result *r)
{
    int o = su->n - 1;
    nd_dtype t = su->dist[o].spec.dtype;
    if (is_exact(su)) {
        if (memcmp(got, want, (size_t)nr_bytes(su, o)) == 0)
            return true;
        snprintf(r->mismatch, sizeof r->mismatch, "%s differs from the reference in its bytes", what);
        return false;
    }
    double tol = nd_dtype_tolerance(t);
    for (int64_t i = 0; i < su->elems[o]; ++i) {
        double g = nr_load_f32(got, i, t), w = nr_load_f32(want, i, t), e = fabs(g - w);
        if ((isnan(g) && isnan(w)) || g == w) /* both NaN, or equal (the same infinity too) */
            continue;
        r->max_error = e > r->max_error || isnan(e) ? e : r->max_error;
        if (!(e <= tol * fmax(1.0, fabs(w)))) {
            snprintf(r->mismatch, sizeof r->mismatch, "%s element %lld is %.9g, the reference %.9g", what,
                     (long long)i, g, w);
            return false;
        }
    }
    return true;
}

static int64_t code_size(nda_kernel_fn *fn)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!dladdr1((void *)fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
        return 0;
    return (int64_t)sym->st_size;
}

/* ---------------------------------------------------------------- checking */

typedef struct variants {
    nd_kernel_pick generic, special;
    void *out[4]; /* generic, specialized, reference, a peer's */
    nd_launch_stats stats;
    nr_peers peers;
} variants;

/* Element i of the parts combined in part order as the reduction says (part q's element at
 * parts + q * elems); in f32 for a floating dtype, the bytes of the part a max or min selects. A max or
 * min of parts is NaN where any part is, as templates/all_reduce.c gives it. */
static void combine_element(const uint8_t *parts, int nparts, int64_t elems, int64_t i, nd_dtype t, int eb,
                            nd_reduce op, uint8_t *out)
{
    float acc = nr_load_f32(parts, i, t);
    int pick = 0;
    for (int q = 1; q < nparts; ++q) {
        const float v = nr_load_f32(parts + (int64_t)q * elems * eb, i, t);
        if (op == ND_REDUCE_SUM || op == ND_REDUCE_AVG)
            acc += v;
        else if (op == ND_REDUCE_PRODUCT)
            acc *= v;
        else if (!isnan(acc) && (isnan(v) || (op == ND_REDUCE_MAX ? v > acc : v < acc)))
            acc = v, pick = q;
    }
    if (op == ND_REDUCE_AVG)
        acc /= (float)nparts;
    if (op == ND_REDUCE_MAX || op == ND_REDUCE_MIN) /* the selected part's bits, in any dtype */
        memcpy(out + i * eb, parts + ((int64_t)pick * elems + i) * eb, (size_t)eb);
    else /* the runtime allows the other reductions' parts in f32 alone (docs/tune.md) */
        memcpy(out + i * eb, &acc, sizeof acc);
}

/* The output, as the op's reference computes it: a Partial output's parts read one by one and
 * combined (combine_element), since nd_tensor_read refuses a tensor pending its reduction. */
static int read_output(nr_setup *su, void *out, nd_error *err)
{
    const int o = su->n - 1, nparts = su->dist[o].spec.parts, eb = su->dist[o].elem_bytes;
    const int64_t bytes = nr_bytes(su, o), elems = su->elems[o];
    const nd_dtype t = su->dist[o].spec.dtype;
    const nd_reduce op = su->dist[o].spec.reduce;
    if (nparts == 1)
        return nd_tensor_read(su->t[o], out, bytes, err);
    if (!nd_dtype_floating(t) || (op != ND_REDUCE_MAX && op != ND_REDUCE_MIN && t != ND_F32))
        return nd_fail(err, "output '%s' is Partial in %s: ndrun combines the parts of a floating output, and of "
                       "a sum, mean or product only in f32", su->entry->operands[o], nd_dtype_name(t));
    uint8_t *parts = malloc((size_t)nparts * (size_t)bytes);
    int rc = parts ? 0 : nd_failc(err, ND_ENOMEM, "out of host memory for the output's %d parts", nparts);
    for (int q = 0; q < nparts && !rc; ++q)
        rc = nd_tensor_read_part(su->t[o], q, parts + (int64_t)q * bytes, bytes, err);
    for (int64_t i = 0; i < elems && !rc; ++i)
        combine_element(parts, nparts, elems, i, t, eb, op, out);
    free(parts);
    return rc;
}

static int run_kernel(nd_kernels *k, nr_setup *su, nd_variant want, nd_kernel_pick *pick, void *out,
                      nd_launch_stats *st, nd_error *err)
{
    int o = su->n - 1;
    memset(su->host[o], 0, (size_t)nr_bytes(su, o));
    if (nd_tensor_write(su->t[o], su->host[o], nr_bytes(su, o), err))
        return -1;
    nr_watch_begin(want == ND_VARIANT_GENERIC ? "generic" : "specialized", su->entry->op, NULL);
    int rc = nd_run(&(nd_launch_desc){.device = su->dev, .kernels = k, .op = su->entry->op, .tensors = su->t,
                                      .ntensors = su->n, .scalars = su->scalars, .nscalars = su->nscalars,
                                      .variant = want, .pick = pick, .stats = st, .picked = nr_watch_picked}, err);
    nr_watch_end();
    if (rc)
        return -1;
    return read_output(su, out, err);
}

/* The peers that do the op, each checked as the kernels are: against the reference, or against the
 * generic kernel where the op has none. A peer that disagrees is a MISMATCH of the row, as a kernel is. */
static int check_peers(nr_setup *su, variants *v, nr_result *r, nd_error *err)
{
    if (nr_peers_open(su, &v->peers, err))
        return -1;
    r->npeers = v->peers.n;
    for (int i = 0; i < v->peers.n && r->match; ++i) {
        snprintf(r->peer_name[i], sizeof r->peer_name[i], "%s", v->peers.p[i].name);
        memset(v->out[3], 0, (size_t)nr_bytes(su, su->n - 1));
        nr_peer_run(&v->peers, i, su, v->out[3]);
        r->match = nr_outputs_match(su, v->out[3], v->out[r->has_reference ? 2 : 0], v->peers.p[i].name, r);
    }
    return 0;
}

static int check(nd_kernels *k, nr_setup *su, variants *v, nr_result *r, nd_error *err)
{
    size_t bytes = (size_t)nr_bytes(su, su->n - 1);
    for (int i = 0; i < 4; ++i)
        if (!(v->out[i] = nr_host_alloc(su->dev, (int64_t)bytes)))
            return nd_failc(err, ND_ENOMEM, "out of host memory");
    if (run_kernel(k, su, ND_VARIANT_GENERIC, &v->generic, v->out[0], &v->stats, err))
        return -1;
    if (run_kernel(k, su, ND_VARIANT_SPECIALIZED, &v->special, v->out[1], &v->stats, err)) {
        if (v->special.jit != ND_JIT_FAILED)
            return -1;
        /* the compiler failed on the specialized code: warn, and let the generic kernel stand in */
        fprintf(stderr, "ndrun: warning: %s; the generic kernel runs as the specialized one\n", err->msg);
        char note[sizeof v->special.jit_note];
        snprintf(note, sizeof note, "%s", v->special.jit_note);
        if (run_kernel(k, su, ND_VARIANT_GENERIC, &v->special, v->out[1], &v->stats, err))
            return -1;
        v->special.jit = ND_JIT_FAILED;
        snprintf(v->special.jit_note, sizeof v->special.jit_note, "%s", note);
    }
    /* generic against specialized always, bit for bit: they are one template, compiled twice */
    if (memcmp(v->out[0], v->out[1], bytes) != 0) {
        int64_t i = 0, eb = su->dist[su->n - 1].elem_bytes;
        while (memcmp((const uint8_t *)v->out[0] + i * eb, (const uint8_t *)v->out[1] + i * eb, (size_t)eb) == 0)
            ++i;
        snprintf(r->mismatch, sizeof r->mismatch, "the specialized kernel's element %lld differs from the generic "
                 "kernel's in its bytes", (long long)i);
        r->match = false;
        return 0;
    }
    r->has_reference = nr_has_reference(su);
    if (r->has_reference) {
        snprintf(r->reference_name, sizeof r->reference_name, "%s", su->entry->reference_name);
        if (nr_reference(su->dev, su, v->out[2], err))
            return -1;
        r->match = nr_outputs_match(su, v->out[0], v->out[2], "generic", r) &&
                   nr_outputs_match(su, v->out[1], v->out[2], "specialized", r);
    } else { /* said plainly in the table and the JSON (main.c) */
        r->match = true;
    }
    return r->match ? check_peers(su, v, r, err) : 0;
}
/* ---------------------------------------------------------------- timing */

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void summarize(double *t, int n, nr_timing *out)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    *out = (nr_timing){t[n / 2], t[0], t[n - 1], n};
}

/* The variants of a round: the kernels, the plain loop, each peer, each probe of the limit's pattern. */
enum { V_GENERIC, V_SPECIAL, V_REFERENCE, V_PEER, V_PROBE = V_PEER + NR_MAX_PEERS, NV = V_PROBE + NR_MAX_PROBES };

typedef struct rounds {
    double *t[NV];
    bool on[NV];   /* timed */
    bool skip[NV]; /* left out of the next rounds: the verdict does not rest on it (time_variants) */
    int cnt[NV]; /* times of each variant in t[] */
    int n;       /* rounds */
    stream_job stream;
    int probes[NR_MAX_PROBES]; /* stream kinds, for V_PROBE + i */
    /* what each variant touches: the tensors on the device; the host inputs and the plain loop's output,
     * or the peers'; a probe's arrays are the stream's */
    nr_spans device, plain, peer;
    int last; /* the variant run last, whose lines are evicted with the next one's; -1 before any */
} rounds;

static const nr_spans *touched(const rounds *rd, int which)
{
    if (which < 0)
        return NULL;
    return which >= V_PROBE ? nr_stream_spans(&rd->stream, rd->probes[which - V_PROBE])
           : which == V_REFERENCE ? &rd->plain
           : which >= V_PEER      ? &rd->peer
                                  : &rd->device;
}

static int spans_open(const nr_setup *su, const variants *v, rounds *rd)
{
    return nr_setup_spans(su, NULL, &rd->device) || nr_setup_spans(su, v->out[2], &rd->plain) ||
           nr_setup_spans(su, v->out[3], &rd->peer);
}

/* Variant which of a round, timed from a cold cache (nr_cold), into rd->t[which][rd->cnt[which]++]. */
static void run_variant(nr_setup *su, variants *v, rounds *rd, int which)
{
    nd_launch_stats st;
    nd_error err;
    int probe = which >= V_PROBE ? rd->probes[which - V_PROBE] : NR_STREAM_INIT;
    nr_cold(su->dev, touched(rd, which), touched(rd, rd->last));
    rd->last = which;
    if (which == V_GENERIC || which == V_SPECIAL)
        nr_procs_align();
    double t0 = nr_now();
    if (which == V_GENERIC || which == V_SPECIAL) {
        const nda_kernel_entry *e = (which == V_SPECIAL ? v->special : v->generic).entry;
        nr_watch_begin(which == V_SPECIAL ? "specialized" : "generic", e->op, e->symbol);
        nd_launch_entry(su->dev, e, su->t, su->n, su->scalars, su->nscalars, &st, &err);
        nr_watch_end();
        rd->t[which][rd->cnt[which]++] = st.seconds;
        return;
    }
    if (which >= V_PROBE) {
        rd->t[which][rd->cnt[which]++] = nr_stream_once(su->dev, &rd->stream, probe);
        return;
    }
    if (which == V_REFERENCE)
        nr_reference(su->dev, su, v->out[2], &err);
    else
        nr_peer_run(&v->peers, which - V_PEER, su, v->out[3]);
    rd->t[which][rd->cnt[which]++] = nr_now() - t0;
}

/* One round: every variant once but those skipped, each from a flushed cache, starting one later each
 * round so that no variant always follows the same one. The order is the timed variants' rotated, the
 * skipped ones passed over: so the kernels run in the same order on every process under MPI (their
 * launches are collective), whatever each process skips. */
static void one_round(nr_setup *su, variants *v, rounds *rd)
{
    int order[NV], n = 0;
    for (int i = 0; i < NV; ++i)
        if (rd->on[i])
            order[n++] = i;
    for (int i = 0; i < n; ++i) {
        const int which = order[(i + rd->n) % n];
        if (!rd->skip[which])
            run_variant(su, v, rd, which);
    }
    rd->n++;
}

/* Sorted copies of every variant's times so far (variant i's at [i * rd->n], rd->cnt[i] of them), with
 * each timed one's rate (work over its median) and, when fastest is not NULL, over its fastest time. */
static double *sorted_rounds(const rounds *rd, const nr_result *r, double rate[NV], double *fastest)
{
    double *t = malloc((size_t)NV * (size_t)(rd->n ? rd->n : 1) * sizeof *t);
    for (int i = 0; i < NV && t; ++i) {
        if (!rd->cnt[i])
            continue;
        double *ti = t + (size_t)i * (size_t)rd->n;
        memcpy(ti, rd->t[i], (size_t)rd->cnt[i] * sizeof *ti);
        qsort(ti, (size_t)rd->cnt[i], sizeof *ti, cmp_double);
        double work = i >= V_PROBE ? nr_stream_bytes(&rd->stream, rd->probes[i - V_PROBE]) / 1e9
                                   : (r->flops > 0 ? r->flops : r->bytes) / 1e9;
        rate[i] = i >= V_PROBE && r->flops > 0 ? 0 : work / ti[rd->cnt[i] / 2];
        if (fastest)
            fastest[i] = i >= V_PROBE && r->flops > 0 ? 0 : work / ti[0];
    }
    return t;
}

/* Whether the medians that make the verdict are believed (limit.c): the specialized kernel's, and
 * every candidate limit's that could be the limit (nr_could_be_limit); the widest of their intervals
 * into *half. With skip, the candidates that could not be the limit even at their fastest run are
 * marked there: judged by a median of a few rounds, one slowed by a busy moment could be left out for
 * good. A candidate the verdict rests on is never marked (its fastest rate is at least its median's). */
static bool medians_tight(const rounds *rd, const nr_result *r, double *half, bool *skip)
{
    double rate[NV] = {0}, fastest[NV] = {0}, best = 0, h;
    double *t = sorted_rounds(rd, r, rate, fastest);
    bool tight = t != NULL;
    *half = 0;
    for (int i = V_REFERENCE; i < NV; ++i)
        best = rd->cnt[i] && rate[i] > best ? rate[i] : best;
    for (int i = V_SPECIAL; i < NV && t; ++i) {
        const bool rests = rd->cnt[i] && (i == V_SPECIAL || nr_could_be_limit(rate[i], best));
        if (skip && i >= V_REFERENCE)
            skip[i] = rd->cnt[i] && !nr_could_be_limit(fastest[i], best);
        if (!rests)
            continue;
        tight = nr_median_tight(t + (size_t)i * (size_t)rd->n, rd->cnt[i], &h) && tight;
        *half = h > *half ? h : *half;
    }
    free(t);
    return tight;
}

/* The limit: the probes' rates over their own bytes, the FMA peak for a contraction, and the plain
 * loop's and every peer's rate doing the case itself; then checked against those it must not be below. */
static int set_ceiling(rounds *rd, nr_result *r, nd_error *err)
{
    nr_ceiling *c = &r->ceiling;
    memset(c, 0, sizeof *c);
    for (int i = 0; i < NR_MAX_PROBES; ++i)
        if (rd->cnt[V_PROBE + i]) {
            nr_timing t;
            summarize(rd->t[V_PROBE + i], rd->cnt[V_PROBE + i], &t);
            nr_ceiling_add(c, nr_stream_name(rd->probes[i]), nr_stream_bytes(&rd->stream, rd->probes[i]) / t.median / 1e9);
        }
    if (nr_limit_kind(r) == NR_LIMIT_FMA)
        nr_ceiling_add(c, "f32 FMA peak", r->machine.peak_gflops);
    if (r->has_reference)
        nr_ceiling_add(c, "plain loop", nr_rate(r, &r->reference));
    for (int i = 0; i < r->npeers; ++i)
        nr_ceiling_add(c, r->peer_name[i], nr_rate(r, &r->peer[i]));
    if (r->has_reference && nr_ceiling_check(c, "the plain loop", nr_rate(r, &r->reference), err))
        return -1;
    for (int i = 0; i < r->npeers; ++i)
        if (nr_ceiling_check(c, r->peer_name[i], nr_rate(r, &r->peer[i]), err))
            return -1;
    return 0;
}

static int time_variants(nr_setup *su, variants *v, const nr_settings *s, int64_t bytes, nr_result *r, nd_error *err)
{
    rounds rd = {.last = -1};
    int kind = nr_limit_kind(r), nprobes = 0;
    if (s->probes && kind != NR_LIMIT_FMA && nr_stream_open(su->dev, bytes, &rd.stream) == 0)
        nprobes = nr_limit_probes(kind, rd.probes);
    rd.on[V_GENERIC] = rd.on[V_SPECIAL] = true;
    rd.on[V_REFERENCE] = r->has_reference;
    for (int i = 0; i < v->peers.n; ++i)
        rd.on[V_PEER + i] = true;
    for (int i = 0; i < nprobes; ++i)
        rd.on[V_PROBE + i] = true;
    int rc = spans_open(su, v, &rd) ? nd_failc(err, ND_ENOMEM, "out of host memory") : 0;
    for (int i = 0; i < NV && !rc; ++i)
        if (rd.on[i] && !(rd.t[i] = malloc(MAX_RUNS * sizeof(double))))
            rc = nd_failc(err, ND_ENOMEM, "out of host memory");
    if (!rc) {
        one_round(su, v, &rd); /* warm-up: caches, page faults, lazy binding */
        rd.n = 0;
        memset(rd.cnt, 0, sizeof rd.cnt);
        double start = nr_now(), half = 0;
        /* The minimums first, every variant in every round. Every process times as many rounds (each
         * launch is collective under MPI): rank 0 decides. */
        while (nr_procs_agree(rd.n < MAX_RUNS && (rd.n < s->min_repeats || nr_now() - start < s->min_seconds * 3)))
            one_round(su, v, &rd);
        /* Then on until the medians of the verdict are believed, for at most 3 times as long again, in
         * rounds of the kernels and the candidates it rests on so far (medians_tight marks the others,
         * which come back if their medians come within reach): a plain loop of 1.3 s beside kernels of
         * 4 ms left every round 1.3 s long, so such rows stopped at the minimum of 5 rounds, short of the
         * 8 an interval needs, and were always "noisy". The kernels are never left out: under MPI each
         * launch is collective, and every process runs them in every round, whatever else it skips. */
        start = nr_now();
        while (nr_procs_agree(rd.n < MAX_RUNS && nr_now() - start < s->min_seconds * 9 &&
                              !medians_tight(&rd, r, &half, rd.skip)))
            one_round(su, v, &rd);
        r->tight = medians_tight(&rd, r, &half, NULL);
        r->ci_half_width = half;
        summarize(rd.t[V_GENERIC], rd.cnt[V_GENERIC], &r->generic);
        summarize(rd.t[V_SPECIAL], rd.cnt[V_SPECIAL], &r->specialized);
        if (r->has_reference)
            summarize(rd.t[V_REFERENCE], rd.cnt[V_REFERENCE], &r->reference);
        else
            r->reference = (nr_timing){NAN, NAN, NAN, 0};
        for (int i = 0; i < v->peers.n; ++i)
            summarize(rd.t[V_PEER + i], rd.cnt[V_PEER + i], &r->peer[i]);
        rc = s->probes ? set_ceiling(&rd, r, err) : 0; /* without probes the limit is not measured */
    }
    if (nprobes)
        nr_stream_close(&rd.stream);
    nr_spans_free(&rd.device);
    nr_spans_free(&rd.plain);
    nr_spans_free(&rd.peer);
    for (int i = 0; i < NV; ++i)
        free(rd.t[i]);
    return rc;
}

/* ---------------------------------------------------------------- the result */

static void describe(const nr_case *c, const nr_setup *su, nr_result *r)
{
    snprintf(r->label, sizeof r->label, "%s", c->label[0] ? c->label : su->entry->op);
    snprintf(r->family, sizeof r->family, "%s", c->family ? c->family : "");
    snprintf(r->op, sizeof r->op, "%s", su->entry->op);
    r->moves_data = nr_moves_data(su->entry);
    snprintf(r->dtype, sizeof r->dtype, "%s", su->entry->dtypes[su->n - 1]);
    r->shapes[0] = '\0';
    for (int k = 0; k < su->n; ++k) {
        size_t len = strlen(r->shapes);
        snprintf(r->shapes + len, sizeof r->shapes - len, "%s", k == 0 ? "" : k == su->n - 1 ? "->" : ",");
        for (int i = 0; i < su->dist[k].spec.rank; ++i) {
            len = strlen(r->shapes);
            snprintf(r->shapes + len, sizeof r->shapes - len, "%s%lld", i ? "x" : "", (long long)su->dist[k].spec.shape[i]);
        }
    }
    r->bytes = 0;
    for (int k = 0; k < su->n; ++k)
        r->bytes += (double)nr_bytes(su, k);
    r->flops = 0;
    if (nr_is_contraction(su->entry)) { /* 2 per multiply-add: output elements times reduced extent */
        double red = 1;
        for (int i = 0; su->entry->indices[0][i]; ++i)
            if (!strchr(su->entry->indices[2], su->entry->indices[0][i]))
                red *= (double)su->dist[0].spec.shape[i];
        r->flops = 2.0 * (double)su->elems[2] * red;
    }
}

static int64_t sum_of(const int64_t *v, int64_t n)
{
    int64_t t = 0;
    for (int64_t i = 0; i < n; ++i)
        t += v[i];
    return t;
}

/* Once a run: the JIT's notice of a private temporary cache, when it made one. */
static void jit_notice(const nd_kernels *k)
{
    static bool told;
    const char *notice = nd_kernels_jit_notice(k);
    if (notice && !told)
        fprintf(stderr, "ndrun: note: %s\n", notice);
    told |= notice != NULL;
}

int nr_compare(nd_kernels *k, const nr_case *c, const nr_settings *s, nr_result *r, nd_error *err)
{
    nr_setup su;
    variants v = {0};
    memset(r, 0, sizeof *r);
    if (nr_setup_open(k, c, s, &su, err))
        return -1;
    describe(c, &su, r);
    r->threads = nd_device_threads(su.dev);
    int rc = check(k, &su, &v, r, err) || nr_procs_capture(su.dev, r, err); /* the last launch: specialized */
    jit_notice(k);
    if (!rc) {
        r->local_pages = v.stats.total.local_pages_read;
        r->remote_pages = v.stats.total.remote_pages_read;
        for (int i = 0; i + 1 < su.n; ++i) { /* data pages: the layout's pages less the edge shards' padding, of
                                                 every part of a Partial input (each is data the op needs) */
            int64_t per_core[4096];
            const nd_layout *l = &su.dist[i].layout;
            r->input_pages += su.dist[i].spec.parts * (l->ncores <= 4096 && nd_layout_data_pages(l, per_core) == 0
                                                           ? sum_of(per_core, l->ncores)
                                                           : l->num_pages);
        }
        r->jit = v.special.jit;
        snprintf(r->jit_note, sizeof r->jit_note, "%s", v.special.jit_note);
        snprintf(r->generic_symbol, sizeof r->generic_symbol, "%s", v.generic.symbol);
        snprintf(r->specialized_symbol, sizeof r->specialized_symbol, "%s", v.special.symbol);
        snprintf(r->specialized_fixed, sizeof r->specialized_fixed, "%s", v.special.fixed);
        r->generic_code = code_size(v.generic.fn);
        r->specialized_code = code_size(v.special.fn);
        int64_t largest = 0;
        for (int i = 0; i < su.n; ++i)
            largest = nr_bytes(&su, i) > largest ? nr_bytes(&su, i) : largest;
        if (s->probes)
            nr_measure_machine(su.dev, largest, s, &r->machine);
        r->load[0] = nr_load_average();
        rc = time_variants(&su, &v, s, largest, r, err);
        r->load[1] = nr_load_average();
    }
    for (int i = 0; i < 4; ++i)
        free(v.out[i]);
    nr_peers_close(&v.peers);
    nr_setup_close(&su);
    return rc;
}

/* ---------------------------------------------------------------- rates */

double nr_rate(const nr_result *r, const nr_timing *t)
{
    if (t->median <= 0)
        return 0;
    return (r->flops > 0 ? r->flops : r->bytes) / t->median / 1e9;
}

/* Elements of operand k in r->shapes ("4x8,8->4x8"). */
static double operand_elems(const nr_result *r, int k)
{
    const char *p = r->shapes;
    for (int i = 0; i < k && p; ++i)
        p = strpbrk(p, ",-") ? strpbrk(p, ",-") + (*strpbrk(p, ",-") == '-' ? 2 : 1) : NULL;
    double n = 1;
    for (char *end; p && *p >= '0' && *p <= '9'; p = *end == 'x' ? end + 1 : "") {
        n *= strtod(p, &end);
        if (*end != 'x')
            break;
    }
    return n;
}

/* The limit of the traffic a case really does: data movement is a memcpy; an output much smaller than
 * its input (a reduction) only reads, a read-only stream; two inputs as large as the output are
 * STREAM add; otherwise (one input, or the others broadcast) one stream in and one out, copy. */
int nr_limit_kind(const nr_result *r)
{
    if (r->flops > 0)
        return NR_LIMIT_FMA;
    if (r->moves_data)
        return NR_STREAM_MEMCPY;
    int n = 1;
    for (const char *p = r->shapes; (p = strpbrk(p, ",-")); ++p)
        n += 1;
    double out = operand_elems(r, n - 1), in = 0;
    int full = 0;
    for (int k = 0; k + 1 < n; ++k) {
        double e = operand_elems(r, k);
        in = e > in ? e : in;
        full += e >= out && e > 0.5 * out;
    }
    if (out * 8 <= in)
        return NR_STREAM_READ;
    return full >= 2 ? NR_STREAM_ADD : NR_STREAM_COPY;
}

double nr_limit(const nr_result *r)
{
    return nr_ceiling_rate(&r->ceiling);
}

const char *nr_limit_name(const nr_result *r)
{
    return nr_ceiling_name(&r->ceiling);
}

nr_verdict nr_result_verdict(const nr_result *r)
{
    return nr_judge(nr_rate(r, &r->specialized), nr_limit(r), r->tight);
}

double nr_reads_per_page(const nr_result *r)
{
    return r->input_pages > 0 ? (double)(r->local_pages + r->remote_pages) / (double)r->input_pages : 0;
}

int nr_best_peer(const nr_result *r)
{
    int best = -1;
    for (int i = 0; i < r->npeers; ++i)
        if (best < 0 || r->peer[i].median < r->peer[best].median)
            best = i;
    return best;
}
