/*
 * pairs_mpi.c - a launch ordered with the processes it talks to, in place of a fence over all of them.
 *
 * Why that is enough. Kernels write only their own core's pages (owner computes), no core reads within a
 * launch a page another core writes in it, and host calls fence on both sides. The one other write is
 * an allocation's clearing, by the process holding the memory: for L1 that is the pages' writer, and a
 * DRAM allocation, whose holder may be neither writer nor reader, fences (nd_tensor_alloc). So a launch L
 * needs two orders between processes, both between a page's writer and its readers:
 * - read after write: a page a core of this process reads in L was last written before L, by a launch
 *   of its writer w, or by w clearing it (or by a host call or a DRAM allocation, fenced). At L's start
 *   w sends READY, having finished every call before L and made its stores visible (MPI_Win_sync); this
 *   process waits for READY from every writer of a page it reads before its cores (or its gets) read
 *   one, then MPI_Win_sync (its loads after).
 * - write after read: w may write that page again in a launch after L. Once this process's cores and
 *   gets are done with L (MPI_Win_sync: the loads are complete) it sends DONE to every writer it read
 *   from, and a writer leaves L only with DONE from every process that reads its pages.
 * A process paired with nobody waits for nobody. Both sides see the same pairs: which process's cores
 * read which process's pages follows from the op's read rule and the distributions alone (the walk
 * staging does, nd_mpi_page_reads), over the whole output, so every process computes the same relation
 * R (R[r][w]: process r's cores read a page process w writes); this process's writers are R[me][*] and
 * its readers R[*][me]. That walk is the whole tensor's, so it is done once per launch key (the op, the
 * tensors' idents, which hash their distributions and placements, the scalars and the read rule: all
 * the walk reads) and kept in a small cache; a relation too dense to pay for its messages fences.
 * Launches whose reads no rule describes (user ops without a reference, inputs of pending parts to any op
 * but all_reduce and reduce_scatter) fence.
 *
 * Every message carries the call's word and this process's count of fences and pairs, so processes that
 * make different calls are named where two of them meet; each call is also hashed into what the next
 * fence compares (nd_mpi_note_call), so processes that meet nobody in between are named there. The
 * waits end at fence_timeout naming the processes that have not arrived, as a fence does. Tags on the
 * fence's communicator: its collectives and these messages do not match each other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

enum { TAG_READY = 1, TAG_DONE = 2 };

typedef struct relation {
    const nd_mpi_ctx *c;
    uint8_t *r;    /* [nranks * nranks]: r[reader * nranks + writer] */
    int reader;    /* the process writing the output entry being walked */
    int64_t copy;  /* the input's copy its core reads */
} relation;

/* One input page an output entry's page reads: the entry's writer reads it, in the copy its core sees. */
static void mark(void *ctx, const nd_tensor *in, nd_loc loc)
{
    relation *rel = ctx;
    int n = rel->c->procs.nranks, w = nd_mpi_writer_of(rel->c, in, rel->copy * in->dist.layout.ncores + loc.core);
    if (w >= 0)
        rel->r[(size_t)rel->reader * (size_t)n + (size_t)w] = 1;
}

/* Whether the rule describes every input's reads, of a launch with one output; else the launch fences. */
static bool rule_covers(nd_tensor *const *ts, int ntensors, int ninputs, const nd_read_rule *rule)
{
    if (!rule || ntensors - ninputs != 1)
        return false;
    for (int k = 0; k < ninputs; ++k)
        if (!nd_mpi_rule_applies(rule, k, ninputs, ts[k], ts[ntensors - 1]))
            return false;
    return true;
}

/* R over every output page, as every process computes it (rule_covers holds). */
static void walk(nd_mpi_ctx *c, nd_tensor *const *ts, int ntensors, int ninputs, const nd_read_rule *rule,
                 uint8_t *r)
{
    const nd_tensor *out = ts[ntensors - 1];
    relation rel = {c, r, 0, 0};
    const nd_dist *d = &out->dist;
    int64_t per = d->layout.ncores;
    for (int64_t i = 0; i < d->spec.replicas * per; ++i) { /* every entry of every copy, by its writer */
        int64_t id = nd_mpi_writer_core(c, out, i), e = i % per, part = i / per / (d->spec.replicas / d->spec.parts);
        if (id < 0)
            continue;
        rel.reader = c->rank_of_core[id];
        for (int k = 0; k < ninputs; ++k) {
            const nd_tensor *in = ts[k];
            for (int64_t j = 0; j < nd_mpi_copies_read(rule, in); ++j) {
                rel.copy = nd_mpi_copy_read(rule, in, id, j);
                if (rule->kind == ND_READS_POINTWISE && nd_mpi_same_placement(in, out)) { /* entry e reads entry e */
                    mark(&rel, in, (nd_loc){.core = e});
                    continue;
                }
                for (nd_page_iter it = nd_page_iter_begin(&d->squeezed, e); it.valid; nd_page_iter_next(&it))
                    nd_mpi_page_reads(rule, k, ninputs, out, it.page_id, part, in, mark, &rel);
            }
        }
    }
}

