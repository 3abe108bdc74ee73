/* ndrun.h - the ndrun tool's internal interface: one section per source file. */
#ifndef NDRUN_H
#define NDRUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "nd_files.h"
#include "nd_runtime.h"

enum { NR_MAX_OPERANDS = 8, NR_MAX_LIBRARIES = 8 };

/* ---- options.c: what to run, from the command line or the bench suite. */
typedef struct nr_operand_flags {
    const char *name;           /* operand name; NULL: the flags every operand shares */
    nd_dist_flags flags;
} nr_operand_flags;

typedef struct nr_case {
    char label[128];            /* for the suite's table and chart */
    const char *family;         /* the suite's distribution family, or NULL */
    const char *op;
    const char *dtype;          /* every operand's dtype; default f32 */
    const char *axes, *perm;    /* launch scalars for reductions and permutes; NULL: defaults */
    const char *scalars;        /* --scalars NAME=VALUE,...: an op's named scalars; NULL: none given */
    int nflags;                 /* [0] holds the shared flags */
    nr_operand_flags flags[NR_MAX_OPERANDS + 1];
} nr_case;

typedef struct nr_settings {
    int threads;                /* 0: one per hardware thread */
    int min_repeats;
    double min_seconds;         /* repeat until both minimums are met */
    bool jit;
    bool probes;                /* measure the machine's limits */
    bool small_pages;           /* no transparent huge pages (nd_device_config.huge_pages), nor for nr_host_alloc */
    char cache_dir[4096];
    bool json;
    uint64_t seed;
    int nkernels;               /* --kernels; none: the bundled library */
    const char *kernels[NR_MAX_LIBRARIES];
    char spec_dirs[8192];       /* --spec-dir DIR..., then $NDGEN_SPEC_PATH, then the bundled specs: ':'-separated */
    int ntemplate_dirs;         /* --template-dir DIR..., then $NDGEN_TEMPLATE_PATH, then the bundled templates */
    const char *template_dirs[8];
    const char *fixed;          /* --fixed: the most the specialized kernel may fix (nd_kernels_set_fixed) */
    double watchdog;            /* --watchdog: seconds a launch may run (watchdog.c); 0: no limit */
} nr_settings;

/* ---- watchdog.c: a launch that does not return stops ndrun, naming the kernel. */
enum { NR_WATCHDOG_DEFAULT = 600 }; /* seconds: a JIT compile and the longest bench launch fit many times */
void nr_watchdog_set(double seconds);
/* Brackets one launch of op's kind ("generic", "specialized") kernel symbol (NULL: still to be picked,
 * the JIT perhaps building it). */
void nr_watch_begin(const char *kind, const char *op, const char *symbol);
void nr_watch_end(void);
/* nd_launch_desc.picked for a launch bracketed so: names the kernel picked (ctx unused). */
void nr_watch_picked(void *ctx, const nd_kernel_pick *pick);

void nr_settings_init(nr_settings *s);
/* Parses one option at argv[*i] into c or s (advancing *i past its value); 1 if it is not one of
 * the shared options, -1 on a bad value. */
int nr_parse_option(int argc, char **argv, int *i, nr_case *c, nr_settings *s, nd_error *err);
/* A suite's case from its ndrun compare options args[0..max) (NULL-terminated when shorter), labelled. */
enum { NR_MAX_CASE_ARGS = 32 };
int nr_case_from_args(const char *label, const char *const *args, int max, nr_case *c, nd_error *err);
/* A suite's results, as the writers of its files take them (ctx of nr_write_file). */
typedef struct nr_results {
    const struct nr_result *r;
    int n;
} nr_results;
/* Opens the n files a suite writes (nd_files.h), before it runs: a path that is not a regular file or
 * a new name, or two options naming one file, fail at once rather than after the run. what[i] names
 * the option of paths[i]. On failure none is left open. */
int nr_outputs_open(ndf_output *out, const char *const *paths, const char *const *what, int n, nd_error *err);
/* Writes out whole or not at all: write(fp, ctx) into its temporary file, renamed over its path. */
int nr_write_file(ndf_output *out, void (*write)(FILE *fp, const void *ctx), const void *ctx, nd_error *err);
extern const char nr_options_help[];
/* The candidate nearest a misspelt word (edit distance 1, or 2 for words of 6 letters or more), for
 * "did you mean": fed candidates one by one; name stays "" when none is near. */
