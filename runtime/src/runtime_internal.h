/* runtime_internal.h - pieces of the runtime shared between its sources; not installed. */
#ifndef ND_RUNTIME_INTERNAL_H
#define ND_RUNTIME_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nd_runtime.h"

/* ---- hashing: FNV-1a, 64 bits, from ND_HASH_SEED. Detects change and names things (cache entries,
 * the calls processes fence on); not a defence against a hostile input. */
#define ND_HASH_SEED 0xcbf29ce484222325ull
static inline uint64_t nd_hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; ++i)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* ---- arena: first-fit allocator over one core's L1 or one DRAM bank. Offsets are 64-byte aligned. */
typedef struct nd_block {
    int64_t off, len;
} nd_block;

/* Every buffer entry's alignment: an arena's blocks and the entries of a tensor's own mapping (place):
 * the widest vector a kernel stores whole (64 bytes, AVX-512) and a cache line. */
enum { ND_ENTRY_ALIGN = 64 };

/* v rounded up to a multiple of ND_ENTRY_ALIGN. */
static inline int64_t nd_entry_align_up(int64_t v) { return (v + ND_ENTRY_ALIGN - 1) / ND_ENTRY_ALIGN * ND_ENTRY_ALIGN; }

typedef struct nd_arena {
    int64_t size;
    int64_t n, cap; /* blocks[0..n) in use, sorted by offset */
    nd_block *blocks;
} nd_arena;

/* 0 and *off on success; -1 when no gap of len bytes is free or host memory ran out. */
int nd_arena_alloc(nd_arena *a, int64_t len, int64_t *off);
void nd_arena_free(nd_arena *a, int64_t off);
int64_t nd_arena_largest_gap(const nd_arena *a);
void nd_arena_release(nd_arena *a);

/* ---- pool: runs fn(ctx, i) for i in [0, n) on its threads; the caller's thread is one of them. */
typedef struct nd_pool nd_pool;
int nd_pool_create(int threads, nd_pool **out, nd_error *err);
void nd_pool_destroy(nd_pool *p);
int nd_pool_threads(const nd_pool *p);
void nd_pool_run(nd_pool *p, int64_t n, void (*fn)(void *ctx, int64_t i), void *ctx);

/* ---- registry.c: a loaded library's registry, checked before it is used: counts bounded, arrays and
 * strings inside the library, fields as ndgen writes them. */
enum { ND_MAX_OPERANDS_CHECKED = 32 }; /* operands of one entry */
int nd_registry_check(const nda_kernel_library *lib, const char *path, nd_error *err);

/* ---- opcheck.c: tensors against an op's index notation and dtypes; messages name op and operand. */
int nd_op_check(const nda_kernel_entry *e, nd_tensor *const *tensors, int n, nd_error *err);
/* The launch scalars against the op's declaration (count, types, ranges), and for a list of axes
 * ("axes(x)", "perm(x)") the output shape it implies. */
int nd_op_check_scalars(const nda_kernel_entry *e, nd_tensor *const *tensors, int n, const double *scalars,
                        int nscalars, nd_error *err);
/* The entry's declaration when it has a list of axes (the output's shape comes from it), else NULL. */
const char *nd_op_axis_rule(const nda_kernel_entry *e);
/* Whether kernel e serves a launch of these scalar values: its fixed values (scalar_values) match to
 * the bit; n < 0 (values unknown) is served only by a kernel fixing none. */
bool nd_kernel_serves_scalars(const nda_kernel_entry *e, const double *v, int n);
/* The declared scalars' names, "eps,axes", which kernels look values up by (nda_scalar). */
int nd_op_scalar_names(const nda_kernel_entry *e, char *buf, size_t len, nd_error *err);