/* The ranks q != me with r[me][q] (from) or r[q][me] (to). */
static int32_t *ranks_of(const nd_mpi_ctx *c, const uint8_t *r, bool from, int *count)
{
    int n = c->procs.nranks, me = c->procs.rank;
    int32_t *v = malloc((size_t)n * sizeof *v);
    if (!v)
        nd_mpi_die(c, "pairing a launch (out of memory)", MPI_ERR_NO_MEM);
    *count = 0;
    for (int q = 0; q < n; ++q)
        if (q != me && (from ? r[(size_t)me * (size_t)n + (size_t)q] : r[(size_t)q * (size_t)n + (size_t)me]))
            v[(*count)++] = q;
    return v;
}

/* Whether some process talks with more processes than an all-reduce takes rounds (ceil(log2 R)): each
 * side of a launch is one all-reduce when fenced, or a message to or from every partner in pairs, so past
 * that pairs cost more than they save (4 processes all reading each other over TCP: 392 to 577 µs a
 * launch in pairs, 358 to 460 fenced, nd_mpi_sync_bench). Every process finds the same answer from the
 * same relation. */
static bool dense(const nd_mpi_ctx *c, const uint8_t *r)
{
    int n = c->procs.nranks, rounds = 0;
    while ((1 << rounds) < n)
        ++rounds;
    for (int q = 0; q < n; ++q) {
        int talks = 0;
        for (int p = 0; p < n; ++p)
            talks += p != q && (r[(size_t)q * (size_t)n + (size_t)p] || r[(size_t)p * (size_t)n + (size_t)q]);
        if (talks > rounds)
            return true;
    }
    return false;
}

static void talk_clear(nd_mpi_talk *t)
{
    free(t->from);
    free(t->to);
    memset(t, 0, sizeof *t);
}

void nd_mpi_talk_free(nd_mpi_ctx *c)
{
    for (int i = 0; i < ND_MPI_TALK_CACHE; ++i)
        talk_clear(&c->talk[i]);
}

/* The launch key with the read rule, which the walk also reads: two kernel libraries may give one op
 * name different rules. */
static uint64_t rule_key(uint64_t key, int ntensors, const nd_read_rule *rule)
{
    int32_t what[3 + ND_MAX_RANK] = {(int32_t)rule->kind, rule->naxes, rule->chunked};
    for (int i = 0; i < rule->naxes && i < ND_MAX_RANK; ++i)
        what[3 + i] = rule->axes[i];
    key = nd_hash_bytes(key, what, sizeof what);
    for (int i = 0; rule->kind == ND_READS_LETTERS && i < ntensors; ++i)
        key = nd_hash_bytes(key, rule->indices[i], strlen(rule->indices[i]) + 1);
    return key;
}

/* The launch's pairs, from the cache or walked; NULL when it fences. */
static const nd_mpi_talk *talk_of(nd_mpi_ctx *c, uint64_t key, nd_tensor *const *ts, int ntensors, int ninputs,
                                  const nd_read_rule *rule)
{
    if (!rule_covers(ts, ntensors, ninputs, rule)) /* before any allocation: most fenced launches are these */
        return NULL;
    key = rule_key(key, ntensors, rule);
    for (int i = 0; key && i < ND_MPI_TALK_CACHE; ++i)
        if (c->talk[i].key == key)
            return &c->talk[i];
    size_t n = (size_t)c->procs.nranks;
    uint8_t *r = calloc(n * n, 1);
    if (!r)
        nd_mpi_die(c, "pairing a launch (out of memory for the relation)", MPI_ERR_NO_MEM);
    walk(c, ts, ntensors, ninputs, rule, r);
    nd_mpi_talk *t = &c->talk[c->talk_next];
    c->talk_next = (c->talk_next + 1) % ND_MPI_TALK_CACHE;
    talk_clear(t);
    t->from = ranks_of(c, r, true, &t->nfrom);
    t->to = ranks_of(c, r, false, &t->nto);
    t->fence = dense(c, r);
    t->key = key;
    free(r);
    return t;
}

/* One side's message to each of send[0..nsend) and from each of recv[0..nrecv), tag `tag`, each carrying
 * the call's word and this process's fence count; between MPI_Win_sync calls, as a fence. */
