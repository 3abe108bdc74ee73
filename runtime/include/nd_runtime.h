/*
 * nd_runtime.h - the CPU core-grid backend: a device of virtual cores, each with its own L1 arena,
 * plus DRAM banks; distributed tensors placed by the distribution model; host scatter and gather;
 * and kernel launches over every virtual core on a thread pool.
 *
 * Errors follow nd_dist.h: 0 on success, -1 with a one-line message and a code (nd_errcode) in
 * nd_error, nothing changed. Branch on err.code, never on the message. Capacity (a full arena, a
 * tensor larger than a core's L1 or a bank, host memory) is ND_ENOMEM; a missing op, kernel or library
 * file ND_ENOENT; a library that cannot be loaded ND_ESYS, or ND_ESTALE for another kernel ABI version;
 * a refusal that keeps results right (reading a Partial tensor whole, a Partial operand an op cannot
 * take) ND_EREFUSED; any other bad request ND_EINVAL.
 */
#ifndef ND_RUNTIME_H
#define ND_RUNTIME_H

#include <stdint.h>

#include "nd_accessor.h"
#include "nd_dist.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nd_device nd_device;
typedef struct nd_tensor nd_tensor;

typedef struct nd_device_config {
    int grid_x, grid_y;      /* virtual cores: grid_x columns by grid_y rows */
    int64_t l1_bytes;        /* per core */
    int dram_banks;
    int64_t dram_bank_bytes; /* per bank */
    int threads;             /* 0: one per hardware thread */
    bool huge_pages;         /* a tensor's pieces ask the OS for transparent huge pages where they hold
                                whole 2 MiB pages (one process; MPI devices map shared memory) */
} nd_device_config;

/* The transparent huge page size that nd_device_config.huge_pages asks for (x86-64, 4 KiB-page Arm):
 * where the OS's is another, no piece holds a whole one and nothing is advised. */
#define ND_HUGE_PAGE_BYTES ((int64_t)2 << 20)

/* Defaults: 8x8 cores of 1536 KiB L1, 12 DRAM banks of 1 GiB, one thread per hardware thread, huge
 * pages. Arena memory is reserved, not committed: untouched L1 and DRAM cost no RAM, and memory outside
 * a tensor's whole huge pages is committed 4 KiB at a time. */
void nd_device_config_init(nd_device_config *cfg);

int nd_device_open(const nd_device_config *cfg, nd_device **out, nd_error *err);
/* Frees the device; its tensors must have been freed. */
void nd_device_close(nd_device *dev);
int nd_device_set_threads(nd_device *dev, int threads, nd_error *err);
int nd_device_threads(const nd_device *dev);
nd_device_config nd_device_get_config(const nd_device *dev);

/* Places d on dev: every core of d's core list gets d->bytes_per_core, zeroed. Fails, allocating
 * nothing, when d does not fit the device or a core lacks free space. */
int nd_tensor_alloc(nd_device *dev, const nd_dist *d, nd_tensor **out, nd_error *err);
void nd_tensor_free(nd_tensor *t);
const nd_dist *nd_tensor_dist(const nd_tensor *t);
const nda_tensor *nd_tensor_view(const nd_tensor *t);

/* Host scatter and gather of a contiguous row-major array of exactly the tensor's element bytes.
 * A tensor with copies (nd_dist_spec.replicas) is written to every copy and read from copy 0. A Partial
 * one (parts > 1) is written as part 0 with the other parts zeroed; reading it whole is an error until
 * a collective has resolved it, but each part can be read alone. */
int nd_tensor_write(nd_tensor *t, const void *host, int64_t bytes, nd_error *err);
int nd_tensor_read(const nd_tensor *t, void *host, int64_t bytes, nd_error *err);
int nd_tensor_read_part(const nd_tensor *t, int part, void *host, int64_t bytes, nd_error *err);
/* Writes one part of a Partial tensor (every copy holding it); the other parts are untouched. */
int nd_tensor_write_part(nd_tensor *t, int part, const void *host, int64_t bytes, nd_error *err);

