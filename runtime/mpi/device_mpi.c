/*
 * device_mpi.c - a device over the processes of an MPI job: the core-to-process map, the nodes, the
 * shared-memory window holding the node's L1 and banks, the fence that ends a launch, and the
 * gathering of statistics. Not the launch itself (device.c runs this process's cores), nor the other
 * nodes' pages (stage_mpi.c), nor host I/O (hostio.c; MPI-IO in io_mpi.c).
 *
 * Why a barrier between MPI_Win_sync calls ends a launch correctly: kernels write only pages their own
 * core owns (owner computes), each page has one writer, and no core reads a page another core writes
 * in the same launch. So the only ordering needed is between launches (and host calls): every store of
 * launch k must be visible to every load of launch k+1. MPI_Win_sync makes this process's stores to
 * the window visible (a memory barrier in the unified model), the barrier orders the processes, and the
 * second MPI_Win_sync keeps this process's later loads after it.
 */
#include <stdio.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "mpi_internal.h"

/* Unreadable environment values, which check_local refuses by name. */
enum { NODE_SIZE_UNREADABLE = -1, GETS_UNREADABLE = -1, SYNC_UNREADABLE = -1, STATS_ROOT_UNREADABLE = -2 };

/* The longest fence wait accepted, in seconds: a day. Longer (or infinite) is a job that hangs without a
 * word when a process dies. */
enum { MAX_FENCE_TIMEOUT = 86400 };

void nd_mpi_config_init(nd_mpi_config *mcfg)
{
    mcfg->banks = ND_MPI_BANKS_BY_CORE;
    mcfg->fence_timeout = 120.0;
    mcfg->node_size = 0;
    mcfg->gets = ND_MPI_GETS_BATCHED;
    mcfg->sync = ND_MPI_SYNC_PAIRS;
    mcfg->stats_root = -1;
    const char *k = getenv("NDGEN_MPI_NODE_SIZE"), *g = getenv("NDGEN_MPI_GETS"),
               *f = getenv("NDGEN_MPI_FENCE_TIMEOUT"), *s = getenv("NDGEN_MPI_STATS_ROOT"),
               *y = getenv("NDGEN_MPI_SYNC");
    if (f && *f) { /* seconds; unreadable, or out of (0, a day] ("inf" included): NaN, which check_local
                    * refuses by name */
        char *end;
        double v = strtod(f, &end);
        mcfg->fence_timeout = *end || !(v > 0 && v <= MAX_FENCE_TIMEOUT) ? NAN : v;
    }
    if (k && *k) {
        char *end;
        long v = strtol(k, &end, 10);
        mcfg->node_size = *end || v < 0 || v > 1 << 30 ? NODE_SIZE_UNREADABLE : (int)v;
    }
    if (s && *s) { /* a rank or -1; unreadable: STATS_ROOT_UNREADABLE, which check_local refuses by name */
        char *end;
        long v = strtol(s, &end, 10);
        mcfg->stats_root = *end || v < -1 || v > INT_MAX - 1 ? STATS_ROOT_UNREADABLE : (int)v;
    }
    if (g && *g)
        mcfg->gets = strcmp(g, "batched") == 0 ? ND_MPI_GETS_BATCHED
                     : strcmp(g, "page") == 0  ? ND_MPI_GETS_PER_PAGE
                                               : (nd_mpi_gets)GETS_UNREADABLE;
    if (y && *y)
        mcfg->sync = strcmp(y, "pairs") == 0   ? ND_MPI_SYNC_PAIRS
                     : strcmp(y, "fence") == 0 ? ND_MPI_SYNC_FENCE
                                               : (nd_mpi_sync)SYNC_UNREADABLE;
}

/* How long a process whose fence timed out waits for each other process's board: one that does not
 * answer in this time is stopped, dead, or computing outside MPI on a transport that needs it. */
static const double BOARD_ANSWER_SECONDS = 2.0;

/* "the start of a launch", "the end of nd_tensor_write", from a board's call word. */
void nd_mpi_call_text(char *buf, size_t len, int64_t word)
{
    if (word < 0)
        snprintf(buf, len, "none yet");
    else
        snprintf(buf, len, "the %s of %s", word % 2 ? "end" : "start", nd_call_name((nd_call)(word / 2)));
}

/* The word processes compare in a fence: call, side and key, in 62 bits, so that its negation fits and
 * one MPI_MAX gives both the largest and the smallest. */
int64_t nd_mpi_call_word(nd_fence_call call)
{
    int32_t what[2] = {(int32_t)call.call, call.end};
    return (int64_t)(nd_hash_bytes(call.key, what, sizeof what) >> 2);
}

/* Called on every process at once, after a fence found that their calls differ: each process's call to
 * every process (one gather on the fence communicator, where all of them are), printed by process 0,
 * then the job ends. */