static void exchange(nd_mpi_ctx *c, nd_fence_call call, int tag, const int32_t *send, int nsend, const int32_t *recv,
                     int nrecv)
{
    int rc;
    int64_t mine[2] = {nd_mpi_call_word(call), ++c->fences};
    nd_mpi_note_call(c, call); /* compared at the next fence too, by every process */
    c->board_mine[ND_MPI_BOARD_FENCES] = mine[1];
    c->board_mine[ND_MPI_BOARD_CALL] = 2 * (int64_t)call.call + call.end;
    c->board_mine[ND_MPI_BOARD_KEY] = mine[0];
    if ((rc = MPI_Win_sync(c->board)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Win_sync of the fence board", rc);
    if (nsend + nrecv == 0)
        return;
    if (c->win != MPI_WIN_NULL && (rc = MPI_Win_sync(c->win)) != MPI_SUCCESS) /* this process's stores, or */
        nd_mpi_die(c, "MPI_Win_sync", rc);                                       /* its loads, are complete */
    if (c->rma != MPI_WIN_NULL && (rc = MPI_Win_sync(c->rma)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Win_sync of the RMA window", rc);
    int64_t(*got)[2] = malloc((size_t)(nrecv ? nrecv : 1) * sizeof *got);
    MPI_Request *req = malloc((size_t)(nsend + nrecv) * sizeof *req);
    if (!got || !req)
        nd_mpi_die(c, "pairing a launch (out of memory)", MPI_ERR_NO_MEM);
    for (int i = 0; i < nrecv; ++i)
        if ((rc = MPI_Irecv(got[i], 2, MPI_INT64_T, recv[i], tag, c->fence_comm, &req[i])) != MPI_SUCCESS)
            nd_mpi_die(c, "MPI_Irecv of a launch's pair", rc);
    for (int i = 0; i < nsend; ++i)
        if ((rc = MPI_Isend(mine, 2, MPI_INT64_T, send[i], tag, c->fence_comm, &req[nrecv + i])) != MPI_SUCCESS)
            nd_mpi_die(c, "MPI_Isend of a launch's pair", rc);
    double start = nd_mpi_now();
    for (long spins = 0, done = 0; !done; ++spins) {
        int flag = 0;
        if ((rc = MPI_Testall(nsend + nrecv, req, &flag, MPI_STATUSES_IGNORE)) != MPI_SUCCESS)
            nd_mpi_die(c, "MPI_Testall of a launch's pairs", rc);
        if ((done = flag))
            break;
        double waited = nd_mpi_now() - start;
        nd_mpi_pause(spins, waited);
        if (waited > c->fence_timeout)
            nd_mpi_report_absent(c);
    }
    for (int i = 0; i < nrecv; ++i)
        if (got[i][0] != mine[0] || got[i][1] != mine[1]) {
            char theirs[96], ours[96];
            nd_mpi_call_text(ours, sizeof ours, c->board_mine[ND_MPI_BOARD_CALL]);
            snprintf(theirs, sizeof theirs, "another call (key %016llx)", (unsigned long long)got[i][0]);
            fprintf(stderr, "ndgen mpi: process %d of %d: at fence %lld, %s (key %016llx), process %d was at fence "
                            "%lld, %s: the processes made different device calls (every process must make the same "
                            "calls, in the same order, on tensors allocated in the same order, with the same "
                            "arguments); ending the job\n", c->procs.rank, c->procs.nranks, (long long)mine[1], ours,
                    (unsigned long long)mine[0], recv[i], (long long)got[i][1],
                    got[i][0] == mine[0] ? "the same call" : theirs);
            fflush(stderr);
            MPI_Abort(c->comm, 1);
        }
    free(got);
    free(req);
    if (c->win != MPI_WIN_NULL && (rc = MPI_Win_sync(c->win)) != MPI_SUCCESS) /* later loads and stores after */
        nd_mpi_die(c, "MPI_Win_sync", rc);
}

bool nd_mpi_pair_open(nd_device *dev, nd_fence_call call, nd_tensor *const *ts, int ntensors, int ninputs,
                      const nd_read_rule *rule)
{
    nd_mpi_ctx *c = dev->procs->ctx;
    const nd_mpi_talk *t = c->sync == ND_MPI_SYNC_PAIRS ? talk_of(c, call.key, ts, ntensors, ninputs, rule) : NULL;
    if (!t || t->fence)
        return false;
    c->talk_now = t; /* READY to the readers of this process's pages, from the writers of those it reads */
    c->mine.order = ND_MPI_ORDER_PAIRS;
    c->mine.pair_writers = t->nfrom;
    c->mine.pair_readers = t->nto;
    exchange(c, call, TAG_READY, t->to, t->nto, t->from, t->nfrom);
    return true;
}

void nd_mpi_pair_close(nd_device *dev, nd_fence_call call)
{
    nd_mpi_ctx *c = dev->procs->ctx;
    const nd_mpi_talk *t = c->talk_now; /* DONE to the writers read from, from this process's readers */
    exchange(c, call, TAG_DONE, t->from, t->nfrom, t->to, t->nto);
    c->talk_now = NULL;
}