typedef struct nr_near {
    char name[64];
    int d;
} nr_near;
void nr_nearest(const char *word, const char *candidate, nr_near *near);
/* The same over every --option a help text names (word with or without its dashes). */
void nr_nearest_option(const char *word, const char *help, nr_near *near);

/* ---- setup.c: the device, operands and inputs for one case. */
typedef struct nr_setup {
    nd_device *dev;
    const nda_kernel_entry *entry; /* the op's generic entry */
    int n;                         /* operands, output last */
    nd_dist dist[NR_MAX_OPERANDS];
    nd_tensor *t[NR_MAX_OPERANDS];
    void *host[NR_MAX_OPERANDS];   /* inputs as written; the output buffer last */
    int64_t elems[NR_MAX_OPERANDS];
    double scalars[ND_MAX_RANK];
    int nscalars;
} nr_setup;

int nr_setup_open(nd_kernels *k, const nr_case *c, const nr_settings *s, nr_setup *out, nd_error *err);
void nr_setup_close(nr_setup *su);
/* Two inputs and an output named by index letters, such as matmul's ik,kj->ij or a bias add's
 * ij,j->ij: --shape gives one size per letter. */
bool nr_named_indices(const nda_kernel_entry *e);
/* Named indices with a letter the output does not have, summed: a contraction, timed in GFLOP/s, with
 * a GEMM peer. A bias add is elementwise. */
bool nr_is_contraction(const nda_kernel_entry *e);
/* Ops that move elements without arithmetic (the spec says moves_data: reshard, page_copy, permute). */
bool nr_moves_data(const nda_kernel_entry *e);
int64_t nr_bytes(const nr_setup *su, int operand);

/* ---- reference.c: the op's plain reference (from its spec, in the kernel library), on the device's threads. */
/* Fills out (the output's host array); -1 (ND_ENOENT) when the op's spec gives no reference. */
int nr_reference(nd_device *dev, const nr_setup *su, void *out, nd_error *err);
bool nr_has_reference(const nr_setup *su);
/* Element i of an f32 or bf16 array, as f32. */
float nr_load_f32(const void *p, int64_t i, nd_dtype t);

/* ---- machine.c: what the machine can do, measured in the same run. */
typedef struct nr_machine {
    double copy_gbs, add_gbs;  /* STREAM-style, over arrays of the case's size */
    double read_gbs;           /* a read-only stream (a sum) over the same bytes: the limit of reductions */
    double memcpy_gbs;         /* one memcpy per thread over the same bytes */
    double peak_gflops;        /* f32 multiply-adds from registers */
} nr_machine;

void nr_measure_machine(nd_device *dev, int64_t bytes, const nr_settings *s, nr_machine *m);

/* STREAM-style kernels over three arrays of a case's size, to time between a case's variants: each
 * one's name, and bytes it moves per element of an array (reads and writes, as STREAM counts them).
 * Several implement each access pattern (nr_limit_probes), so a limit is the best of them. */
#define NR_STREAMS(X)                                                                                   \
    X(NR_STREAM_INIT, "init", 12)                                                                       \
    X(NR_STREAM_COPY, "STREAM copy", 8)                                                                 \
    X(NR_STREAM_ADD, "STREAM add", 12)                                                                  \
    X(NR_STREAM_MEMCPY, "memcpy", 8)                                                                    \
    X(NR_STREAM_READ, "read, 4 streams", 4)                                                             \
    X(NR_STREAM_READ1, "read, 1 stream", 4)                                                             \
    X(NR_STREAM_READ8, "read, 8 streams", 4)                                                            \
    X(NR_STREAM_COPY_NT, "copy, non-temporal stores", 8)                                                \
    X(NR_STREAM_ADD_NT, "add, non-temporal stores", 12)                                                 \
    X(NR_STREAM_COPY_NT_CORE, "copy, non-temporal stores, per-core arrays", 8)                          \
    X(NR_STREAM_ADD_NT_CORE, "add, non-temporal stores, per-core arrays", 12)                          \
    X(NR_STREAM_COPY_NT_ALIKE, "copy, non-temporal stores, arrays aligned alike", 8)                    \
    X(NR_STREAM_ADD_NT_ALIKE, "add, non-temporal stores, arrays aligned alike", 12)
