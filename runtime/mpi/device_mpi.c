/*
 * device_mpi.c - a device over the processes of an MPI job on one node: the core-to-process map, the
 * shared-memory window holding every process's L1 and banks, the fence that ends a launch, and the
 * gathering of statistics. Not the launch itself (device.c runs this process's cores) nor host I/O
 * (hostio.c; MPI-IO in io_mpi.c).
 *
 * Why a barrier between MPI_Win_sync calls ends a launch correctly: kernels write only pages their own
 * core owns (owner computes), each page has one writer, and no core reads a page another core writes
 * in the same launch. So the only ordering needed is between launches (and host calls): every store of
 * launch k must be visible to every load of launch k+1. MPI_Win_sync makes this process's stores to
 * the window visible (a memory barrier in the unified model), the barrier orders the processes, and the
 * second MPI_Win_sync keeps this process's later loads after it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi_internal.h"

void nd_mpi_config_init(nd_mpi_config *mcfg)
{
    mcfg->banks = ND_MPI_BANKS_BY_CORE;
    mcfg->fence_timeout = 120.0;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void nd_mpi_die(const nd_mpi_ctx *c, const char *call, int rc)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fprintf(stderr, "ndgen mpi: process %d of %d: %s failed: %s; ending the job\n", c->procs.rank,
            c->procs.nranks, call, text);
    fflush(stderr);
    MPI_Abort(c->comm, 1);
    abort(); /* MPI_Abort does not return */
}