/* ---- jit.c: on-demand specialized libraries in a cache folder of the user's own. */
typedef struct nd_jit_cc nd_jit_cc;
struct nd_jit {
    char *cache_dir;   /* NULL: a private temporary folder */
    double lock_wait;  /* seconds to wait for another process building an entry */
    char *ndgen, *spec_dir, *include_dir, *cc, *cflags, *ldflags;
    int ntemplate_dirs;
    char *template_dirs[ND_JIT_MAX_TEMPLATE_DIRS];
    char *private_dir; /* made at the first request when cache_dir is NULL; removed by nd_jit_free */
    char *notice;      /* one line saying private_dir is in use, or NULL */
    nd_jit_cc *cc_id;  /* the compiler's words, path and version, found at the first request */
};
typedef struct nd_jit nd_jit;
int nd_jit_create(const nd_jit_config *cfg, nd_jit **out, nd_error *err);
void nd_jit_free(nd_jit *j);
/* The path of a library holding op's kernel specialized for sigs (one per operand), from the cache or
 * built now; generic is the op's generic entry and spec the name of the spec it came from. note
 * receives what happened, for the caller to report. Returns 0; or 1 when the JIT gives no kernel and
 * the caller should run the generic one: the C compiler failed or cannot be run, or the cache folder
 * is refused (not the user's own) or unusable (read-only, full); err says why; or -1 on any other
 * failure (the generator failed on the spec, out of memory). */
int nd_jit_library(nd_jit *j, const nda_kernel_entry *generic, const char *spec, char (*sigs)[ND_SIGNATURE_LEN],
                   char *path, size_t len, nd_jit_outcome *outcome, char *note, size_t note_len, nd_error *err);
/* The one-line notice of a private temporary cache in use, or NULL. */
const char *nd_jit_notice(const nd_jit *j);

/* ---- device and tensor internals */

/*
 * A device over several processes (runtime/mpi/): every process keeps the same arena bookkeeping (so
 * tensors must be allocated and freed in the same order everywhere) and can address every core's and
 * bank's memory, but runs only its own cores and writes host data only into its own cores and banks.
 * NULL in a one-process device, where nothing below changes.
 */
/* The calls that fence a device over processes: every process must make the same ones in the same
 * order, each on the same tensors with the same arguments. (kind, name for messages.) */
#define ND_FENCE_CALLS(X)                                                                                  \
    X(ND_CALL_LAUNCH, "a launch")                                                                          \
    X(ND_CALL_WRITE, "nd_tensor_write")                                                                    \
    X(ND_CALL_WRITE_PART, "nd_tensor_write_part")                                                          \
    X(ND_CALL_READ_PART, "nd_tensor_read")                                                                 \
    X(ND_CALL_LOAD, "nd_tensor_load_mpi")                                                                  \
    X(ND_CALL_SAVE, "nd_tensor_save_mpi")                                                                  \
    X(ND_CALL_WRITE_LOCAL, "nd_tensor_write_local_mpi")                                                    \
    X(ND_CALL_READ_LOCAL, "nd_tensor_read_local_mpi")                                                      \
    X(ND_CALL_ALLOC_DRAM, "nd_tensor_alloc of a DRAM tensor")                                              \
    X(ND_CALL_CLOSE, "nd_device_close")
#define ND_FENCE_CALL_ENUM(kind, name) kind,
typedef enum nd_call { ND_FENCE_CALLS(ND_FENCE_CALL_ENUM) ND_NCALLS } nd_call;
#undef ND_FENCE_CALL_ENUM
const char *nd_call_name(nd_call c);

/* What a fence begins or ends: the call, and a hash of what it is on (its tensors' distributions and
 * places, its scalars, its op), equal on every process making the same call. */
typedef struct nd_fence_call {
    nd_call call;
    bool end;     /* the fence after the call's work; else the one before */
    uint64_t key;
} nd_fence_call;

/* What each output element of a launch reads of its inputs, as the op's registry entry declares it by
 * its reference (device.c, read_rule); over several nodes only the input pages so read are fetched.
 * tests/test_mpi_kernels checks the outputs, and the bytes fetched against a count of its own. */