#define NR_STREAM_ENUM(kind, name, bytes) kind,
enum { NR_STREAMS(NR_STREAM_ENUM) NR_NSTREAMS };
#undef NR_STREAM_ENUM
const char *nr_stream_name(int kind);
/* The memory a timed run touches, as address spans (adjacent ones merged). */
typedef struct nr_span {
    const uint8_t *p;
    int64_t bytes;
} nr_span;
typedef struct nr_spans {
    nr_span *v;
    int n, cap;
    int64_t bytes; /* in all */
} nr_spans;
typedef struct stream_job {
    float *block;              /* the three arrays, staggered in one allocation */
    float *a, *b, *c;
    float *core;               /* the same arrays cut per piece: piece p's parts of a, b, c together */
    float *alike[3];           /* the same arrays, each an allocation of its own at the same offset in a
                                  huge page, as the device maps each tensor (element i of all three alike) */
    int64_t n, pieces, region; /* region: floats from one piece's part of a array to the next's */
    int kind;
    nr_spans staggered, cores, alikes; /* what a probe over each layout touches (nr_cold) */
} stream_job;
int nr_stream_open(nd_device *dev, int64_t bytes, stream_job *j);
void nr_stream_close(stream_job *j);
double nr_stream_once(nd_device *dev, stream_job *j, int kind); /* seconds */
double nr_stream_bytes(const stream_job *j, int kind);         /* bytes one run moves */
const nr_spans *nr_stream_spans(const stream_job *j, int kind); /* the memory one run touches */
/* The kernels implementing the access pattern of a limit kind (a stream kind of nr_limit_kind) into
 * kinds; how many. */
enum { NR_MAX_PROBES = 5 };
int nr_limit_probes(int limit_kind, int kinds[NR_MAX_PROBES]);
double nr_now(void); /* monotonic seconds */
double nr_load_average(void); /* the 1-minute load average (/proc/loadavg); -1 when the system does not say */

/* The machine ndrun runs on, detected once (never assumed): CPU model, online CPUs, caches, and the
 * OpenBLAS peer's kernels and the settings ndrun gave it. */
typedef struct nr_cpu {
    char model[128];
    int cpus;
    int64_t l1d, l2, l3;       /* bytes of one instance; 0 when the system does not say */
    int l2_instances, l3_instances;
    char peer[480];            /* "OpenBLAS 0.3.21 ... core SkylakeX; OPENBLAS_THREAD_TIMEOUT=4 set by ndrun" */
    char isa[32];              /* the vectors the kernels and probes were compiled for (target.h) */
} nr_cpu;
const nr_cpu *nr_machine_cpu(void);
/* Pins each of the device's threads to its own CPU of the process's affinity mask, so that a thread's
 * caches and clock stay with it between runs; false (nothing pinned) when there are more threads than
 * CPUs. The caller's thread is one of them. */
bool nr_pin_threads(nd_device *dev);
/* fn(ctx) with the calling thread allowed every CPU of the process's mask again: threads a peer library
 * starts inherit its mask, and would otherwise all share the caller's one CPU. */
void nr_run_unpinned(void (*fn)(void *ctx), void *ctx);
/* Bytes of every cache level below L1 together (all L2 and L3 instances): what a flush must evict. */
int64_t nr_cache_bytes(void);
/* Host memory for the dense arrays that the plain loop, the peers and the probes work on, freed with
 * free(): 2 MiB aligned, and where dev's config asks for huge pages, in huge pages as the device's
 * tensors are (nd_device_config.huge_pages), so that every variant of a row sees the same TLB. NULL
 * when out of memory. */
void *nr_host_alloc(const nd_device *dev, int64_t bytes);
/* Evicts the caches by writing twice nr_cache_bytes on the device's threads, so that each timed run
 * (variants and probes alike) starts cold; nothing when working_bytes are at least 4 times the caches,
 * which no run keeps cached. What nr_cold falls back to. */
void nr_flush_caches(nd_device *dev, int64_t working_bytes);
/* ---- cold.c: the spans a run touches, and their eviction. */
int nr_spans_add(nr_spans *s, const void *p, int64_t bytes); /* -1: out of memory */
int nr_spans_tensor(nr_spans *s, const nd_tensor *t);         /* every copy's pages on every core */
void nr_spans_free(nr_spans *s);
/* Piece p of pieces' share of the bytes of set[0..nsets) (NULL entries skipped) taken end to end, as
 * calls fn(lo, hi) over ranges of the spans: the pieces' shares are disjoint and cover every byte. */
void nr_spans_share(const nr_spans *const *set, int nsets, int64_t pieces, int64_t p,
                    void (*fn)(const uint8_t *lo, const uint8_t *hi, void *ctx), void *ctx);