/* MPI_Win_sync, a barrier that gives up after fence_timeout seconds, MPI_Win_sync. */
static void fence(nd_device *dev)
{
    nd_mpi_ctx *c = dev->procs->ctx;
    MPI_Request req;
    int rc, done = 0;
    if ((rc = MPI_Win_sync(c->win)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Win_sync", rc);
    if ((rc = MPI_Ibarrier(c->comm, &req)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Ibarrier", rc);
    double start = now_seconds();
    for (long spins = 0; !done; ++spins) {
        if ((rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
            nd_mpi_die(c, "MPI_Test of the fence's barrier", rc);
        if (done)
            break;
        if (spins > 1000) /* past a short spin, wait politely: processes may outnumber cores */
            nanosleep(&(struct timespec){0, 20000}, NULL);
        if ((spins & 255) == 0 && now_seconds() - start > c->fence_timeout) {
            fprintf(stderr, "ndgen mpi: process %d of %d: a fence waited %.0f s for the other processes (one has "
                            "died or hangs); ending the job\n", c->procs.rank, c->procs.nranks, c->fence_timeout);
            fflush(stderr);
            MPI_Abort(c->comm, 1);
            abort();
        }
    }
    if ((rc = MPI_Win_sync(c->win)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Win_sync", rc);
}

static void gather(nd_device *dev, double own_seconds)
{
    nd_mpi_ctx *c = dev->procs->ctx;
    int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, dev->stats, c->stat_counts, c->stat_displs,
                            MPI_BYTE, c->comm);
    if (rc != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Allgatherv of the launch statistics", rc);
    if ((rc = MPI_Allgather(&own_seconds, 1, MPI_DOUBLE, c->seconds, 1, MPI_DOUBLE, c->comm)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Allgather of the launch times", rc);
}

static void close_procs(nd_device_procs *p)
{
    nd_mpi_ctx *c = p->ctx;
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
    free(c->seconds);
    free(c);
}

/* The settings every process must share, for comparing them. */
typedef struct shared_cfg {
    int64_t grid_x, grid_y, l1_bytes, dram_banks, dram_bank_bytes, banks;
} shared_cfg;

static int check_same(nd_mpi_ctx *c, const nd_device_config *cfg, const nd_mpi_config *m, nd_error *err)
{
    shared_cfg mine = {cfg->grid_x, cfg->grid_y, cfg->l1_bytes, cfg->dram_banks, cfg->dram_bank_bytes, m->banks};
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
                                "%lld, bank map %lld, but process %d for grid %dx%d, L1 %lld, %d banks of %lld, bank "
                                "map %d: every process must give the same device", n, r, (long long)o.grid_x,
                           (long long)o.grid_y, (long long)o.l1_bytes, (long long)o.dram_banks,
                           (long long)o.dram_bank_bytes, (long long)o.banks, c->procs.rank, cfg->grid_x, cfg->grid_y,
                           (long long)cfg->l1_bytes, cfg->dram_banks, (long long)cfg->dram_bank_bytes, (int)m->banks);
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
    c->seconds = calloc((size_t)n, sizeof *c->seconds);
    if (!c->rank_of_core || !c->rank_of_bank || !c->core_lo || !c->stat_counts || !c->stat_displs || !c->seconds)
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
    return 0;
}

/* This process's segment: its cores' L1, then its banks. Every process's segment, found with
 * MPI_Win_shared_query, gives every core's and bank's address. */
static int make_window(nd_mpi_ctx *c, const nd_device_config *cfg, uint8_t **l1, uint8_t **banks, nd_error *err)
{
    int n = c->procs.nranks, me = c->procs.rank;
    int64_t ncores = (int64_t)cfg->grid_x * cfg->grid_y, own_banks = 0, bytes;
    for (int b = 0; b < cfg->dram_banks; ++b)
        own_banks += c->rank_of_bank[b] == me;
    bytes = (c->procs.core_hi - c->procs.core_lo) * cfg->l1_bytes + own_banks * cfg->dram_bank_bytes;
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
    if ((rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, c->win)) != MPI_SUCCESS) /* the epoch MPI_Win_sync needs */
        return nd_failc(err, ND_ESYS, "device over %d processes: MPI_Win_lock_all failed", n);
    int64_t next_bank = 0;
    for (int r = 0; r < n; ++r) {
        MPI_Aint size;
        int unit;
        uint8_t *seg;
        if (MPI_Win_shared_query(c->win, r, &size, &unit, &seg) != MPI_SUCCESS)
            return nd_failc(err, ND_ESYS, "device over %d processes: MPI_Win_shared_query of process %d failed", n, r);
        for (int64_t i = c->core_lo[r]; i < c->core_lo[r + 1]; ++i)
            l1[i] = seg + (i - c->core_lo[r]) * cfg->l1_bytes;
        uint8_t *bank = seg + (c->core_lo[r + 1] - c->core_lo[r]) * cfg->l1_bytes;
        for (int b = 0; b < cfg->dram_banks; ++b)
            if (c->rank_of_bank[b] == r) {
                banks[b] = bank;
                bank += cfg->dram_bank_bytes;
                ++next_bank;
            }
    }
    (void)ncores;
    return next_bank == cfg->dram_banks ? 0 : nd_failc(err, ND_ESYS, "device: bank map lost a bank");
}

/* Whether ok holds on every process (collective). */
static bool agree(const nd_mpi_ctx *c, bool ok)
{
    int mine = ok, everywhere = 0;
    return MPI_Allreduce(&mine, &everywhere, 1, MPI_INT, MPI_MIN, c->comm) == MPI_SUCCESS && everywhere;
}

/* The settings this process gives, checked before anything collective happens. */
static int check_local(const nd_device_config *cfg, const nd_mpi_config *m, nd_error *err)
{
    if (nd_device_check_config(cfg, err))
        return -1;
    if (m->banks != ND_MPI_BANKS_BY_CORE && m->banks != ND_MPI_BANKS_BLOCK)
        return nd_fail(err, "device over MPI: bank map %d: expected ND_MPI_BANKS_BY_CORE or ND_MPI_BANKS_BLOCK",
                       (int)m->banks);
    if (!(m->fence_timeout > 0))
        return nd_fail(err, "device over MPI: fence_timeout %g: must be a positive number of seconds",
                       m->fence_timeout);
    return 0;
}

int nd_device_open_mpi(const nd_device_config *cfg, const nd_mpi_config *mcfg, MPI_Comm comm, nd_device **out,
                       nd_error *err)
{
    nd_mpi_config m;
    int inited = 0, size, shm_size;
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
    c->win = MPI_WIN_NULL;
    c->shm = c->comm = MPI_COMM_NULL;
    c->fence_timeout = m.fence_timeout;
    c->procs = (nd_device_procs){.fence = fence, .gather = gather, .close = close_procs, .ctx = c};
    uint8_t **l1 = NULL, **banks = NULL;
    if (MPI_Comm_dup(comm, &c->comm) != MPI_SUCCESS) {
        close_procs(&c->procs);
        return nd_failc(err, ND_ESYS, "device over MPI: MPI_Comm_dup failed");
    }
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN); /* failures come back here, named */
    MPI_Comm_rank(c->comm, &c->procs.rank);
    MPI_Comm_size(c->comm, &size);
    c->procs.nranks = size;
    bool mine_ok = check_local(cfg, &m, err) == 0; /* every process learns whether all settings are valid */
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
    if (MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, c->procs.rank, MPI_INFO_NULL, &c->shm) != MPI_SUCCESS) {
        close_procs(&c->procs);
        return nd_failc(err, ND_ESYS, "device over MPI: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
    }
    MPI_Comm_size(c->shm, &shm_size);
    int all_one_node = shm_size == size, everywhere = 0;
    MPI_Allreduce(&all_one_node, &everywhere, 1, MPI_INT, MPI_MIN, c->comm);
    if (!everywhere) {
        close_procs(&c->procs);
        return nd_fail(err, "device over MPI: the communicator's %d processes span several nodes (%d of them share "
                            "this one); a device spans one node for now: reading pages of another node with MPI RMA "
                            "gets is not implemented yet", size, shm_size);
    }
    if (check_same(c, cfg, &m, err)) { /* collective: every process sees the same outcome */
        close_procs(&c->procs);
        return -1;
    }
    mine_ok = make_map(c, cfg, m.banks, err) == 0;
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
        return mine_ok ? nd_failc(err, ND_ENOMEM, "device over MPI: another process ran out of memory") : -1;
    }
    mine_ok = make_window(c, cfg, l1, banks, err) == 0;
    if (!agree(c, mine_ok)) {
        if (mine_ok)
            nd_failc(err, ND_ESYS, "device over MPI: another process could not set up the shared window");
        free(l1);
        free(banks);
        close_procs(&c->procs);
        return -1;
    }
    /* Local: its only failures (out of memory, no thread) leave this process behind, and the others'
     * first fence then ends the job after fence_timeout, with a message. */
    int rc = nd_device_open_procs(cfg, l1, banks, &c->procs, out, err); /* closes procs on failure */
    free(l1);
    free(banks);
    return rc;
}

static const nd_mpi_ctx *ctx_of(const nd_device *dev) { return dev->procs ? dev->procs->ctx : NULL; }

int nd_mpi_rank(const nd_device *dev) { return dev->procs ? dev->procs->rank : 0; }
int nd_mpi_nprocs(const nd_device *dev) { return dev->procs ? dev->procs->nranks : 1; }

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
        p->seconds = c ? c->seconds[r] : dev->run_seconds;
        for (int64_t i = p->core_lo; i < p->core_hi; ++i) {
            const nda_stats *s = &dev->stats[i];
            p->total.local_pages_read += s->local_pages_read;
            p->total.remote_pages_read += s->remote_pages_read;
            p->total.local_bytes_read += s->local_bytes_read;
            p->total.remote_bytes_read += s->remote_bytes_read;
            p->total.pages_written += s->pages_written;
            p->total.remote_pages_written += s->remote_pages_written;
        }
        p->other_process_bytes_read = p->core_hi - p->core_lo <= 1 && n > 1 ? p->total.remote_bytes_read
                                      : n == 1                              ? 0
                                                                            : -1;
    }
    return 0;
}