typedef enum nd_read_kind {
    ND_READS_WHOLE,     /* not declared: every entry of every input */
    ND_READS_POINTWISE, /* reference from EXPR: each input at the output's coordinates, broadcast (numpy) */
    ND_READS_LETTERS,   /* ref_einsum: the output's letters fixed, every value of the others */
    ND_READS_AXES,      /* ref_reduce_*, axes(input): the listed input dims whole, the others at the
                           output's coordinates (dropped from the output, or kept there); ref_softmax:
                           the last dim */
    ND_READS_PERM,      /* ref_permute, perm(input): output dim i is input dim perm[i] */
    ND_READS_PARTS,     /* all_reduce.c: the output's coordinates in every part of its Partial input */
} nd_read_kind;

typedef struct nd_read_rule {
    nd_read_kind kind;
    const char *const *indices; /* LETTERS: each operand's letters, the output last */
    int naxes;
    int axes[ND_MAX_RANK];      /* AXES: the listed dims; PERM: perm */
    bool chunked;               /* LETTERS, AXES: into a Partial output, part q reads its chunk alone of the
                                   one letter the output lacks or of the first listed dim in dim order
                                   (nda_kernel_entry.parts_chunked, nda_part_range) */
} nd_read_rule;

typedef struct nd_device_procs {
    int rank, nranks;
    int64_t core_lo, core_hi;    /* this process runs device cores [core_lo, core_hi) */
    const int32_t *rank_of_core; /* [ncores] */
    const int32_t *rank_of_bank; /* [dram_banks] */
    /* Every process's stores so far are visible to every process, and no process goes on before all
     * have arrived (MPI_Win_sync, a barrier that compares the processes' calls, MPI_Win_sync). Ends the
     * job with a message naming the processes when one does not arrive in time or makes another call. */
    void (*fence)(nd_device *dev, nd_fence_call call);
    /* In place of a launch's fences when no core of it reads a page another core holds (device.c,
     * launch_local): every process decides alike, nothing waits, and the next fence compares the call. */
    void (*skip)(nd_device *dev, nd_fence_call call);
    /* In place of a launch's opening fence when its op's read rule says which input pages every output
     * page reads: waits for the processes that write pages this process's cores read, tells those that
     * read its pages, and returns true; false (nothing done, the launch fences) where it cannot say.
     * Every process decides alike, from the arguments. NULL: never. */
    bool (*pair_open)(nd_device *dev, nd_fence_call call, nd_tensor *const *ts, int ntensors, int ninputs,
                      const nd_read_rule *rule);
    /* Ends a launch pair_open began: tells the writers this process read from that it is done, and waits
     * for the processes that read its pages. */
    void (*pair_close)(nd_device *dev, nd_fence_call call);
    /* After a launch: every core's statistics from the process that ran it into dev->stats, and this
     * process's own seconds to every process. */
    void (*gather)(nd_device *dev, double own_seconds);
    /* Over several nodes: fetches into this process's staging area the pages, held on another node, of
     * copy `copy` (-1: every copy) of ts[0..n) that this process reads: every such page; or, given a
     * launch's output `out` and its read rule (NULL: whole), the input pages the elements of out that
     * this process's cores write read under the rule. Sets bases[k] to ts[k]'s base pointers for the
     * call (every copy's entries, as nd_tensor.base): its own node's entries as they are, another
     * node's into the staging area where pages of it were fetched, NULL where none were. They hold
     * until the next stage. `launch`: count it in the launch's statistics. Called after a fence. On
     * one node it only counts the pages other processes hold (all in the shared window), fetches
     * nothing, and gives every tensor its own base pointers. */
    void (*stage)(nd_device *dev, const nd_tensor *const *ts, int n, const nd_tensor *out, const nd_read_rule *rule,
                  int64_t copy, bool launch, uint8_t *const **bases);
    /* Whether a tensor of distribution d may live on this device: 0, or -1 with err set (a core
     * would write memory on another node). NULL: every tensor may. */
    int (*check_tensor)(const nd_device *dev, const nd_dist *d, nd_error *err);
    void (*close)(struct nd_device_procs *procs); /* frees the window, ctx and procs */
    void *ctx;
} nd_device_procs;