/* Every cache line of a's and b's spans (b may be NULL) written back and evicted, on the device's
 * threads; false where the target has no instruction for it (x86's clflush). */
bool nr_spans_evict(nd_device *dev, const nr_spans *a, const nr_spans *b);
/* Makes the next run start cold: every line of the spans it touches (run) and of those the previous run
 * touched (before, or NULL) evicted (nr_spans_evict). That costs time in proportion to those bytes,
 * where writing over the caches costs their size (968 MB, 0.4 s a round of 8 variants, on a VM that
 * sees a 480 MiB L3) and leaves them full of dirty lines whose write-back the next run pays. Nothing
 * when run is at least 4 times the caches. Under MPI the spans hold this node's entries alone: other
 * nodes' are not mapped here (their base pointers are NULL, which nr_spans_add skips).
 * Where lines cannot be evicted by address (no x86 clflush), or run is NULL: nr_flush_caches. */
void nr_cold(nd_device *dev, const nr_spans *run, const nr_spans *before);
/* (setup.c) What a run of the case touches, into s: with host_out NULL its tensors on the device, every
 * copy; else its host inputs and host_out, an output array. -1: out of memory. */
int nr_setup_spans(const nr_setup *su, const void *host_out, nr_spans *s);

/* ---- limit.c: a row's limit, the best of everything doing its work, and when a median is believed. */
enum { NR_MAX_CANDIDATES = 3 + NR_MAX_PROBES + 4 };
typedef struct nr_ceiling {
    int n, best;                              /* candidates; the fastest */
    char name[NR_MAX_CANDIDATES][80];         /* "memcpy", "plain loop", "oneDNN reorder (jit:uni)" */
    double rate[NR_MAX_CANDIDATES];           /* GB/s, or GFLOP/s for a contraction */
} nr_ceiling;
/* Adds a candidate; a rate that is not a positive number (not measured) is left out. */
void nr_ceiling_add(nr_ceiling *c, const char *name, double rate);
double nr_ceiling_rate(const nr_ceiling *c);   /* 0 when nothing was measured */
const char *nr_ceiling_name(const nr_ceiling *c);
/* -1 with a message when rate (of who, doing the row's work) is above the ceiling. */
int nr_ceiling_check(const nr_ceiling *c, const char *who, double rate, nd_error *err);
/* Past NR_FAULT_PERCENT of its limit a rate is a FAULT (a missing probe); a median is tight when its
 * 95% confidence interval lies within NR_TIGHT of it (limit.c says how). */
#define NR_FAULT_PERCENT 105.0
#define NR_TIGHT 0.05
bool nr_median_tight(const double *sorted, int n, double *half_width);
typedef enum { NR_BELIEVED, NR_NOISY, NR_FAULT, NR_NOT_MEASURED } nr_verdict;
nr_verdict nr_judge(double rate, double limit, bool tight);
/* Whether a candidate limit's median bears on the verdict: its rate within 10% of the best candidate's,
 * so that it could be the limit (its interval must be tight, and it stays in the rounds). */
bool nr_could_be_limit(double rate, double best);
/* Of n candidates in order of preference, each a median with its 95% half width (a fraction of it) and
 * whether that interval is tight: the fastest, unless an earlier one ties with it, and then the first
 * that does; *tie when any candidate ties. A candidate ties when its interval reaches the fastest's (its
 * lower bound at most the fastest's upper one, which is infinite when it has no interval); one whose
 * interval is not tight, only when its median itself lies within the fastest's interval. That the
 * fastest's own interval is not tight is the caller's to say: it is no tie when nothing reaches it. */
int nr_pick_fastest(const double *median, const double *half, const bool *tight, int n, bool *tie);
/* The time of n parts timed apart (a pending op, then its reduce_scatter) as one candidate's: *median the
 * sum of theirs, *half the sum of their half widths (an upper bound of the sum's interval) as a fraction of
 * it, infinite when a part has none; returns whether that is tight (NR_TIGHT). A part of microseconds with
 * a wide spread of its own does not loosen a total that is tight. */
bool nr_sum_intervals(const double *median, const double *half, int n, double *sum_median, double *sum_half);

/* ---- peers.c: the libraries the field uses for an op (OpenBLAS, BLIS, oneDNN, LIBXSMM), each run on
 * the case's dense host arrays as its users call it. */
