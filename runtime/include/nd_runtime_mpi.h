/*
 * nd_runtime_mpi.h - the core grid of nd_runtime.h over the processes of an MPI job, on one node or
 * several (library nd_runtime_mpi). Not about kernels: the same generated kernels, generic and
 * specialized, run unchanged, reading every page through the tensors' base pointers.
 *
 * Cores map to processes in blocks: with R processes and N = grid_x * grid_y cores, process r runs
 * device cores [r*N/R, (r+1)*N/R) in row-major id order and holds their L1. DRAM banks follow
 * nd_mpi_config.banks. Each process allocates its own cores' L1 and its own banks as its segment.
 *
 * Nodes. Processes are grouped into nodes by MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), or into
 * emulated smaller nodes (nd_mpi_config.node_size). Within a node the segments form one MPI
 * shared-memory window (MPI_Win_allocate_shared; the others found with MPI_Win_shared_query), so a
 * page another process of the node holds is read by an ordinary load. A process never loads from
 * another node's memory: over several nodes, every segment is also exposed in an RMA window over all
 * processes (MPI_Win_create on the same memory), and nothing of another node is mapped: a process
 * holds its node's memory and a staging area for the other nodes' pages that a call reads, as large as
 * the largest such set it has staged, never the job's memory. For the call, a remote buffer's base
 * pointer points into that area, at the pages fetched.
 *
 * Staging. After a launch's opening fence, each process fetches into its staging area every page held by
 * another node of every input tensor of the launch, every copy and part (so collectives and Partial
 * inputs, which read any copy through all_base, are served); for an op whose reference states what
 * each output element reads (docs/mpi.md: elementwise, einsum letters, reduction axes, softmax's row,
 * permute) over inputs without pending parts, only the input pages, in the copy each core reads, that
 * the output pages its cores write read: one MPI_Get per remote process with a
 * derived datatype (MPI_Type_create_hindexed) listing the sorted, merged byte runs (ND_MPI_GETS_BATCHED),
 * or one MPI_Get per page (ND_MPI_GETS_PER_PAGE, for comparison), then MPI_Win_flush_all, all inside
 * one passive-target epoch (MPI_Win_lock_all at open, MPI_Win_unlock_all at close). Outputs are not
 * fetched: a core writes only its own pages and no core reads, within a launch, a page another core
 * writes in it. nd_tensor_read and _read_part fetch the other nodes' pages of the copy they read.
 *
 * Every process must make the same calls in the same order with the same arguments (SPMD): opening
 * and closing the device, allocating and freeing tensors (each process keeps the whole arena
 * bookkeeping, so placement is identical everywhere), writes, reads, loads, saves and launches. A
 * launch fences, stages, runs only the process's own cores, then fences again (MPI_Win_sync on both
 * windows, a barrier, MPI_Win_sync), so every process sees every core's writes when it returns. That
 * ends a launch correctly: kernels write only their own core's pages (owner computes: a core never
 * writes memory on another node, and configurations in which one would are refused), so no remote
 * write is ever pending; a get completes (flush) before its process reaches the closing barrier, and
 * no process writes the next launch's pages before every process has passed that barrier. Host
 * writes, reads, loads and saves fence too. nd_tensor_write writes only the pages on this process's
 * cores and banks, from the host array every process passes. Statistics of a launch cover every core
 * of the job, gathered from the processes that ran them (nd_launch_stats is as in one process).
 *
 * Host arrays. nd_tensor_write takes the whole array on every process; nd_tensor_read (and _read_part)
 * on a device over several processes is the materializing call: it reads every page of the copy,
 * fetching other nodes' pages, and fills the whole array on every process that calls it (rank 0 alone
 * wanting the whole tensor still makes the collective call on every process). To move no more than
 * each process's own pages, use files (nd_tensor_load_mpi, _save_mpi) or each process's slice of the
 * array (nd_tensor_local_runs_mpi, nd_tensor_write_local_mpi, _read_local_mpi) below.
 *
 * A failed MPI call inside a launch or host call, or a fence that waits longer than
 * nd_mpi_config.fence_timeout for the other processes (one died or hangs), prints a message naming
 * the process and the call to stderr and ends the whole job with MPI_Abort: the grid's memory is
 * then in an unknown state, and a hang is never the answer.
 */
#ifndef ND_RUNTIME_MPI_H
#define ND_RUNTIME_MPI_H

#include <mpi.h>

#include "nd_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nd_mpi_bank_map {
    ND_MPI_BANKS_BY_CORE, /* bank b lives in the process running device core b mod N: a DRAM tensor over
                             banks 0, 1, ... in order is held by the process whose core writes each bank */
    ND_MPI_BANKS_BLOCK,   /* banks in even blocks over the processes, as cores: balances DRAM memory; a
                             core may then write a bank another process holds (a store into the shared
                             window, still one writer per page) */
} nd_mpi_bank_map;

/* How a process fetches other nodes' pages before a launch. */
typedef enum nd_mpi_gets {
    ND_MPI_GETS_BATCHED,  /* one MPI_Get per remote process, a derived datatype of its merged byte runs */
    ND_MPI_GETS_PER_PAGE, /* one MPI_Get per page (for comparison: the same bytes, many more calls) */
} nd_mpi_gets;

