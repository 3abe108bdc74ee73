/*
 * tune.h - what ndrun tune's search of one op (tune.c) gives its search of a chain of ops (tune_chain.c):
 * the job and its candidates, the model's ranking, a candidate as an ndrun case and as a spec target, and
 * the timing of a set of cases in interleaved rounds.
 */
#ifndef NDRUN_TUNE_H
#define NDRUN_TUNE_H

#include "ndrun.h"

enum { TUNE_MAX = 4096, TUNE_TOP_DEFAULT = 4, TUNE_TOP_MAX = 16, TUNE_ARGS = 40, TUNE_ROUNDS_MAX = 1000 };
enum { TUNE_OPERANDS = 8 };

typedef struct cand {
    int64_t ways[ND_MAX_RANK], shard[ND_MAX_RANK]; /* an einsum: ways and shard of each output letter */
    bool tiles;
    char summed;       /* an einsum: the contracted letter split over every core (each core's output a
                          part of a pending sum, then a reduce_scatter over the output's first letter);
                          0: none, every input aligned with the output's split */
    bool pending;      /* a reduction: the input split along its first reduced dim over every core, the
                          output Partial over the cores (each copy folds its own chunk: templates/reduce.c),
                          then a reduce_scatter onto the kept dims split by rows */
    double flops;      /* an einsum's model, first: the busiest core's multiply-adds (0 for other ops) */
    double bytes;      /* the model: the busiest core's bytes */
    int64_t pages;     /* that core's pages */
    char text[160];    /* "--shard 64,4096 --tile 32x32" */
    double median, half; /* measured seconds and the 95% interval's half width (relative); NAN: not timed */
    bool tight;
    char fixed[16];    /* what its timed kernel fixed (nd_kernel_pick.fixed) */
    bool picked;       /* given with --also */
} cand;

typedef struct tune_opts {
    const char *op, *shape, *grid, *dtype, *axes, *json_out, *svg_out;
    const char *also[TUNE_TOP_MAX]; /* --also SHARD[:tile]: distributions the user picked, timed beside */
    int nalso;
    int top, rounds;
    bool predict_only;
} tune_opts;

typedef struct tune_job {
    tune_opts o;
    nr_settings s;
    int rank, gx, gy;
    int64_t shape[ND_MAX_RANK], cores, elem;
    nd_dtype dtype;
    bool reduced[ND_MAX_RANK]; /* the dims each output element reads whole: reduced, or softmax's last */
    bool drops;                /* the output drops the reduced dims (a reduction without keepdims) */
    int ninputs;
    const char *in_name, *out_name; /* the op's first input and its output, as its spec names them */
    /* an einsum: its operands' letters and names, and each letter's size (the output's letters are the
     * search's dims: rank and shape above are the output's) */
    bool einsum;
    bool partial_out;          /* the einsum's output may be Partial, and in this dtype (f32: the runtime
                                  refuses a narrower pending sum, its parts rounded): pending-sum candidates */
    const char *pending;       /* a reduction whose output may be Partial, pending this op ("sum", "max"), in
                                  this dtype (a sum in f32 alone, as above): pending candidates; NULL: none */
    int noperands;
    const char *letters[TUNE_OPERANDS], *names[TUNE_OPERANDS];
    int64_t size[128];
    cand *c;
    int n;
    int chosen; /* after timing: the candidate chosen (index into c), -1 before or when none was timed */
    bool checked; /* after timing: every timed candidate's result agreed with the op's reference (verify) */
} tune_job;

/* The job's candidates for j->o (op, shape, grid, dtype, axes set): the op's kind from the kernels,
 * every candidate, ranked by the model (j->c[0] the best). Fails when there is none. */
int nr_tune_prepare(tune_job *j, nd_kernels *k, nd_error *err);
/* The top `top` hold the model's best of both page kinds where the candidates have both. */
void nr_tune_both_page_kinds(tune_job *j, int top);
/* Candidate c as ndrun cases: part 0 the op; a pending-sum or pending candidate has part 1, the
 * reduce_scatter of its output. The strings live until the next call. */
int nr_tune_parts(const cand *c);
int nr_tune_case(const tune_job *j, const cand *c, int part, nr_case *out, nd_error *err);
/* Operand k's shape and shard under candidate c of an einsum job; returns its rank. */
int nr_tune_operand_dims(const tune_job *j, const cand *c, int k, int64_t *shape, int64_t *shard);
/* Candidate c as a target a spec takes as it is; a pending-sum candidate's reduce_scatter in then
 * (else ""). */
void nr_tune_spec_target(char *buf, size_t len, const tune_job *j, const cand *c);
void nr_tune_spec_then(char *buf, size_t len, const tune_job *j, const cand *c);
/* One operand's distribution as a spec's Lua table (shape, shard, 32x32 tiles or rows, grid, dtype). */
void nr_tune_lua_dist(char *buf, size_t len, const char *grid, const char *dtype, const int64_t *shape,
                      const int64_t *shard, int n, bool tiles);
/* One option at argv[*i]: a string into *slot, a number from 1 to hi into *num, else one of ndrun's
 * common options; `who` names the command in errors. Advances *i past a value. */
int nr_tune_option(int argc, char **argv, int *i, const char **slot, int *num, int hi, nr_settings *s,
                   const char *who, nd_error *err);
/* "4,4096" */
void nr_tune_format_dims(char *buf, size_t len, const int64_t *v, int n);

/* A set of cases timed together: make(ctx, i, &case) gives case i, opened at once (its strings need
 * live only until then). Their specialized kernels run in interleaved rounds, each launch from flushed
 * caches, the order rotated each round, for at least `rounds` rounds and 0.2 s per case. Each case's
 * median seconds, its 95% interval's relative half width and whether that is tight (nr_median_tight).
 * checked, when not NULL: each case is first run once and checked against its op's plain reference (a
 * case that disagrees is an error naming it), and *checked is cleared when one could not be (no
 * reference, or a Partial output). */
typedef struct nr_tune_timing {
    double median, half;
    bool tight;
    char fixed[16];             /* what the kernel timed fixed (nd_kernel_pick.fixed): "all", "pattern", ... */
} nr_tune_timing;
int nr_tune_time(nd_kernels *k, const nr_settings *s, int n, int rounds,
                 int (*make)(void *ctx, int i, nr_case *out, nd_error *err), void *ctx, nr_tune_timing *out,
                 bool *checked, nd_error *err);
/* Candidate c of j run once on the seed's inputs, end to end (both launches of a pending candidate), and
 * its result checked against the op's plain reference: a candidate that disagrees is an error naming it.
 * *checked: false when the op has no reference. */
int nr_tune_verify(const tune_job *j, nd_kernels *k, const cand *c, bool *checked, nd_error *err);
/* The top candidates timed together, every part of each (nr_tune_time); a candidate's time is the sum of
 * its parts' medians, its half width the parts' absolute half widths summed, relative to that. */
int nr_tune_time_candidates(const tune_job *j, nd_kernels *k, int top, nr_tune_timing *out, nd_error *err);

#endif