struct nd_device {
    nd_device_config cfg;
    int64_t ncores;
    uint8_t *l1;        /* ncores * cfg.l1_bytes, reserved; NULL when procs own the memory */
    uint8_t *dram;      /* dram_banks * dram_bank_bytes, reserved; NULL when procs own the memory */
    uint8_t **l1_base;  /* [ncores]: core i's L1 */
    uint8_t **bank_base;/* [dram_banks] */
    nd_device_procs *procs;
    nd_arena *l1_arena; /* [ncores] */
    nd_arena *dram_arena; /* [dram_banks] */
    nd_pool *pool;
    nda_stats *stats;   /* [ncores], per launch */
    double run_seconds; /* the last launch's run of this process's cores, fences excluded */
    bool last_launch_dram; /* the last launch had a DRAM operand (its reads count as other cores') */
    int64_t live_tensors;
    uint64_t tensors_made;  /* tensors allocated so far: the last one's serial */
};

int nd_device_check_config(const nd_device_config *c, nd_error *err);
/* A device over memory the caller provides (l1[ncores], banks[dram_banks], copied), run by procs
 * (taken over: closing the device calls procs->close). */
int nd_device_open_procs(const nd_device_config *cfg, uint8_t *const *l1, uint8_t *const *banks,
                         nd_device_procs *procs, nd_device **out, nd_error *err);
/* The process holding entry i of t's core list (copy i / ncores); 0 in a one-process device. */
int nd_tensor_rank_of(const nd_tensor *t, int64_t i);
/* The copy of t that device core id reads through its view's base (nda_tensor): the copy its own group
 * holds, or copy 0 when it holds none (always in DRAM, whose entries belong to no core's group). */
int64_t nd_tensor_copy_seen(const nd_tensor *t, int64_t id);
/* Calls fn(ctx, host_elem, page_elem, elems) for each row run of page page_id: the run's first element
 * in the row-major tensor and in the page box; *edge: the page has padding outside the tensor. */
void nd_page_runs(const nd_dist *d, int64_t page_id, bool *edge,
                  void (*fn)(void *ctx, int64_t host_elem, int64_t page_elem, int64_t elems), void *ctx);

/* Whether copy r of t receives a written value (a whole copy, or part 0's, or any part of avg, max and
 * min); and filling copy r, one that does not, with the reduce op's neutral value (this process's
 * entries only). */
bool nd_copy_gets_value(const nd_tensor *t, int64_t r);
void nd_copy_fill_neutral(nd_tensor *t, int64_t r);

struct nd_tensor {
    nd_device *dev;
    nd_dist dist;
    int64_t ncores;     /* of the tensor's core list */
    int64_t *offset;    /* [ncores] arena offset per core */
    uint8_t *host;      /* one process, L1: the mapping holding every entry, in core-list order (place) */
    int64_t host_bytes; /* its length; 0 when the entries lie in the device's arenas */
    uint8_t **base;     /* [ncores]; over several nodes NULL for an entry held on another node (a launch or
                           host read addresses it through its stage's base pointers) */
    int32_t *index_of;  /* [device cores]: index within the core's copy */
    int32_t *replica_of;/* [device cores]: the copy a core holds, or -1 */
    int32_t *owner_of;  /* [device cores]; index_of itself for L1 */
    nda_tensor view;
    uint64_t ident;     /* over processes: hash of the distribution and arena offsets, for fences */
    uint64_t serial;    /* its device's allocation number, never reused: what a cached read set names, since
                           a tensor's distribution and offsets never change while it lives */
};

#endif