enum { NR_MAX_PEERS = 4 };
struct peer_lib;
struct peer_problem;
typedef struct nr_peer {
    const struct peer_lib *lib;
    void *state;
    char name[72];              /* the library and its call: "oneDNN reorder (jit:uni)" */
} nr_peer;
typedef struct nr_peers {
    int n;
    nr_peer p[NR_MAX_PEERS];
    struct peer_problem *problem;
} nr_peers;
/* The peers that do the case's op; none (n == 0) when no library does it. */
int nr_peers_open(const nr_setup *su, nr_peers *out, nd_error *err);
/* Peer i on the case's host inputs, into out (the output's dense array). */
void nr_peer_run(nr_peers *ps, int i, const nr_setup *su, void *out);
void nr_peers_close(nr_peers *ps);
/* 2 per multiply-add of a contraction's peer problem; 0 for other ops. */
double nr_peers_flops(const nr_peers *ps);
/* The libraries ndrun was built with, for the table's header. */
const char *nr_peer_libraries(void);

/* ---- compare.c: one case three ways, checked and timed. */
typedef struct nr_timing {
    double median, min, max;   /* seconds */
    int repeats;
} nr_timing;

/* One process's share of a run under an MPI launcher (procs.c): bytes its cores read. */
enum { NR_MAX_PROCS = 64 };
typedef struct nr_proc {
    int64_t core_lo, core_hi;     /* the device cores it ran */
    int64_t local_bytes;          /* from each reading core's own pages */
    int64_t remote_bytes;         /* from other cores' pages, in this process or another */
    int64_t other_process_bytes;  /* of those, from other processes' pages; -1 when not counted */
    int node;                     /* its node (emulated or real) */
    int64_t node_bytes;           /* its launch's read set held by other processes of its node */
    int64_t fetched_bytes, gets;  /* held on other nodes, fetched before the launch in that many MPI_Get calls */
    const char *order;            /* how its launch was ordered with the others: "fence", "pairs", "none" */
    int pair_writers, pair_readers; /* in pairs: the processes it waited for at the start and at the end */
    int64_t reserved_bytes, staging_bytes; /* address space it holds for device memory, and of that for
                                              other nodes' pages (nd_mpi_proc_stats) */
} nr_proc;

typedef struct nr_result {
    char label[128], family[32], op[64], dtype[8];
    char shapes[256];          /* every operand's shape, "256x256,256x256->256x256" */
    bool moves_data;           /* nr_moves_data of its entry */
    bool match;
    double max_error;
    char mismatch[256];        /* what did not match, when !match */
    nr_timing generic, specialized, reference;
    int npeers;                /* libraries doing the same op, checked against the reference */
    char peer_name[NR_MAX_PEERS][72];
    nr_timing peer[NR_MAX_PEERS];
    nr_ceiling ceiling;        /* the limit: the best rate of the probes, the plain loop and the peers */
    bool tight;                /* the specialized kernel's and the limit's medians are believed (limit.c) */
    double ci_half_width;      /* the wider of their 95% intervals, relative to the median */
    double load[2];            /* the system's 1-minute load average before and after the timed rounds */
    double bytes;              /* moved by the op: inputs read once and the output written once */
    double flops;              /* for contractions: 2 per multiply-add; 0 otherwise */
    nr_machine machine;
    int64_t local_pages, remote_pages; /* read by the specialized kernel */
    int64_t input_pages;       /* the pages of data its inputs hold (one copy each) */
    int64_t generic_code, specialized_code; /* bytes of the kernel function */
    char generic_symbol[128], specialized_symbol[128];
    char specialized_fixed[16]; /* what the specialized kernel fixed: a set of NDA_FIXED_SETS, or "none" */
    nd_jit_outcome jit;
    char jit_note[192];
    int threads;
    bool has_reference;        /* false: the op's spec gives none, so only generic against specialized was checked */
    char reference_name[64];   /* "from EXPR" or the reference function's name */
    int processes;             /* 1, or the MPI job's size */
    nr_proc procs[NR_MAX_PROCS];
    int nodes;                    /* the nodes the processes form (1 without MPI) */
} nr_result;

int nr_compare(nd_kernels *k, const nr_case *c, const nr_settings *s, nr_result *r, nd_error *err);
/* Whether got (su's output, host) matches want: bit for bit for data movement, else within the output
 * dtype's relative tolerance; on a mismatch r->mismatch says where (what names got), and r->max_error
 * grows to the largest difference seen. */