static _Noreturn void report_different(nd_mpi_ctx *c)
{
    int n = c->procs.nranks;
    int64_t *all = calloc((size_t)n * ND_MPI_BOARD_WORDS, sizeof *all);
    if (!all || MPI_Allgather(c->board_mine, ND_MPI_BOARD_WORDS, MPI_INT64_T, all, ND_MPI_BOARD_WORDS, MPI_INT64_T,
                              c->fence_comm) != MPI_SUCCESS) {
        fprintf(stderr, "ndgen mpi: process %d of %d: at fence %lld the processes made different device calls; "
                        "ending the job\n", c->procs.rank, n, (long long)c->fences);
    } else if (c->procs.rank == 0) {
        fprintf(stderr, "ndgen mpi: at fence %lld the processes made different device calls (every process must "
                        "make the same calls, in the same order, on tensors allocated in the same order, with the "
                        "same arguments):\n", (long long)c->fences);
        for (int r = 0; r < n; ++r) {
            const int64_t *b = all + (size_t)r * ND_MPI_BOARD_WORDS;
            char what[96];
            nd_mpi_call_text(what, sizeof what, b[ND_MPI_BOARD_CALL]);
            int same = 0; /* processes before r at the same call, with another key */
            for (int q = 0; q < r; ++q)
                same += all[(size_t)q * ND_MPI_BOARD_WORDS + ND_MPI_BOARD_CALL] == b[ND_MPI_BOARD_CALL] &&
                        all[(size_t)q * ND_MPI_BOARD_WORDS + ND_MPI_BOARD_KEY] != b[ND_MPI_BOARD_KEY];
            fprintf(stderr, "  process %d: %s (key %016llx)%s\n", r, what, (unsigned long long)b[ND_MPI_BOARD_KEY],
                    same ? ": the same call as an earlier process, on other tensors or arguments" : "");
        }
        fprintf(stderr, "ndgen mpi: ending the job\n");
    }
    fflush(stderr);
    if (all) /* process 0 has printed before any process ends the job */
        MPI_Barrier(c->fence_comm);
    free(all);
    MPI_Abort(c->comm, 1);
    abort(); /* MPI_Abort does not return */
}

/* After fence_timeout: which processes have not arrived, from their boards (read with gets, which a
 * stopped process on another node does not answer), then the job ends. */
