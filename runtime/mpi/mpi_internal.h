/* mpi_internal.h - what the sources of nd_runtime_mpi share; not installed. */
#ifndef ND_MPI_INTERNAL_H
#define ND_MPI_INTERNAL_H

#include "nd_runtime_mpi.h"
#include "runtime_internal.h"

/* One process's share of a launch, gathered to every process. */
typedef struct nd_mpi_share {
    double seconds;       /* its own cores' run */
    double stage_seconds; /* its gets, first to flush */
    int64_t staged_bytes, gets, node_bytes;
    int64_t reserved_bytes, staging_bytes; /* address space for device memory: its node's window and its
                                              staging area, and of that the staging area */
    int order, pair_writers, pair_readers; /* nd_mpi_order, and the pairs (nd_mpi_proc_stats) */
} nd_mpi_share;

/* Which processes a launch talks to (pairs_mpi.c), kept per launch key. */
typedef struct nd_mpi_talk {
    uint64_t key;       /* the launch's key (device.c: op, tensors' idents, scalars); 0: an empty slot */
    int nfrom, nto;
    int32_t *from, *to; /* ranks: the writers of pages this process's cores read; the processes whose
                           cores read pages this process writes */
    bool fence;         /* some process talks to more processes than a fence's rounds: fence instead */
} nd_mpi_talk;

enum { ND_MPI_TALK_CACHE = 16 };

/* Other nodes' pages a launch or a host read reads, fetched (stage_mpi.c). One area, reserved once and
 * grown when a stage needs more, so a process holds its own node's memory and at most the largest
 * read set it staged, not the job's: each remote core-list entry with pages to fetch gets a span
 * there, from its first fetched byte to its last, rounded out to whole OS pages so that data keeps
 * its alignment modulo an OS page; the entry's base pointer for that call is the span's start less the
 * first byte's displacement in the entry. */
typedef struct nd_mpi_staging {
    uint8_t *area;       /* mmap, MAP_NORESERVE, read-only but while gets fill it; NULL until needed */
    size_t cap;          /* bytes reserved */
    uint8_t **bases;     /* [slots]: the entries' base pointers for the call */
    int64_t slots;       /* room in bases */
    struct nd_mpi_reads_cache *reads; /* the last launches' read sets (stage_mpi.c); NULL until a launch */
} nd_mpi_staging;

/* A device's MPI state, behind nd_device_procs.ctx. */
typedef struct nd_mpi_ctx {
    nd_device_procs procs;       /* procs.ctx points back here */
    MPI_Comm comm;               /* the user's communicator, duplicated, errors returned */
    MPI_Comm shm;                /* this process's node (real or emulated), a shared-memory communicator */
    MPI_Win win;                 /* the node's L1 and banks, shared memory */
    MPI_Win rma;                 /* over several nodes: every process's segment, for gets; else MPI_WIN_NULL */
    MPI_Comm fence_comm;         /* fences alone: a process making another call meets the others' fence,
                                    which names it, never another collective it would wait in */
    MPI_Win board;               /* each process's int64_t[ND_MPI_BOARD_WORDS]: the fence it is at, read by a
                                    process whose fence timed out; MPI_WIN_NULL until the device is open */
    int64_t *board_mine;         /* this process's words of the board */
    int64_t fences;              /* fences this process has begun */
    uint64_t skipped;            /* a hash of the fences skipped since the last one (launches that read no
                                    other core's page): the next fence compares them too; 0: none */
    double fence_timeout;
    nd_mpi_gets gets;
    nd_mpi_sync sync;
    nd_mpi_talk talk[ND_MPI_TALK_CACHE]; /* the last launches' pairs, replaced in turn */
    int talk_next;                       /* the slot the next new key takes */
    const nd_mpi_talk *talk_now;         /* the launch under way's, between pair_open and pair_close */
    int nnodes;
    int32_t *node_of_rank;       /* [nranks] */
    int32_t *rank_of_core, *rank_of_bank;
    int64_t *core_lo;            /* [nranks + 1]: process r runs cores [core_lo[r], core_lo[r + 1]) */
    int64_t *seg_bytes;          /* [nranks]: process r's segment, its cores' L1 then its banks in order */
    int64_t *core_disp, *bank_disp; /* [ncores], [dram_banks]: where a core's L1 or a bank starts in its
                                       process's segment */
    uint8_t **seg_base;          /* [nranks]: where this process maps process r's segment: its node's in
                                    the shared window; NULL for other nodes' (never mapped) */
    int64_t node_window_bytes;   /* the segments of this process's node, all mapped here */
    nd_mpi_staging staging;      /* over several nodes: the other nodes' pages of the launch under way */
    int *stat_counts, *stat_displs; /* bytes of nda_stats per process, for the gather */
    int stats_root;              /* where statistics are gathered: -1 every process, else that rank */
    nd_mpi_share mine;           /* this process's share of the launch under way */
    nd_mpi_share *shares;        /* [nranks]: every process's share of the last launch */
} nd_mpi_ctx;

/* The board's words per process: its fence count, the call (2 * nd_call + end) and the call's key. */
enum { ND_MPI_BOARD_FENCES, ND_MPI_BOARD_CALL, ND_MPI_BOARD_KEY, ND_MPI_BOARD_WORDS };