bool nr_outputs_match(const nr_setup *su, const void *got, const void *want, const char *what, nr_result *r);
/* The headline rate of a timing: GFLOP/s for a contraction, else GB/s. */
double nr_rate(const nr_result *r, const nr_timing *t);
/* The access pattern that bounds a case: a stream kind (copy, add, memcpy, read) whose probes
 * (nr_limit_probes) are timed beside it, or the FMA peak (NR_LIMIT_FMA). */
enum { NR_LIMIT_FMA = -1 };
int nr_limit_kind(const nr_result *r);
/* The case's limit in its rate's unit (r->ceiling), its name, and the verdict on the specialized rate. */
double nr_limit(const nr_result *r);
const char *nr_limit_name(const nr_result *r);
nr_verdict nr_result_verdict(const nr_result *r);
/* Pages the specialized kernel read per page of input data; past NR_MAX_READS_PER_PAGE its traffic grows
 * faster than its data (a row statistic recomputed per element, say), and the table says so. */
#define NR_MAX_READS_PER_PAGE 3.0
double nr_reads_per_page(const nr_result *r);
/* The fastest peer by median; -1 when the case has none. */
int nr_best_peer(const nr_result *r);

/* ---- procs.c: ndrun under an MPI launcher (SPMD, rank 0 prints). */
/* MPI_Init when an MPI launcher started this process in a job of several; silences rank > 0's stdout. */
int nr_procs_init(int *argc, char ***argv, nd_error *err);
void nr_procs_finish(void);
int nr_procs_rank(void);
/* Rank 0's go, on every process (as is without a launcher): a decision every process must take alike,
 * such as whether to time another round, when each process's own clock would say otherwise. */
bool nr_procs_agree(bool go);
/* Every process of the job here before any goes on (nothing without a launcher): a timed launch starts
 * on all of them at once, so that the wait for a process still busy with the round's untimed work (its
 * cache flush, its own plain loop) is not in the launch's time. A launch fenced over every process
 * began with that wait anyway; one ordered in pairs, or with nobody, does not. */
void nr_procs_align(void);
/* nd_device_open, or over every process of the job when under a launcher. */
int nr_open_device(const nd_device_config *cfg, nd_device **out, nd_error *err);
/* r->processes and r->procs from the device's last launch. */
int nr_procs_capture(nd_device *dev, nr_result *r, nd_error *err);
/* The per-process lines of the table, when there are several processes. */
void nr_print_procs(FILE *fp, const nr_result *r);
/* "processes", "nodes" and "per_process" as JSON members, each line after indent, each ending ",\n". */
void nr_print_procs_json(FILE *fp, const nr_result *r, const char *indent);

/* ---- report.c: tables and JSON. */
/* s as a JSON string: symbols, shapes, messages and spec text, escaped where JSON needs it. */
void nr_json_str(FILE *fp, const char *s);
void nr_print_table(FILE *fp, const nr_result *r);
void nr_print_json(FILE *fp, const nr_result *r, const char *indent);
void nr_print_suite_table(FILE *fp, const nr_result *r, int n);

/* ---- chart.c: the suite as an SVG bar chart. */
void nr_chart_svg(FILE *fp, const nr_result *r, int n);

/* ---- suite.c and main.c: the subcommands. */
int nr_compare_main(int argc, char **argv);
/* tune.c: ndrun tune, the fastest distribution of one op by search and measurement (tune_chain.c: of
 * a chain, ndrun tune --chain; tune.h). */
int nr_tune_main(int argc, char **argv);
int nr_tune_chain_main(int argc, char **argv);
int nr_bench_main(int argc, char **argv);
/* suite_contract.c: ndrun bench --contractions, the contraction cases beside the OpenBLAS peer. */
int nr_bench_contract_main(int argc, char **argv);
/* suite_procs.c: ndrun bench --processes, the multi-process family (under mpirun or alone). */
int nr_bench_procs_main(int argc, char **argv);
/* libraries.c: opens the kernel libraries (the bundled one by default), with the JIT when s->jit. */
int nr_open_kernels(const nr_settings *s, nd_kernels **out, nd_error *err);
/* libraries.c: the ndgen beside ndrun (as installed, or in the build tree). */
int nr_own_ndgen(char *buf, size_t len, nd_error *err);
/* nr_parse_option plus --kernels, --spec-dir and --template-dir. */
int nr_parse_common(int argc, char **argv, int *i, nr_case *c, nr_settings *s, nd_error *err);

#endif