/* How a launch whose reads its op's read rule describes orders itself with the other processes. */
typedef enum nd_mpi_sync {
    ND_MPI_SYNC_PAIRS, /* with the processes it talks to alone: those whose pages its cores read (they have
                          finished every earlier call) and those that read its pages (they have finished
                          reading); a launch that reads no other process's page and whose pages no other
                          process reads waits for nobody. Other launches and host calls fence */
    ND_MPI_SYNC_FENCE, /* every launch fences over every process (for comparison) */
} nd_mpi_sync;

typedef struct nd_mpi_config {
    nd_mpi_bank_map banks;
    double fence_timeout; /* seconds a fence waits for the other processes before aborting the job: it
                             bounds how much later one process may reach a collective call than another,
                             so work that uneven (one process loading a file first) needs it raised;
                             more than 0, at most 86400 (a day: an endless wait is a hang) */
    int node_size;        /* 0: nodes are the real shared-memory nodes; k > 0: emulate nodes of k processes,
                             ranks [0, k), [k, 2k), ... (within the real nodes), to run the cross-node
                             path on one machine */
    nd_mpi_gets gets;
    nd_mpi_sync sync;
    int stats_root;       /* where a launch's statistics are gathered. -1: into every process
                             (MPI_Allgatherv), each then holding every core's, as one process does. r >= 0:
                             into process r alone (MPI_Gatherv), the one that asks for them: the others'
                             per_core hold their own cores' entries (the rest 0) and their totals their
                             own cores', and nd_mpi_launch_procs their own process's entry; a launch then
                             moves every core's statistics to one process instead of to each */
} nd_mpi_config;

/* ND_MPI_BANKS_BY_CORE, fence_timeout 120 seconds, the real nodes, batched gets, launches synchronized in
 * pairs, statistics in every process (stats_root -1). The environment variables NDGEN_MPI_NODE_SIZE (a
 * number), NDGEN_MPI_GETS ("batched" or "page"), NDGEN_MPI_SYNC ("pairs" or "fence"),
 * NDGEN_MPI_FENCE_TIMEOUT (seconds) and NDGEN_MPI_STATS_ROOT (a rank, or -1), when set, give node_size,
 * gets, sync, fence_timeout and stats_root instead (an unreadable value makes
 * nd_device_open_mpi refuse, naming it), so that programs passing NULL or these defaults run over
 * emulated nodes unchanged. */
void nd_mpi_config_init(nd_mpi_config *mcfg);

/*
 * Opens a device over the processes of comm (collective; mcfg NULL: the defaults). Every process must
 * give the same grid, L1, DRAM and bank map (threads may differ). ND_EINVAL: settings that differ
 * between processes, a bad mcfg, a bank map under which a core would write a bank held on another
 * node (ND_MPI_BANKS_BLOCK over several nodes, unless its blocks happen to fall on the writers' nodes;
 * nd_tensor_alloc likewise refuses a DRAM tensor whose bank list puts an entry on another node than
 * the core writing it); ND_ENOMEM: the shared window cannot be allocated; ND_ESYS: another MPI failure (the RMA window among them). With one
 * process the device behaves as nd_device_open's.
 */
int nd_device_open_mpi(const nd_device_config *cfg, const nd_mpi_config *mcfg, MPI_Comm comm, nd_device **out,
                       nd_error *err);

/* This process's rank and the number of processes (0 and 1 for a device of nd_device_open). */
int nd_mpi_rank(const nd_device *dev);
int nd_mpi_nprocs(const nd_device *dev);
/* The node of process r (nodes numbered 0, 1, ... in the order of their lowest rank; -1 outside the
 * job) and the number of nodes. */
int nd_mpi_node_of_rank(const nd_device *dev, int r);
int nd_mpi_nnodes(const nd_device *dev);
/* The process running device core id, and the one holding DRAM bank b; -1 outside the device. */
int nd_mpi_rank_of_core(const nd_device *dev, int64_t id);
int nd_mpi_rank_of_bank(const nd_device *dev, int b);

/* How a launch was ordered with the other processes (nd_mpi_config.sync). */
typedef enum nd_mpi_order {
    ND_MPI_ORDER_FENCE, /* a fence over every process at its start and end */
    ND_MPI_ORDER_PAIRS, /* with the processes it talks to alone (ND_MPI_SYNC_PAIRS) */
    ND_MPI_ORDER_NONE,  /* none: every core read only its own pages (an elementwise op on inputs placed as
                           its output) */
} nd_mpi_order;