_Noreturn void nd_mpi_report_absent(nd_mpi_ctx *c)
{
    int n = c->procs.nranks, me = c->procs.rank;
    char mine[96], line[256];
    nd_mpi_call_text(mine, sizeof mine, c->board_mine[ND_MPI_BOARD_CALL]);
    fprintf(stderr, "ndgen mpi: process %d of %d: a fence waited %.0f s for the other processes (one has died or "
                    "hangs, or reached this call that much later: raise nd_mpi_config.fence_timeout or "
                    "NDGEN_MPI_FENCE_TIMEOUT for work that uneven); ending the job. This process is at fence %lld, "
                    "%s.\n", me, n, c->fence_timeout, (long long)c->fences, mine);
    int64_t *all = calloc((size_t)n * ND_MPI_BOARD_WORDS, sizeof *all);
    MPI_Request *req = calloc((size_t)n, sizeof *req);
    int *done = calloc((size_t)n, sizeof *done);
    for (int r = 0; all && req && done && r < n; ++r) {
        req[r] = MPI_REQUEST_NULL;
        done[r] = r == me || MPI_Rget(all + (size_t)r * ND_MPI_BOARD_WORDS, ND_MPI_BOARD_WORDS, MPI_INT64_T, r, 0,
                                      ND_MPI_BOARD_WORDS, MPI_INT64_T, c->board, &req[r]) != MPI_SUCCESS;
        if (done[r] && r != me)
            done[r] = -1; /* the get could not be made */
    }
    for (double start = nd_mpi_now(); all && req && done && nd_mpi_now() - start < BOARD_ANSWER_SECONDS;) {
        int pending = 0;
        for (int r = 0; r < n; ++r)
            if (!done[r]) {
                int flag = 0;
                if (MPI_Test(&req[r], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                    done[r] = -1;
                else
                    done[r] = flag, pending += !flag;
            }
        if (!pending)
            break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    for (int r = 0; all && req && done && r < n; ++r) {
        const int64_t *b = all + (size_t)r * ND_MPI_BOARD_WORDS;
        char what[96];
        if (r == me)
            continue;
        nd_mpi_call_text(what, sizeof what, b[ND_MPI_BOARD_CALL]);
        if (done[r] != 1)
            snprintf(line, sizeof line, "did not answer within %.0f s (stopped, dead, or busy outside MPI)",
                     BOARD_ANSWER_SECONDS);
        else if (b[ND_MPI_BOARD_FENCES] < c->fences)
            snprintf(line, sizeof line, "has not reached this fence: its last was fence %lld, %s",
                     (long long)b[ND_MPI_BOARD_FENCES], what);
        else
            snprintf(line, sizeof line, "is at fence %lld, %s", (long long)b[ND_MPI_BOARD_FENCES], what);
        fprintf(stderr, "  process %d %s\n", r, line);
    }
    fflush(stderr);
    MPI_Abort(c->comm, 1);
    abort(); /* MPI_Abort does not return */
}

/* MPI_Win_sync; a barrier that compares the processes' calls and gives up after fence_timeout seconds;
 * MPI_Win_sync. The barrier is an all-reduce of two words, which costs what a barrier does. */
static void fence_ctx(nd_mpi_ctx *c, nd_fence_call call)
{
    MPI_Request req;
    int rc, done = 0;
    int64_t word = nd_mpi_call_word(call);
    if (c->skipped) { /* the calls made since the last fence without one are compared here */
        word = (int64_t)(nd_hash_bytes(c->skipped, &word, sizeof word) >> 2);
        c->skipped = 0;
    }
    int64_t in[2] = {word, -word}, out[2];
    c->board_mine[ND_MPI_BOARD_FENCES] = ++c->fences;
    c->board_mine[ND_MPI_BOARD_CALL] = 2 * (int64_t)call.call + call.end;
    c->board_mine[ND_MPI_BOARD_KEY] = word;
    if ((rc = MPI_Win_sync(c->board)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Win_sync of the fence board", rc);
    if (c->win != MPI_WIN_NULL && (rc = MPI_Win_sync(c->win)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Win_sync", rc);
    if (c->rma != MPI_WIN_NULL && (rc = MPI_Win_sync(c->rma)) != MPI_SUCCESS) /* this process's stores, for gets */
        nd_mpi_die(c, "MPI_Win_sync of the RMA window", rc);
    if ((rc = MPI_Iallreduce(in, out, 2, MPI_INT64_T, MPI_MAX, c->fence_comm, &req)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Iallreduce of the fence", rc);
    double start = nd_mpi_now();
    for (long spins = 0; !done; ++spins) {
        if ((rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
            nd_mpi_die(c, "MPI_Test of the fence", rc);
        if (done)
            break;
        double waited = nd_mpi_now() - start;
        nd_mpi_pause(spins, waited);
        if (waited > c->fence_timeout)
            nd_mpi_report_absent(c);
    }
    if (out[0] != -out[1]) /* the largest word is not the smallest: seen alike by every process */
        report_different(c);
    if (c->win != MPI_WIN_NULL && (rc = MPI_Win_sync(c->win)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Win_sync", rc);
}

static void fence(nd_device *dev, nd_fence_call call)
{
    nd_mpi_ctx *c = dev->procs->ctx;
    c->mine.order = ND_MPI_ORDER_FENCE; /* a launch's, or a host call's (reset by the next launch's gather) */
    fence_ctx(c, call);
}

/* A fence a launch does without (it reads no other core's page): nothing waits, but the call counts,
 * hashed in order into what the next fence compares, so that processes whose calls differ in between
 * are still found there. */
void nd_mpi_note_call(nd_mpi_ctx *c, nd_fence_call call)
{
    int64_t word = nd_mpi_call_word(call);
    c->skipped = nd_hash_bytes(c->skipped ? c->skipped : 1, &word, sizeof word) | 1; /* never 0 once noted */
}

static void skip(nd_device *dev, nd_fence_call call)
{
    nd_mpi_ctx *c = dev->procs->ctx;
    c->mine.order = ND_MPI_ORDER_NONE;
    nd_mpi_note_call(c, call);
}

/* The launch's per-core statistics and every process's share, into every process or into stats_root
 * alone (its own cores' entries are in place: the launch zeroed every core's and ran its own). */
static void gather(nd_device *dev, double own_seconds)
{
    nd_mpi_ctx *c = dev->procs->ctx;
    int rc, root = c->stats_root;
    c->mine.seconds = own_seconds;
    if (root < 0) {
        rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, dev->stats, c->stat_counts, c->stat_displs, MPI_BYTE,
                            c->comm);
        if (rc != MPI_SUCCESS)
            nd_mpi_die(c, "MPI_Allgatherv of the launch statistics", rc);
        rc = MPI_Allgather(&c->mine, sizeof c->mine, MPI_BYTE, c->shares, sizeof c->mine, MPI_BYTE, c->comm);
    } else {
        bool at_root = c->procs.rank == root;
        const uint8_t *own = (const uint8_t *)dev->stats + c->stat_displs[c->procs.rank];
        rc = MPI_Gatherv(at_root ? MPI_IN_PLACE : own, c->stat_counts[c->procs.rank], MPI_BYTE, dev->stats, c->stat_counts,
                         c->stat_displs, MPI_BYTE, root, c->comm);
        if (rc != MPI_SUCCESS)
            nd_mpi_die(c, "MPI_Gatherv of the launch statistics", rc);
        if (!at_root) { /* every other process's share is not here: zeros, as its cores' entries are */
            memset(c->shares, 0, (size_t)c->procs.nranks * sizeof *c->shares);
            c->shares[c->procs.rank] = c->mine;
        }
        rc = MPI_Gather(&c->mine, sizeof c->mine, MPI_BYTE, c->shares, sizeof c->mine, MPI_BYTE, root, c->comm);
    }
    if (rc != MPI_SUCCESS)
        nd_mpi_die(c, root < 0 ? "MPI_Allgather of the launch times and gets" : "MPI_Gather of the launch times and gets", rc);
    memset(&c->mine, 0, sizeof c->mine);
}

static void close_procs(nd_device_procs *p)
{
    nd_mpi_ctx *c = p->ctx;
    if (c->board != MPI_WIN_NULL) { /* a process still making calls meets this fence and is named */
        fence_ctx(c, (nd_fence_call){ND_CALL_CLOSE, false, 0});
        MPI_Win_unlock_all(c->board);
        MPI_Win_free(&c->board);
    }
    if (c->fence_comm != MPI_COMM_NULL)
        MPI_Comm_free(&c->fence_comm);
    if (c->rma != MPI_WIN_NULL) { /* ends the device's one passive-target epoch */
        MPI_Win_unlock_all(c->rma);
        MPI_Win_free(&c->rma);
    }
    nd_mpi_staging_free(&c->staging);
    if (c->win != MPI_WIN_NULL) {
        MPI_Win_unlock_all(c->win);
        MPI_Win_free(&c->win);
    }
    if (c->shm != MPI_COMM_NULL)
        MPI_Comm_free(&c->shm);
    if (c->comm != MPI_COMM_NULL)
        MPI_Comm_free(&c->comm);
    free(c->rank_of_core);
    free(c->rank_of_bank);
    free(c->core_lo);
    free(c->stat_counts);
    free(c->stat_displs);
    free(c->shares);
    free(c->node_of_rank);
    free(c->seg_bytes);
    free(c->seg_base);
    free(c->core_disp);
    free(c->bank_disp);
    nd_mpi_talk_free(c);
    free(c);
}

/* The settings every process must share, for comparing them. */
typedef struct shared_cfg {
    int64_t grid_x, grid_y, l1_bytes, dram_banks, dram_bank_bytes, banks, node_size, gets, sync, stats_root;
} shared_cfg;

static int check_same(nd_mpi_ctx *c, const nd_device_config *cfg, const nd_mpi_config *m, nd_error *err)
{
    shared_cfg mine = {cfg->grid_x, cfg->grid_y,  cfg->l1_bytes, cfg->dram_banks, cfg->dram_bank_bytes,
                       m->banks,    m->node_size, m->gets,     m->sync,     m->stats_root};
    int n = c->procs.nranks;
    shared_cfg *all = malloc((size_t)n * sizeof *all);
    int ok = all != NULL, everywhere;
    if (ok && MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, c->comm) != MPI_SUCCESS)
        ok = 0;
    if (MPI_Allreduce(&ok, &everywhere, 1, MPI_INT, MPI_MIN, c->comm) != MPI_SUCCESS || !everywhere) {
        free(all);
        return nd_failc(err, ND_ESYS, "device over %d processes: could not compare the settings of the processes", n);
    }
    for (int r = 0; r < n; ++r)
        if (memcmp(&all[r], &mine, sizeof mine) != 0) {
            shared_cfg o = all[r];
            free(all);
            return nd_fail(err, "device over %d processes: process %d asks for grid %lldx%lld, L1 %lld, %lld banks of "
                                "%lld, bank map %lld, node size %lld, gets %lld, sync %lld, statistics root %lld, but "
                                "process %d for grid %dx%d, L1 %lld, %d banks of %lld, bank map %d, node size %d, gets "
                                "%d, sync %d, statistics root %d: every process must give the same device", n, r,
                           (long long)o.grid_x, (long long)o.grid_y, (long long)o.l1_bytes, (long long)o.dram_banks,
                           (long long)o.dram_bank_bytes, (long long)o.banks, (long long)o.node_size, (long long)o.gets,
                           (long long)o.sync, (long long)o.stats_root, c->procs.rank, cfg->grid_x, cfg->grid_y,
                           (long long)cfg->l1_bytes, cfg->dram_banks, (long long)cfg->dram_bank_bytes, (int)m->banks,
                           m->node_size, (int)m->gets, (int)m->sync, m->stats_root);
        }
    free(all);
    return 0;
}

/* Cores in row-major blocks, banks by the map; the statistics' gather counts. */
static int make_map(nd_mpi_ctx *c, const nd_device_config *cfg, nd_mpi_bank_map banks, nd_error *err)
{
    int n = c->procs.nranks;
    int64_t ncores = (int64_t)cfg->grid_x * cfg->grid_y;
    c->rank_of_core = malloc((size_t)ncores * sizeof *c->rank_of_core);
    c->rank_of_bank = malloc((size_t)cfg->dram_banks * sizeof *c->rank_of_bank);
    c->core_lo = malloc((size_t)(n + 1) * sizeof *c->core_lo);
    c->stat_counts = malloc((size_t)n * sizeof *c->stat_counts);
    c->stat_displs = malloc((size_t)n * sizeof *c->stat_displs);
    c->shares = calloc((size_t)n, sizeof *c->shares);
    c->seg_bytes = calloc((size_t)n, sizeof *c->seg_bytes);
    c->seg_base = calloc((size_t)n, sizeof *c->seg_base);
    c->core_disp = malloc((size_t)ncores * sizeof *c->core_disp);
    c->bank_disp = malloc((size_t)cfg->dram_banks * sizeof *c->bank_disp);
    if (!c->rank_of_core || !c->rank_of_bank || !c->core_lo || !c->stat_counts || !c->stat_displs || !c->shares ||
        !c->seg_bytes || !c->seg_base || !c->core_disp || !c->bank_disp)
        return nd_failc(err, ND_ENOMEM, "device over %d processes: out of memory for the core map", n);
    if (ncores * (int64_t)sizeof(nda_stats) > (int64_t)2147483647)
        return nd_failc(err, ND_ERANGE, "device over %d processes: %lld cores' statistics exceed one MPI message", n,
                        (long long)ncores);
    for (int r = 0; r <= n; ++r)
        c->core_lo[r] = ncores * r / n;
    for (int r = 0; r < n; ++r) {
        for (int64_t i = c->core_lo[r]; i < c->core_lo[r + 1]; ++i)
            c->rank_of_core[i] = r;
        c->stat_counts[r] = (int)((c->core_lo[r + 1] - c->core_lo[r]) * (int64_t)sizeof(nda_stats));
        c->stat_displs[r] = (int)(c->core_lo[r] * (int64_t)sizeof(nda_stats));
    }
    for (int r = 0; r < n; ++r) /* ND_MPI_BANKS_BLOCK: bank b in block r, r*B/n <= b < (r+1)*B/n, as cores */
        for (int64_t b = (int64_t)cfg->dram_banks * r / n; b < (int64_t)cfg->dram_banks * (r + 1) / n; ++b)
            c->rank_of_bank[b] = banks == ND_MPI_BANKS_BY_CORE ? c->rank_of_core[b % ncores] : r;
    c->procs.rank_of_core = c->rank_of_core;
    c->procs.rank_of_bank = c->rank_of_bank;
    c->procs.core_lo = c->core_lo[c->procs.rank];
    c->procs.core_hi = c->core_lo[c->procs.rank + 1];
    for (int r = 0; r < n; ++r)
        c->seg_bytes[r] = nd_mpi_lay_segment(c, cfg, r, c->core_disp, c->bank_disp);
    return 0;
}

/* The nodes: the real shared-memory split, cut into blocks of node_size ranks when emulating. Nodes
 * are numbered in the order of their lowest rank (each node communicator's rank 0, its lowest, as
 * the split keys by rank). */
static int make_nodes(nd_mpi_ctx *c, int node_size, nd_error *err)
{
    MPI_Comm real;
    int n = c->procs.nranks, me = c->procs.rank, leader = me;
    if (MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &real) != MPI_SUCCESS)
        return nd_failc(err, ND_ESYS, "device over MPI: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
    int rc = node_size > 0 ? MPI_Comm_split(real, me / node_size, me, &c->shm) : MPI_Comm_dup(real, &c->shm);
    MPI_Comm_free(&real);
    if (rc != MPI_SUCCESS)
        return nd_failc(err, ND_ESYS, "device over MPI: splitting the nodes into emulated nodes failed");
    MPI_Bcast(&leader, 1, MPI_INT, 0, c->shm);
    int32_t *leaders = malloc((size_t)n * sizeof *leaders);
    c->node_of_rank = malloc((size_t)n * sizeof *c->node_of_rank);
    if (!leaders || !c->node_of_rank) {
        free(leaders);
        return nd_failc(err, ND_ENOMEM, "device over MPI: out of memory for the node map");
    }
    int32_t l32 = leader;
    if (MPI_Allgather(&l32, 1, MPI_INT32_T, leaders, 1, MPI_INT32_T, c->comm) != MPI_SUCCESS) {
        free(leaders);
        return nd_failc(err, ND_ESYS, "device over MPI: MPI_Allgather of the node leaders failed");
    }
    c->nnodes = 0;
    for (int r = 0; r < n; ++r) /* a leader is its node's lowest rank: nodes appear in order of leaders */
        c->node_of_rank[r] = leaders[r] == r ? c->nnodes++ : c->node_of_rank[leaders[r]];
    free(leaders);
    return 0;
}

/* Whether core b (< ncores) and bank b, which it writes in every DRAM tensor whose bank list is in
 * order, are on one node for every b: else the bank map is refused. */
static int check_bank_nodes(const nd_mpi_ctx *c, const nd_device_config *cfg, nd_error *err)
{
    int64_t ncores = (int64_t)cfg->grid_x * cfg->grid_y;
    for (int64_t b = 0; b < cfg->dram_banks && b < ncores; ++b) {
        int w = c->rank_of_core[b], h = c->rank_of_bank[b];
        if (c->node_of_rank[w] != c->node_of_rank[h])
            return nd_fail(err, "device over %d processes on %d nodes: bank %lld is held by process %d on node %d, "
                                "but core %lld, which writes it, runs on process %d on node %d; a core never "
                                "writes another node's memory: use ND_MPI_BANKS_BY_CORE", c->procs.nranks,
                           c->nnodes, (long long)b, h, c->node_of_rank[h], (long long)b, w, c->node_of_rank[w]);
    }
    return 0;
}

static bool agree(const nd_mpi_ctx *c, bool ok);

/* This process's segment: its cores' L1, then its banks. The segments of the node's processes, found
 * with MPI_Win_shared_query, give their cores' and banks' addresses; other nodes' cores and banks have
 * none (NULL: nothing of theirs is mapped here, stage_mpi.c fetches what a call reads), and over several
 * nodes the RMA window exposes this segment to them. */
static int make_window(nd_mpi_ctx *c, const nd_device_config *cfg, uint8_t **l1, uint8_t **banks, nd_error *err)
{
    int n = c->procs.nranks, me = c->procs.rank;
    int64_t bytes = c->seg_bytes[me];
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true"); /* each segment near its process */
    uint8_t *mine = NULL;
    int rc = MPI_Win_allocate_shared((MPI_Aint)bytes, 1, info, c->shm, &mine, &c->win);
    MPI_Info_free(&info);
    int ok = rc == MPI_SUCCESS, everywhere = 0;
    MPI_Allreduce(&ok, &everywhere, 1, MPI_INT, MPI_MIN, c->comm);
    if (!everywhere) {
        if (ok)
            MPI_Win_free(&c->win);
        c->win = MPI_WIN_NULL;
        return nd_failc(err, ND_ENOMEM, "device over %d processes: a process could not allocate its segment of the "
                                        "shared window (this one: %lld bytes of L1 and DRAM); shrink l1_bytes or "
                                        "dram_bank_bytes, or give the shared-memory file system room", n,
                        (long long)bytes);
    }
    MPI_Win_set_errhandler(c->win, MPI_ERRORS_RETURN);
    /* Local steps that may fail on one process alone: their outcome is agreed before MPI_Win_create,
     * which is collective (a process that skipped it would leave the others waiting in it forever). */
    int failed = 0;
    if ((rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, c->win)) != MPI_SUCCESS) /* the epoch MPI_Win_sync needs */
        failed = nd_failc(err, ND_ESYS, "device over %d processes: MPI_Win_lock_all failed", n);
    MPI_Group world, node;
    MPI_Comm_group(c->comm, &world);
    MPI_Comm_group(c->shm, &node);
    for (int r = 0; r < n && !failed; ++r) {
        MPI_Aint size;
        int unit, at;
        uint8_t *seg;
        if (c->node_of_rank[r] != c->node_of_rank[me])
            continue;
        MPI_Group_translate_ranks(world, 1, &r, node, &at); /* r's rank in the node's communicator */
        if (at == MPI_UNDEFINED || MPI_Win_shared_query(c->win, at, &size, &unit, &seg) != MPI_SUCCESS) {
            failed = nd_failc(err, ND_ESYS, "device over %d processes: MPI_Win_shared_query of process %d failed", n,
                              r);
            break;
        }
        c->seg_base[r] = seg;
        c->node_window_bytes += c->seg_bytes[r];
        for (int64_t i = c->core_lo[r]; i < c->core_lo[r + 1]; ++i)
            l1[i] = seg + c->core_disp[i];
        for (int b = 0; b < cfg->dram_banks; ++b)
            if (c->rank_of_bank[b] == r)
                banks[b] = seg + c->bank_disp[b];
    }
    MPI_Group_free(&world);
    MPI_Group_free(&node);
    if (!agree(c, failed == 0))
        return failed ? -1 : nd_failc(err, ND_ESYS, "device over %d processes: another process could not set up its "
                                                    "shared window (its own error says which)", n);
    return c->nnodes > 1 ? nd_mpi_make_rma(c, mine, err) : 0;
}

/* The fence communicator and the board, on every process or on none (collective). */
static int make_board(nd_mpi_ctx *c)
{
    int ok = MPI_Comm_dup(c->comm, &c->fence_comm) == MPI_SUCCESS;
    if (!ok)
        c->fence_comm = MPI_COMM_NULL;
    else
        MPI_Comm_set_errhandler(c->fence_comm, MPI_ERRORS_RETURN);
    ok = agree(c, ok); /* MPI_Win_allocate is collective: every process calls it, or none */
    if (ok && MPI_Win_allocate(ND_MPI_BOARD_WORDS * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, c->comm,
                               &c->board_mine, &c->board) != MPI_SUCCESS) {
        c->board = MPI_WIN_NULL; /* a failed collective call fails on every process */
        ok = 0;
    }
    int locked = 0;
    if (ok) {
        MPI_Win_set_errhandler(c->board, MPI_ERRORS_RETURN);
        c->board_mine[ND_MPI_BOARD_FENCES] = 0;
        c->board_mine[ND_MPI_BOARD_CALL] = -1;
        c->board_mine[ND_MPI_BOARD_KEY] = 0;
        ok = locked = MPI_Win_lock_all(MPI_MODE_NOCHECK, c->board) == MPI_SUCCESS; /* one passive epoch, for
                                                                                     reads at a timeout */
    }
    if (!agree(c, ok)) {
        if (locked)
            MPI_Win_unlock_all(c->board);
        if (c->board != MPI_WIN_NULL)
            MPI_Win_free(&c->board);
        c->board = MPI_WIN_NULL;
        return -1;
    }
    return 0;
}

/* Whether ok holds on every process (collective). */
static bool agree(const nd_mpi_ctx *c, bool ok)
{
    int mine = ok, everywhere = 0;
    return MPI_Allreduce(&mine, &everywhere, 1, MPI_INT, MPI_MIN, c->comm) == MPI_SUCCESS && everywhere;
}

/* The settings this process gives, checked before anything collective happens. */
static int check_local(const nd_device_config *cfg, const nd_mpi_config *m, int nranks, nd_error *err)
{
    if (nd_device_check_config(cfg, err))
        return -1;
    if (m->banks != ND_MPI_BANKS_BY_CORE && m->banks != ND_MPI_BANKS_BLOCK)
        return nd_fail(err, "device over MPI: bank map %d: expected ND_MPI_BANKS_BY_CORE or ND_MPI_BANKS_BLOCK",
                       (int)m->banks);
    if (!(m->fence_timeout > 0 && m->fence_timeout <= MAX_FENCE_TIMEOUT))
        return nd_fail(err, "device over MPI: fence_timeout %g: must be a positive number of seconds, at most %d%s%s%s",
                       m->fence_timeout, MAX_FENCE_TIMEOUT, getenv("NDGEN_MPI_FENCE_TIMEOUT") ? " (NDGEN_MPI_FENCE_TIMEOUT '" : "",
                       getenv("NDGEN_MPI_FENCE_TIMEOUT") ? getenv("NDGEN_MPI_FENCE_TIMEOUT") : "",
                       getenv("NDGEN_MPI_FENCE_TIMEOUT") ? "')" : "");
    if (m->node_size < 0)
        return nd_fail(err, "device over MPI: node_size %d (NDGEN_MPI_NODE_SIZE '%s'): expected 0 (the real nodes) "
                            "or a number of processes per emulated node", m->node_size,
                       getenv("NDGEN_MPI_NODE_SIZE") ? getenv("NDGEN_MPI_NODE_SIZE") : "");
    if (m->gets != ND_MPI_GETS_BATCHED && m->gets != ND_MPI_GETS_PER_PAGE)
        return nd_fail(err, "device over MPI: gets %d (NDGEN_MPI_GETS '%s'): expected ND_MPI_GETS_BATCHED "
                            "(\"batched\") or ND_MPI_GETS_PER_PAGE (\"page\")", (int)m->gets,
                       getenv("NDGEN_MPI_GETS") ? getenv("NDGEN_MPI_GETS") : "");
    if (m->sync != ND_MPI_SYNC_PAIRS && m->sync != ND_MPI_SYNC_FENCE)
        return nd_fail(err, "device over MPI: sync %d (NDGEN_MPI_SYNC '%s'): expected ND_MPI_SYNC_PAIRS (\"pairs\") "
                            "or ND_MPI_SYNC_FENCE (\"fence\")", (int)m->sync,
                       getenv("NDGEN_MPI_SYNC") ? getenv("NDGEN_MPI_SYNC") : "");
    if (m->stats_root < -1 || m->stats_root >= nranks)
        return nd_fail(err, "device over MPI: stats_root %d (NDGEN_MPI_STATS_ROOT '%s'): expected -1 (every process) "
                            "or a process of the %d", m->stats_root,
                       getenv("NDGEN_MPI_STATS_ROOT") ? getenv("NDGEN_MPI_STATS_ROOT") : "", nranks);
    return 0;
}

int nd_device_open_mpi(const nd_device_config *cfg, const nd_mpi_config *mcfg, MPI_Comm comm, nd_device **out,
                       nd_error *err)
{
    nd_mpi_config m;
    int inited = 0, size;
    if (mcfg)
        m = *mcfg;
    else
        nd_mpi_config_init(&m);
    if (MPI_Initialized(&inited) != MPI_SUCCESS || !inited)
        return nd_fail(err, "device over MPI: MPI is not initialized (call MPI_Init first)");
    if (comm == MPI_COMM_NULL)
        return nd_fail(err, "device over MPI: the communicator is MPI_COMM_NULL");
    nd_mpi_ctx *c = calloc(1, sizeof *c);
    if (!c) /* then MPI_Comm_dup is not reached here and the other processes wait in it: end the job */
        MPI_Abort(comm, 1);
    c->win = c->rma = c->board = MPI_WIN_NULL;
    c->fence_comm = MPI_COMM_NULL;
    c->gets = m.gets;
    c->shm = c->comm = MPI_COMM_NULL;
    c->fence_timeout = m.fence_timeout;
    c->stats_root = m.stats_root;
    c->sync = m.sync;
    c->procs = (nd_device_procs){.fence = fence,
                                 .skip = skip,
                                 .pair_open = nd_mpi_pair_open,
                                 .pair_close = nd_mpi_pair_close,
                                 .gather = gather,
                                 .close = close_procs,
                                 .ctx = c};
    uint8_t **l1 = NULL, **banks = NULL;
    if (MPI_Comm_dup(comm, &c->comm) != MPI_SUCCESS) {
        close_procs(&c->procs);
        return nd_failc(err, ND_ESYS, "device over MPI: MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN); /* failures come back here, named */
    MPI_Comm_rank(c->comm, &c->procs.rank);
    MPI_Comm_size(c->comm, &size);
    c->procs.nranks = size;
    bool mine_ok = check_local(cfg, &m, size, err) == 0; /* every process learns whether all settings are valid */
    if (!agree(c, mine_ok)) {
        close_procs(&c->procs);
        return mine_ok ? nd_fail(err, "device over MPI: another process gave invalid settings (its own error says "
                                      "which)")
                       : -1;
    }
    if (size == 1) { /* one process: the plain device, no window and no fences */
        close_procs(&c->procs);
        return nd_device_open(cfg, out, err);
    }
    if (check_same(c, cfg, &m, err)) { /* collective: every process sees the same outcome */
        close_procs(&c->procs);
        return -1;
    }
    mine_ok = make_nodes(c, m.node_size, err) == 0 && make_map(c, cfg, m.banks, err) == 0;
    if (mine_ok) {
        l1 = calloc((size_t)cfg->grid_x * (size_t)cfg->grid_y, sizeof *l1);
        banks = calloc((size_t)cfg->dram_banks, sizeof *banks);
        if (!l1 || !banks)
            mine_ok = nd_failc(err, ND_ENOMEM, "device over MPI: out of memory") == 0;
    }
    if (!agree(c, mine_ok)) {
        free(l1);
        free(banks);
        close_procs(&c->procs);
        return mine_ok ? nd_failc(err, ND_ESYS, "device over MPI: another process could not map its nodes and cores")
                       : -1;
    }
    if (check_bank_nodes(c, cfg, err)) { /* the same maps everywhere: every process refuses alike */
        free(l1);
        free(banks);
        close_procs(&c->procs);
        return -1;
    }
    c->procs.stage = nd_mpi_stage; /* on one node it only counts the node's bytes */
    if (c->nnodes > 1)
        c->procs.check_tensor = nd_mpi_check_tensor;
    mine_ok = make_window(c, cfg, l1, banks, err) == 0;
    if (!agree(c, mine_ok)) {
        if (mine_ok)
            nd_failc(err, ND_ESYS, "device over MPI: another process could not set up the shared window");
        free(l1);
        free(banks);
        close_procs(&c->procs);
        return -1;
    }
    if (make_board(c)) {
        free(l1);
        free(banks);
        close_procs(&c->procs);
        return nd_failc(err, ND_ESYS, "device over %d processes: the fence's communicator or board window could "
                                      "not be made", size);
    }
    /* Local: its only failures (out of memory, no thread) leave this process behind; it closes, and its
     * close fence meets the others' first fence, which names it. */
    int rc = nd_device_open_procs(cfg, l1, banks, &c->procs, out, err); /* closes procs on failure */
    free(l1);
    free(banks);
    return rc;
}

static const nd_mpi_ctx *ctx_of(const nd_device *dev) { return dev->procs ? dev->procs->ctx : NULL; }

int nd_mpi_rank(const nd_device *dev) { return dev->procs ? dev->procs->rank : 0; }
int nd_mpi_nprocs(const nd_device *dev) { return dev->procs ? dev->procs->nranks : 1; }

int nd_mpi_node_of_rank(const nd_device *dev, int r)
{
    const nd_mpi_ctx *c = ctx_of(dev);
    if (r < 0 || r >= nd_mpi_nprocs(dev))
        return -1;
    return c ? c->node_of_rank[r] : 0;
}

int nd_mpi_nnodes(const nd_device *dev)
{
    const nd_mpi_ctx *c = ctx_of(dev);
    return c ? c->nnodes : 1;
}

int nd_mpi_rank_of_core(const nd_device *dev, int64_t id)
{
    if (id < 0 || id >= dev->ncores)
        return -1;
    return dev->procs ? dev->procs->rank_of_core[id] : 0;
}

int nd_mpi_rank_of_bank(const nd_device *dev, int b)
{
    if (b < 0 || b >= dev->cfg.dram_banks)
        return -1;
    return dev->procs ? dev->procs->rank_of_bank[b] : 0;
}

int nd_mpi_launch_procs(const nd_device *dev, nd_mpi_proc_stats *per_proc, int nprocs, nd_error *err)
{
    const nd_mpi_ctx *c = ctx_of(dev);
    int n = nd_mpi_nprocs(dev);
    if (nprocs != n)
        return nd_fail(err, "launch statistics: room for %d processes, but the device has %d", nprocs, n);
    for (int r = 0; r < n; ++r) {
        nd_mpi_proc_stats *p = &per_proc[r];
        memset(p, 0, sizeof *p);
        p->core_lo = c ? c->core_lo[r] : 0;
        p->core_hi = c ? c->core_lo[r + 1] : dev->ncores;
        p->seconds = c ? c->shares[r].seconds : dev->run_seconds;
        p->node = c ? c->node_of_rank[r] : 0;
        p->staged_bytes = c ? c->shares[r].staged_bytes : 0;
        p->node_bytes = c ? c->shares[r].node_bytes : 0;
        p->gets = c ? c->shares[r].gets : 0;
        p->stage_seconds = c ? c->shares[r].stage_seconds : 0;
        p->order = c ? (nd_mpi_order)c->shares[r].order : ND_MPI_ORDER_NONE;
        p->pair_writers = c ? c->shares[r].pair_writers : 0;
        p->pair_readers = c ? c->shares[r].pair_readers : 0;
        p->reserved_bytes = c ? c->shares[r].reserved_bytes : dev->ncores * dev->cfg.l1_bytes +
                                                                  dev->cfg.dram_banks * dev->cfg.dram_bank_bytes;
        p->staging_bytes = c ? c->shares[r].staging_bytes : 0;
        for (int64_t i = p->core_lo; i < p->core_hi; ++i) {
            const nda_stats *s = &dev->stats[i];
            p->total.local_pages_read += s->local_pages_read;
            p->total.remote_pages_read += s->remote_pages_read;
            p->total.local_bytes_read += s->local_bytes_read;
            p->total.remote_bytes_read += s->remote_bytes_read;
            p->total.pages_written += s->pages_written;
            p->total.remote_pages_written += s->remote_pages_written;
        }
        /* a core's reads split by process only when it is its process's one core, and only from L1:
           kernels count a DRAM read as another core's whichever process holds the bank */
        p->other_process_bytes_read = n == 1                                                  ? 0
                                      : p->core_hi - p->core_lo <= 1 && !dev->last_launch_dram ? p->total.remote_bytes_read
                                                                                               : -1;
    }
    return 0;
}
