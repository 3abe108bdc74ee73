/*
 * peers.c - the libraries the field uses for each op family, run beside the kernels on the same data:
 * the case's dense host arrays, as a user of the library would hold them. Which op a library does is
 * decided here once, from the op's name and index notation, as a dense problem (peer.h); each library's
 * file maps that problem to its own calls. Peers are checked against the op's reference like the
 * kernels (compare.c), never trusted.
 */
#include <stdlib.h>
#include <string.h>

#include "peer.h"

/* Every library ndrun was built with, in the order a row lists them. */
static const peer_lib *const libs[] = {
#ifdef NDRUN_HAVE_OPENBLAS
    &nr_peer_openblas,
#endif
#ifdef NDRUN_HAVE_BLIS
    &nr_peer_blis,
#endif
#ifdef NDRUN_HAVE_DNNL
    &nr_peer_dnnl,
#endif
#ifdef NDRUN_HAVE_XSMM
    &nr_peer_xsmm,
#endif
    NULL,
};
enum { NLIBS = sizeof libs / sizeof *libs - 1 };
_Static_assert((int)NLIBS <= (int)NR_MAX_PEERS, "a case has room for every library's peer");

const char *nr_peer_libraries(void)
{
    static char names[128];
    if (!names[0]) {
        for (int i = 0; i < NLIBS; ++i)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", libs[i]->name);
        if (!names[0])
            snprintf(names, sizeof names, "none (ndrun was built without OpenBLAS, BLIS, oneDNN and LIBXSMM)");
    }
    return names;
}

/* ---------------------------------------------------------------- the dense problem */

static bool named(const char *op, const char *const *names)
{
    for (; *names; ++names)
        if (strcmp(op, *names) == 0)
            return true;
    return false;
}

/* The unary and binary ops of specs/eltwise.lua that every peer library names the same way. */
static const char *const unary_ops[] = {"relu", "gelu", "exp", "log", "sqrt", "neg", "abs", "sigmoid", "tanh", NULL};
static const char *const binary_ops[] = {"add", "sub", "mul", "div", "max", "min", NULL};
static const char *const reduce_ops[] = {"reduce_sum", "reduce_max", "reduce_mean", NULL};

/* A letter of a contraction: batch (in both inputs and the output), m (a and the output), n (b and the
 * output) or k (both inputs, reduced); -1 for a letter in one operand alone. */
enum { L_BATCH, L_M, L_N, L_K };
static int letter_kind(const nda_kernel_entry *e, char c)
{
    bool a = strchr(e->indices[0], c), b = strchr(e->indices[1], c), o = strchr(e->indices[2], c);
    return a && b && o ? L_BATCH : a && o ? L_M : b && o ? L_N : a && b ? L_K : -1;
}

/* The letters of s of kind k, in order. */
static void letters(const nda_kernel_entry *e, const char *s, int k, char out[ND_MAX_RANK + 1])
{
    int n = 0;
    for (; *s; ++s)
        if (letter_kind(e, *s) == k)
            out[n++] = *s;
    out[n] = '\0';
}

/* Whether s is its letters of kind k0, then k1, then k2. */
static bool ordered(const nda_kernel_entry *e, const char *s, int k0, int k1, int k2)
{
    char want[3 * ND_MAX_RANK + 3], part[ND_MAX_RANK + 1];
    want[0] = '\0';
    for (int i = 0, k[3] = {k0, k1, k2}; i < 3; ++i) {
        letters(e, s, k[i], part);
        strcat(want, part);
    }
    return strcmp(want, s) == 0;
}

static bool same_letters(const nda_kernel_entry *e, int k, const char *s, const char *t)
{
    char x[ND_MAX_RANK + 1], y[ND_MAX_RANK + 1];
    letters(e, s, k, x);
    letters(e, t, k, y);
    return strcmp(x, y) == 0;
}

/* A contraction as batches of row-major products: a = [batch][m][k], b = [batch][k][n] or
 * [batch][n][k], out = [batch][m][n], each group of letters in one order in every operand; false for any
 * other layout (a peer would need copies first, and then it would not do the same work). */
static bool gemm_of(const nr_setup *su, peer_problem *p)
{
    const nda_kernel_entry *e = su->entry;
    const char *a = e->indices[0], *b = e->indices[1], *o = e->indices[2];
    for (int k = 0; k < 3; ++k)
        for (const char *c = e->indices[k]; *c; ++c)
            if (letter_kind(e, *c) < 0 || strchr(c + 1, *c))
                return false;
    if (!ordered(e, a, L_BATCH, L_M, L_K) || !ordered(e, o, L_BATCH, L_M, L_N) ||
        !same_letters(e, L_BATCH, a, b) || !same_letters(e, L_BATCH, a, o) || !same_letters(e, L_M, a, o) ||
        !same_letters(e, L_K, a, b) || !same_letters(e, L_N, b, o))
        return false;
    if (ordered(e, b, L_BATCH, L_K, L_N))
        p->b_transposed = false;
    else if (ordered(e, b, L_BATCH, L_N, L_K))
        p->b_transposed = true;
    else
        return false;
    p->batches = p->m = p->n = p->k = 1;
    for (int i = 0; a[i]; ++i) {
        int64_t d = su->dist[0].spec.shape[i];
        int kind = letter_kind(e, a[i]);
        *(kind == L_BATCH ? &p->batches : kind == L_M ? &p->m : &p->k) *= d;
    }
    for (int i = 0; b[i]; ++i)
        if (letter_kind(e, b[i]) == L_N)
            p->n *= su->dist[1].spec.shape[i];
    char n_letters[ND_MAX_RANK + 1];
    letters(e, b, L_N, n_letters);
    p->gemv = !n_letters[0] && p->batches == 1;
    return true;
}