typedef struct nd_launch_stats {
    double seconds;           /* wall time of the launch */
    int64_t ncores;           /* grid_x * grid_y */
    const nda_stats *per_core;/* by device core id; owned by the device, valid until the next launch */
    nda_stats total;
} nd_launch_stats;

/* Runs kernel once on every virtual core with args built from tensors[] and scalars[]. The kernel is
 * given no scalar names: one that reads a scalar by name (nda_scalar) stops the process; launch those
 * with nd_launch_entry or nd_run. stats may be NULL; over MPI processes (nd_runtime_mpi.h) the statistics
 * are gathered only when it is not, and every process must pass NULL alike. */
int nd_launch(nd_device *dev, nda_kernel_fn *kernel, nd_tensor *const *tensors, int ntensors,
              const double *scalars, int nscalars, nd_launch_stats *stats, nd_error *err);
/* nd_launch of a registry entry's kernel, given the names of its op's declared scalars. Beyond
 * nd_launch it checks only that a kernel with fixed scalar values is given exactly them (ND_EREFUSED:
 * its constants would replace the launch's); nd_run checks the launch against the op first. */
int nd_launch_entry(nd_device *dev, const nda_kernel_entry *e, nd_tensor *const *tensors, int ntensors,
                    const double *scalars, int nscalars, nd_launch_stats *stats, nd_error *err);

/* Runs fn(ctx, i) for every i in [0, n) on the device's threads, as a launch runs its cores: for
 * host-side work measured beside kernels, such as references and bandwidth probes. */
void nd_device_parallel(nd_device *dev, int64_t n, void (*fn)(void *ctx, int64_t i), void *ctx);

/* ---------------------------------------------------------------- kernel libraries */

/*
 * Kernels generated by ndgen are built into shared libraries. nd_kernels_load dlopens one, refuses it
 * unless its registry's ABI version is NDA_ABI_VERSION or it declares other launch scalars for an op
 * and dtypes already loaded (ND_ESTALE: its kernels would read the values at other positions), unless
 * its registry holds together (counts in range, every array and string inside the library, fields as
 * ndgen writes them: ND_EINVAL), and when an op of it is an op of another spec loaded before
 * (ND_EREFUSED: a launch would pick between two templates by its distributions); then registers its
 * kernels. A launch of an op then picks the specialized kernel whose target matches every
 * operand's distribution signature exactly, and otherwise the op's generic kernel.
 */
typedef struct nd_kernels nd_kernels;

typedef enum nd_variant {
    ND_VARIANT_AUTO,        /* specialized when a target matches, else generic */
    ND_VARIANT_GENERIC,
    ND_VARIANT_SPECIALIZED, /* an error when no target matches */
} nd_variant;

typedef enum nd_jit_outcome {
    ND_JIT_NONE,    /* the kernel was already loaded */
    ND_JIT_HIT,     /* specialized on demand: loaded from the cache */
    ND_JIT_BUILT,   /* specialized on demand: generated and compiled now */
    ND_JIT_REBUILT, /* as BUILT, replacing a stale or damaged cache entry */
    ND_JIT_FAILED,  /* the JIT gave no kernel (jit_note says why): the C compiler failed on the specialized
                       code or cannot be run, or the cache folder was refused (not the user's own) or is
                       unusable (read-only, full); AUTO runs the generic kernel, SPECIALIZED fails with that
                       message and its code (ND_ESYS the compiler, ND_EREFUSED a folder not the user's own,
                       ND_EIO an unusable folder); nothing is cached */
} nd_jit_outcome;

typedef struct nd_kernel_pick {
    nda_kernel_fn *fn;
    const char *symbol;
    bool specialized;
    const nda_kernel_entry *entry; /* its registry entry: operands, indices, dtypes */
    nd_jit_outcome jit;
    char jit_note[192];            /* for a JIT outcome: "built <key>", "rebuilt <key>: <why>", ... */
    const char *fixed;             /* what the kernel fixed: a set of NDA_FIXED_SETS ("all": exact, "pattern":
                                      all but the shape, "shard": all but the shape and the grid) or "none"
                                      (generic). AUTO and SPECIALIZED take the exact kernel (of two, the one
                                      fixing more launch scalars; one fixing other values than the launch's is
                                      never taken), else the first registered kernel of each partial set in
                                      that table's order that serves the launch, else (the JIT, then) the
                                      generic one; never one fixing more than nd_kernels_set_fixed allows */
} nd_kernel_pick;