/* device_mpi.c: the word processes compare at a fence for a call (its kind, side and key). */
int64_t nd_mpi_call_word(nd_fence_call call);
/* device_mpi.c: a call made without a fence (a launch ordered in pairs or not at all), hashed in order
 * into what the next fence compares, so that processes whose calls differ in between are named there. */
void nd_mpi_note_call(nd_mpi_ctx *c, nd_fence_call call);
/* device_mpi.c: "the start of a launch", ..., from a board's call word. */
void nd_mpi_call_text(char *buf, size_t len, int64_t word);
/* device_mpi.c: after a wait for other processes timed out: names each one and where it is, from the
 * boards, then ends the job. */
_Noreturn void nd_mpi_report_absent(nd_mpi_ctx *c);
/* pairs_mpi.c: nd_device_procs.pair_open and pair_close; frees the talk cache. */
bool nd_mpi_pair_open(nd_device *dev, nd_fence_call call, nd_tensor *const *ts, int ntensors, int ninputs,
                      const nd_read_rule *rule);
void nd_mpi_pair_close(nd_device *dev, nd_fence_call call);
void nd_mpi_talk_free(nd_mpi_ctx *c);
/* ctx_mpi.c: one turn of a loop polling MPI for other processes, after `spins` turns and `waited`
 * seconds: nothing for the first thousand turns; then sched_yield, so that a process sharing this CPU
 * runs (processes may outnumber cores) while an answer still costs microseconds; past a millisecond, a
 * short sleep, so that a long wait costs no CPU. A sleep from the start made waits feed each other: a
 * process asleep (20 µs asked, 60 µs or more given) kept its partner waiting past its own spins, which
 * slept in turn, and a launch ordered in pairs took 350 µs instead of 11 (nd_mpi_sync_bench). */
void nd_mpi_pause(long spins, double waited);
/* ctx_mpi.c: seconds on a monotonic clock. */
double nd_mpi_now(void);

/* ctx_mpi.c: prints which call failed on which process and ends the job (MPI_Abort); never returns. */
_Noreturn void nd_mpi_die(const nd_mpi_ctx *c, const char *call, int rc);
/* ctx_mpi.c: sets core_disp[] and bank_disp[] of process r's cores and banks, where each starts in r's
 * segment; returns the segment's bytes. */
int64_t nd_mpi_lay_segment(const nd_mpi_ctx *c, const nd_device_config *cfg, int r, int64_t *core_disp,
                           int64_t *bank_disp);

/* stage_mpi.c: over several nodes, the RMA window over this process's segment `mine`, and staging. */
int nd_mpi_make_rma(nd_mpi_ctx *c, uint8_t *mine, nd_error *err);
void nd_mpi_stage(nd_device *dev, const nd_tensor *const *ts, int n, const nd_tensor *out, const nd_read_rule *rule,
                  int64_t copy, bool launch, uint8_t *const **bases);
void nd_mpi_staging_free(nd_mpi_staging *s);
int nd_mpi_check_tensor(const nd_device *dev, const nd_dist *d, nd_error *err);
/* stage_mpi.c: the process whose cores write core-list entry i of t in launches (in L1 the process
 * holding it, in DRAM the one running device core i, nda_tensor.owner_of), or -1: no core (a DRAM entry
 * past the cores, written by host calls alone). */
int nd_mpi_writer_of(const nd_mpi_ctx *c, const nd_tensor *t, int64_t i);
/* stage_mpi.c: how many copies of input in a core reads under the rule (one, or every part's), and the
 * q-th of them for device core id (nd_tensor_copy_seen; under PARTS the copy of part q at the position
 * of the one it sees). */
int64_t nd_mpi_copies_read(const nd_read_rule *rule, const nd_tensor *in);
int64_t nd_mpi_copy_read(const nd_read_rule *rule, const nd_tensor *in, int64_t id, int64_t q);
/* stage_mpi.c: the device core whose kernel writes core-list entry i of t (in L1 the core holding it, in
 * DRAM device core i), or -1: none. */
int64_t nd_mpi_writer_core(const nd_mpi_ctx *c, const nd_tensor *t, int64_t i);
/* stage_mpi.c: whether the rule says which pages of input k (of nin) out's elements read (an input
 * without pending parts, whose dims the rule maps; each core reads the copy it sees). */
bool nd_mpi_rule_applies(const nd_read_rule *rule, int k, int nin, const nd_tensor *in, const nd_tensor *out);
/* stage_mpi.c: whether page p of in lies at the entry and slot of page p of out, for every p. */
bool nd_mpi_same_placement(const nd_tensor *in, const nd_tensor *out);
/* stage_mpi.c: visit(ctx, in, loc) for each page of input k holding elements that the elements of out's
 * page opage read under the rule (which applies to it), in out's part `part` (its copy's, for a chunked
 * rule: nd_read_rule.chunked); loc.core indexes one copy's core list. */
void nd_mpi_page_reads(const nd_read_rule *rule, int k, int nin, const nd_tensor *out, int64_t opage, int64_t part,
                       const nd_tensor *in, void (*visit)(void *ctx, const nd_tensor *in, nd_loc loc), void *ctx);

#endif