/* The case as a dense problem; false when no peer library does its op (user ops, other dtypes). */
static bool problem_of(const nr_setup *su, peer_problem *p)
{
    const nda_kernel_entry *e = su->entry;
    const nd_dist_spec *in = &su->dist[0].spec, *out = &su->dist[su->n - 1].spec;
    memset(p, 0, sizeof *p);
    for (int k = 0; k < su->n; ++k)
        if (su->dist[k].spec.dtype != ND_F32)
            return false;
    p->op = e->op;
    p->rank = in->rank;
    p->threads = nd_device_threads(su->dev);
    p->dev = su->dev;
    p->a_elems = su->elems[0];
    p->elems = su->elems[su->n - 1];
    memcpy(p->a, in->shape, sizeof p->a);
    if (nr_is_contraction(e)) { /* a product only when the op's own reference is the bundled contraction's: a */
        p->kind = PEER_GEMM;    /* spec's own reference says it computes something else (tests/userops) */
        return e->reads == NDA_READS_LETTERS && gemm_of(su, p);
    }
    if (nr_moves_data(e) && e->reads != NDA_READS_PERM) {
        p->kind = PEER_COPY;
        return su->n == 2 && su->elems[0] == su->elems[1];
    }
    if (nr_moves_data(e) && e->reads == NDA_READS_PERM) {
        p->kind = PEER_PERMUTE;
        for (int i = 0; i < p->rank; ++i)
            p->perm[i] = (int)su->scalars[i], p->out[i] = out->shape[i];
        return su->nscalars == p->rank;
    }
    if (strcmp(e->op, "softmax") == 0) {
        p->kind = PEER_SOFTMAX;
        return out->rank == in->rank && memcmp(out->shape, in->shape, sizeof in->shape) == 0;
    }
    if (named(e->op, reduce_ops)) {
        p->kind = PEER_REDUCE;
        memcpy(p->out, in->shape, sizeof p->out);
        for (int i = 0; i < su->nscalars; ++i)
            p->out[(int)su->scalars[i]] = 1;
        return true;
    }
    if (su->n == 2 && named(e->op, unary_ops)) {
        p->kind = PEER_UNARY;
        return su->elems[0] == su->elems[1];
    }
    if (su->n == 3 && named(e->op, binary_ops) && out->rank == in->rank && su->elems[0] == su->elems[2]) {
        const nd_dist_spec *b = &su->dist[1].spec;
        p->kind = PEER_BINARY;
        for (int i = 0; i < p->rank; ++i) { /* numpy broadcasting: b's axes align to the right */
            int j = i - (p->rank - b->rank);
            p->b[i] = j < 0 ? 1 : b->shape[j];
            if (p->b[i] != 1 && p->b[i] != p->a[i])
                return false;
        }
        return b->rank <= p->rank;
    }
    return false;
}

/* ---------------------------------------------------------------- the peers of a case */

int nr_peers_open(const nr_setup *su, nr_peers *out, nd_error *err)
{
    memset(out, 0, sizeof *out);
    if (!(out->problem = malloc(sizeof *out->problem)))
        return nd_failc(err, ND_ENOMEM, "out of host memory");
    if (!problem_of(su, out->problem))
        return 0;
    for (int i = 0; i < NLIBS; ++i) {
        nr_peer *p = &out->p[out->n];
        char what[40] = "";
        int rc = libs[i]->open(out->problem, &p->state, what, sizeof what, err);
        if (rc < 0) {
            nr_peers_close(out);
            return -1;
        }
        if (rc == 0)
            continue;
        p->lib = libs[i];
        snprintf(p->name, sizeof p->name, "%s %s", libs[i]->name, what);
        out->n++;
    }
    return 0;
}

typedef struct peer_call {
    nr_peer *peer;
    const peer_problem *problem;
    const void *in[NR_MAX_OPERANDS];
    void *out;
} peer_call;

static void call_peer(void *ctx)
{
    peer_call *c = ctx;
    c->peer->lib->run(c->peer->state, c->problem, c->in, c->out);
}

/* Unpinned (machine.c): the threads a library starts at its first call spread over the CPUs, as its
 * users' would, rather than inherit the one CPU ndrun's own thread is pinned to. */
void nr_peer_run(nr_peers *ps, int i, const nr_setup *su, void *out)
{
    peer_call c = {&ps->p[i], ps->problem, {0}, out};
    for (int k = 0; k + 1 < su->n; ++k)
        c.in[k] = su->host[k];
    nr_run_unpinned(call_peer, &c);
}

void nr_peers_close(nr_peers *ps)
{
    for (int i = 0; i < ps->n; ++i)
        ps->p[i].lib->close(ps->p[i].state);
    free(ps->problem);
    memset(ps, 0, sizeof *ps);
}

/* Multiply-adds times 2 of a contraction's peer problem, or 0. */
double nr_peers_flops(const nr_peers *ps)
{
    const peer_problem *p = ps->problem;
    return p && p->kind == PEER_GEMM ? 2.0 * (double)p->batches * (double)p->m * (double)p->n * (double)p->k : 0;
}