/*
 * On-demand specialization (the JIT). When enabled, a launch that wants a specialized kernel (AUTO or
 * SPECIALIZED) and finds none for its distributions runs ndgen for exactly that target, compiles the
 * result with the system C compiler, loads it and caches it in cache_dir. The cache entry is keyed by
 * a hash of the generator version, spec, op, dtypes, distributions, folders, compiler (its words,
 * resolved path and --version output) and flags; it records the hash of every input file (spec,
 * included specs, template and its headers, the ndgen and compiler executables, every file the flags
 * name such as libnd_dist.a) and of the library, so a stale, damaged or half-written entry is rebuilt,
 * never loaded. Concurrent processes build an entry once (a lock file per entry).
 *
 * The cache holds code that gets loaded, so it must be the user's own: a cache folder not owned by the
 * effective user or writable by group or others, or below a folder that is neither the user's nor
 * root's or is writable by others without the sticky bit, is refused (ND_JIT_FAILED, and the generic
 * kernel runs).
 */
enum { ND_JIT_MAX_TEMPLATE_DIRS = 8 };
typedef struct nd_jit_config {
    const char *cache_dir;   /* created when missing (mode 0700); NULL or "": a private temporary folder
                                (mkdtemp in $TMPDIR, else /tmp) made at the first build and removed by
                                nd_kernels_close; nd_kernels_jit_notice says so */
    const char *ndgen;       /* the generator executable */
    const char *spec_dir;    /* where <spec>.lua is for a registry group <spec> whose spec is not where its
                                library records it (nda_kernel_group.spec_path): folders separated by ':',
                                searched in order; NULL: only where libraries record their specs */
    int ntemplate_dirs;      /* template folders searched after those the op's library records (0 to 8);
                                every one is also on the compiler's include path */
    const char *template_dirs[ND_JIT_MAX_TEMPLATE_DIRS];
    const char *include_dir; /* holds nd_accessor.h */
    const char *cc;          /* the C compiler: an executable's path, or words split at blanks ("cc -m64");
                                run directly, never through a shell */
    const char *cflags;      /* split at blanks, no quoting; -Werror and -Werror=... are dropped, but for the
                                warnings that are always bugs (NDGEN_KERNEL_ERRORS). NULL: the flags the op's
                                library records its kernels were compiled with (ndgen registry
                                --kernel-cflags), so a specialization is the same code as the prebuilt
                                kernels; "-O3" for a library that records none */
    const char *ldflags;     /* after the source, such as the nd_dist library generic kernels call */
    double lock_wait;        /* seconds to wait for another process building the same entry, then the
                                generic kernel runs; (0, 86400] */
} nd_jit_config;

/* cc from $CC (else "cc"), cflags NULL (each library's own: with -march=native, as the bundled library's
 * by default, the cache keys kernels by the CPU), lock_wait from $NDGEN_JIT_LOCK_WAIT (else 300; text
 * that is not a number in range gives NaN, which nd_jit_create refuses by name); everything else unset. */
void nd_jit_config_init(nd_jit_config *cfg);
/* $NDGEN_CACHE_DIR, else $XDG_CACHE_HOME/ndgen, else $HOME/.cache/ndgen (each when set and not empty):
 * 0. When none is set, 1 and "": no persistent cache (give NULL or "" as cache_dir). -1: too long. */
int nd_jit_default_cache_dir(char *buf, size_t len);
/* A one-line notice when the JIT builds in a private temporary folder (no cache folder), else NULL. */
const char *nd_kernels_jit_notice(const nd_kernels *k);