/* One process's share of the last launch. */
typedef struct nd_mpi_proc_stats {
    int64_t core_lo, core_hi;         /* the device cores it ran */
    double seconds;                   /* its cores' run, fences excluded */
    nda_stats total;                  /* its cores' statistics summed: local = the reading core's own
                                         pages, remote = any other core's (all on this node) */
    int64_t other_process_bytes_read; /* read from pages another process holds, on its node or another:
                                         exact when every process runs at most one core (then every
                                         remote page is another process's) and the launch had no DRAM
                                         operand (kernels count a DRAM read as another core's); -1
                                         otherwise, as kernels count reads by core */
    int node;                         /* its node */
    /* The launch's read set (docs/mpi.md, "Across nodes": every page of its inputs, or for an elementwise op
     * those covering its cores' output pages) beyond this process's own pages, split by where it
     * lives; exact counts of that set (kernels may read less of it): */
    int64_t node_bytes;               /* held by other processes of its node: read in place */
    int64_t staged_bytes;             /* held on other nodes: fetched into its staging area before the
                                         launch */
    int64_t gets;                     /* the MPI_Get calls that fetched them */
    double stage_seconds;             /* the fetching, from the first get to the flush */
    nd_mpi_order order;               /* how the launch was ordered with the other processes */
    int pair_writers;                 /* ND_MPI_ORDER_PAIRS: the processes it waited for at the start (those
                                         writing pages its cores read) */
    int pair_readers;                 /* ... and at the end (those whose cores read pages it writes) */
    int64_t reserved_bytes;           /* address space it holds for device memory after the launch: its
                                         node's L1 and banks (one shared window) and its staging area for
                                         other nodes' pages, kept from launch to launch and as large as the
                                         largest read set staged so far needed (docs/mpi.md); one process:
                                         the whole device */
    int64_t staging_bytes;            /* of which the staging area (0 on one node) */
} nd_mpi_proc_stats;

/* per_proc[0..nd_mpi_nprocs) from the device's last launch that asked for statistics (nd_launch_stats
 * not NULL): every entry, in every process; with a stats_root, every entry in that process and in each
 * other only its own (the rest hold their cores' range and node, and zeros). */
int nd_mpi_launch_procs(const nd_device *dev, nd_mpi_proc_stats *per_proc, int nprocs, nd_error *err);

/*
 * The tensor to and from a file of its row-major elements (exactly the bytes nd_tensor_write takes),
 * through MPI-IO: each process reads or writes only the elements of the pages it holds, at their
 * offsets in the file, with one collective call per copy, so no process holds more of the tensor in
 * host memory than its own pages' elements (*host_bytes, may be NULL: the most bytes it staged).
 * Collective. load gives the tensor the file's value as nd_tensor_write does (Partial tensors: part 0,
 * the other parts neutral under the reduce op); save writes copy 0 and refuses a Partial tensor
 * (ND_EREFUSED). ND_EIO: the file cannot be opened, read or written, or a load's file is not exactly
 * the tensor's size; ND_ERANGE: more than 2 GiB of one copy on one process, or a page run that long.
 * Works on a one-process device too.
 */
int nd_tensor_load_mpi(nd_tensor *t, const char *path, int64_t *host_bytes, nd_error *err);
int nd_tensor_save_mpi(const nd_tensor *t, const char *path, int64_t *host_bytes, nd_error *err);

/* Elements [offset, offset + count) of a tensor's row-major array. */
typedef struct nd_elem_run {
    int64_t offset, count;
} nd_elem_run;

/*
 * This process's slice of t: the union of the elements of every page it holds (on its cores or banks),
 * in every copy and part, as runs of the row-major array, sorted, disjoint and maximal (runs never
 * touch), each element once however many of its copies the process holds. Count then fill, the caller
 * owning the array: with runs NULL (cap 0) it sets *nruns and *elems (the slice's length in elements,
 * the runs' counts summed); then with runs of cap >= *nruns entries it fills them too. Local: reads only
 * the distribution, neither memory nor other processes. ND_EINVAL: runs non-NULL with cap < *nruns
 * (*nruns and *elems are set, runs unchanged); ND_ENOMEM: no memory for the listing.
 */
int nd_tensor_local_runs_mpi(const nd_tensor *t, nd_elem_run *runs, int64_t cap, int64_t *nruns, int64_t *elems,
                             nd_error *err);

/*
 * The tensor from and to this process's slice of its row-major array: slice holds exactly the slice's
 * elements (nd_tensor_local_runs_mpi), run after run, bytes = their count times the element size.
 * Collective, fenced on both sides as nd_tensor_write and _read. write gives every page this process
 * holds, in every copy, the slice's values (edge padding zero), so when every process writes its slice
 * the tensor has the array's value; a Partial tensor is written as nd_tensor_write writes it (part 0
 * the value, the other parts neutral under the reduce op: every part's pages are held by some process,
 * which knows their values from its slice or the reduce op alone, so nothing is refused). read fills
 * the slice from this process's own pages only (no get, no other process's memory) and refuses a
 * Partial tensor (ND_EREFUSED), whose elements are not yet values. ND_EINVAL: bytes not the slice's
 * size, on any process (the others report that another process's slice has the wrong size);
 * ND_ENOMEM: no memory for the listing. Works on a one-process device (the slice is the whole array).
 */
int nd_tensor_write_local_mpi(nd_tensor *t, const void *slice, int64_t bytes, nd_error *err);
int nd_tensor_read_local_mpi(const nd_tensor *t, void *slice, int64_t bytes, nd_error *err);

#ifdef __cplusplus
}
#endif
#endif