int nd_kernels_open(nd_kernels **out, nd_error *err);
/* The most a picked kernel may fix, a set of NDA_FIXED_SETS (docs/partial.md): "all" (the default)
 * takes an exact kernel first; "pattern" passes over exact kernels, "shard" over pattern ones too. The
 * JIT builds kernels of exactly this set, cached by its fixed parameters: a launch of another size of
 * a known pattern is a cache hit. ND_EINVAL for an unknown name. */
int nd_kernels_set_fixed(nd_kernels *k, const char *set, nd_error *err);
/* Turns the JIT on with cfg (copied), or off with NULL. Off by default. */
int nd_kernels_set_jit(nd_kernels *k, const nd_jit_config *cfg, nd_error *err);
void nd_kernels_close(nd_kernels *k);
int nd_kernels_load(nd_kernels *k, const char *path, nd_error *err);
/* What nd_kernels_load_with does with an op of the library that another spec's kernels loaded before
 * define: refuse the library (nd_kernels_load's rule), or let one side win, whole: the op's kernels
 * then all come from one spec. */
typedef enum nd_load_conflicts {
    ND_LOAD_REFUSE_CONFLICTS, /* ND_EREFUSED, naming both specs */
    ND_LOAD_REPLACE_OPS,      /* this library's kernels of the op replace those loaded before */
    ND_LOAD_KEEP_OPS,         /* the kernels loaded before stay; this library's of that op are not registered */
} nd_load_conflicts;
int nd_kernels_load_with(nd_kernels *k, const char *path, nd_load_conflicts how, nd_error *err);
/* Kernels registered, all ops and variants. */
int nd_kernels_count(const nd_kernels *k);

/* Entry i of every registered kernel, in load order (0 <= i < nd_kernels_count). */
const nda_kernel_entry *nd_kernels_entry(const nd_kernels *k, int i);

/* nd_kernels and the JIT are for one thread at a time: a pick may load a library. */
int nd_kernels_pick(nd_kernels *k, const char *op, nd_tensor *const *tensors, int ntensors, nd_variant want,
                    nd_kernel_pick *out, nd_error *err);

/*
 * A launch of an op, described by name: nd_run picks the kernel (nd_kernels_pick), checks the launch
 * against the op (output writers, scalars) and runs it (nd_launch). Unset fields are zero: no scalars,
 * ND_VARIANT_AUTO, no pick or statistics wanted. With designated initializers:
 *
 *     nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "relu",
 *                              .tensors = (nd_tensor *[]){a, out}, .ntensors = 2}, &err);
 */
typedef struct nd_launch_desc {
    nd_device *device;
    nd_kernels *kernels;       /* where the op's kernels are registered (and the JIT, when on) */
    const char *op;
    nd_tensor *const *tensors; /* the op's operands in order, outputs last */
    int ntensors;
    const double *scalars;     /* the op's scalars, or NULL with nscalars 0 */
    int nscalars;
    nd_variant variant;        /* which kernel: ND_VARIANT_AUTO (the default), GENERIC or SPECIALIZED */
    nd_kernel_pick *pick;      /* out, may be NULL: the kernel chosen, and what the JIT did */
    nd_launch_stats *stats;    /* out, may be NULL: time and traffic */
    /* May be NULL: called with the kernel chosen once the launch is checked, just before it runs (a
     * tool's watchdog names what it runs, ndrun's watchdog.c). */
    void (*picked)(void *ctx, const nd_kernel_pick *pick);
    void *picked_ctx;
} nd_launch_desc;

/* Picks, checks and launches; -1 with nothing run when any step fails. err's code says what kind of
 * failure it was: ND_ENOENT no kernel for the op, its dtypes or (SPECIALIZED) its distributions;
 * ND_EREFUSED a launch that would give a wrong result, such as a Partial operand the op cannot take;
 * ND_EINVAL operands or scalars that do not fit the op; and the JIT's codes when it specializes. */
int nd_run(const nd_launch_desc *launch, nd_error *err);

#ifdef __cplusplus
}
#endif
#endif
