/*
 * test_reduce.c - reduce_sum and reduce_max (templates/reduce.c) on data where the order of the
 * additions shows, and on NaN and infinities, at sizes crossing the template's blocks: output rows
 * longer than its 2048-element chunk, reduced row counts that are not a multiple of its 8-row groups,
 * runs along the last axis that are not whole 16-lane blocks, tiles, boxes, DRAM pages, keepdims,
 * every axis. test_kernels holds reductions to a reference bit for bit on values whose sums are exact;
 * this test holds them to the tolerance templates/reduce.c states, computed here independently:
 *
 *  - sum, last axis kept: the input's order, so bit for bit a sequential f32 loop written here;
 *  - sum, last axis reduced: |got - exact| <= (c + 15) eps sum|x|, eps = 2^-24, the exact sum in
 *    double, c the most values one of the 16 lanes folds: per reduced row of runs of L elements (the
 *    input's page width along the last axis), L/16 per run, and lane 0 also the L mod 16 left over;
 *  - sums of small integers: exact, whatever the order;
 *  - max: exact, and NaN when any reduced element is NaN (numpy.max, torch.amax); a sum is NaN when
 *    the exact one is, and the same infinity when it is one.
 * Each launch runs the generic kernel and the kernel specialized for the case (by the JIT when given),
 * which must agree bit for bit. Usage: test_reduce LIBRARY [--jit NDGEN SPEC_DIR TEMPLATE_DIR INCLUDE_DIR
 * CFLAGS LDFLAGS] [--seed N]
 */
#include <math.h>

#include "device_setup.h"
#include "nd_runtime.h"
#include "testutil.h"

static int64_t passed;

typedef struct rcase {
    nd_dist_flags in, out;
    int axes[ND_MAX_RANK], naxes;
} rcase;

#define FLAGS(...) ((nd_dist_flags){.l1_size = "64M", .dram_bank_size = "64M", __VA_ARGS__})

static const rcase cases[] = {
    /* the last axis kept, output rows past the 2048-element chunk, 37 rows: 4 groups of 8 and 5 */
    {FLAGS(.shape = "37,2500", .shard = "20,2500", .grid = "2x1"), FLAGS(.shape = "2500", .shard = "2500", .grid = "2x1"),
     {0}, 1},
    /* the last axis reduced: 2500 = 156 blocks of 16 and 4 */
    {FLAGS(.shape = "37,2500", .shard = "20,2500", .grid = "2x1"), FLAGS(.shape = "37", .shard = "19", .grid = "2x1"),
     {1}, 1},
    /* tiles, axes 0 and 2: runs of 32 and a last run of 12; output runs of 25, 16 elements side by side
     * (their runs adjacent) and 9 */
    {FLAGS(.shape = "6,50,300", .shard = "2,32,64", .tile = "32x32", .grid = "2x2"),
     FLAGS(.shape = "50", .shard = "25", .grid = "2x1"), {0, 2}, 2},
    /* axes 0 and 2, 19 combinations (groups of 8, 8 and 3) for outputs 16 side by side and 4 more */
    {FLAGS(.shape = "19,40,70", .shard = "10,40,70", .grid = "2x1"), FLAGS(.shape = "40", .shard = "20", .grid = "2x1"),
     {0, 2}, 2},
    /* axes 1 and 2, the output along axis 0, outside them: one output element at a time */
    {FLAGS(.shape = "40,6,300", .shard = "16,6,128", .grid = "2x2"), FLAGS(.shape = "40", .shard = "20", .grid = "2x1"),
     {1, 2}, 2},
    /* boxes, keepdims, axes 1 and 3 of four */
    {FLAGS(.shape = "5,7,9,40", .shard = "2,4,3,16", .page = "1,2,3,8", .grid = "2x2"),
     FLAGS(.shape = "5,1,9,1", .shard = "3,1,9,1", .grid = "2x1"), {1, 3}, 2},
    /* every axis, keepdims, from DRAM pages */
    {FLAGS(.shape = "300,70", .interleaved = true, .buffer = "dram", .banks = "3"),
     FLAGS(.shape = "1,1", .shard = "1,1", .grid = "1x1"), {0, 1}, 2},
    /* the two leading axes of three, keepdims, rows kept and past the chunk */
    {FLAGS(.shape = "13,4,2100", .shard = "7,4,2100", .grid = "2x1"),
     FLAGS(.shape = "1,1,2100", .shard = "1,1,2100", .grid = "1x1"), {0, 1}, 2},
};
enum { NCASES = sizeof cases / sizeof *cases };

typedef enum { DATA_FLOATS, DATA_INTEGERS, DATA_SPECIAL, NDATA } data_kind;
static const char *const data_names[NDATA] = {"floats in [-1, 1)", "integers in [-8, 8]", "NaN and infinities"};

static float random_value(uint64_t *rng, data_kind kind)
{
    float f = (float)((double)(rng_next(rng) >> 40) / (double)(1 << 23)) - 1.0f; /* [-1, 1), 24 bits */
    if (kind == DATA_INTEGERS)
        return (float)rng_range(rng, -8, 8);
    if (kind == DATA_SPECIAL) {
        int64_t pick = rng_range(rng, 0, 399);
        return pick == 0 ? NAN : pick == 1 ? INFINITY : pick == 2 ? -INFINITY : f;
    }
    return f;
}

/* What each output element must be, from plain loops over the row-major input. */
typedef struct expect {
    double sum, abs_sum; /* exact enough: doubles, 53 bits, for at most a few 10^5 values below 1 */
    float seq, max;      /* a sequential f32 sum in the input's order; the maximum */
    bool nan;            /* some element is NaN */
} expect;

static void expected(const float *in, const nd_dist_spec *s, const nd_dist_spec *o, const bool *red, expect *want)
{
    int64_t nin = 1, nout = 1, x[ND_MAX_RANK] = {0};
    for (int i = 0; i < s->rank; ++i)
        nin *= s->shape[i];
    for (int i = 0; i < o->rank; ++i)
        nout *= o->shape[i];
    for (int64_t j = 0; j < nout; ++j)
        want[j] = (expect){.max = -INFINITY};
    for (int64_t e = 0; e < nin; ++e) {
        int64_t j = 0;
        for (int i = 0; i < s->rank; ++i)
            if (!red[i])
                j = j * s->shape[i] + x[i];
        float v = in[e];
        expect *w = &want[j];
        w->sum += v;
        w->abs_sum += fabs(v);
        w->seq += v;
        w->nan = w->nan || isnan(v);
        w->max = v > w->max ? v : w->max;
        for (int i = s->rank - 1; i >= 0 && ++x[i] == s->shape[i]; --i)
            x[i] = 0;
    }
}

/* The most values one lane folds when the last axis (width W, page width P) is reduced, count values
 * in all: count / W rows, each of runs of P and a last run of W mod P. */
static double lane_count(int64_t count, int64_t W, int64_t P)
{
    int64_t per_row = 0;
    for (int64_t at = 0; at < W; at += P) {
        int64_t len = W - at < P ? W - at : P;
        per_row += len / 16 + len % 16;
    }
    return (double)(count / W) * (double)per_row;
}

static void check_sum(float got, const expect *w, bool kept, double lanes, data_kind kind, int64_t j)
{
    if (isnan(w->sum) || isinf(w->sum)) {
        CHECK(isnan(w->sum) ? isnan(got) : got == (float)w->sum, "sum %" PRId64 ": got %g, want %g", j, got, w->sum);
        return;
    }
    if (kind == DATA_INTEGERS || kept) {
        float want = kind == DATA_INTEGERS ? (float)w->sum : w->seq;
        CHECK(got == want, "sum %" PRId64 ": got %.9g, want %.9g (%s)", j, got, want,
              kind == DATA_INTEGERS ? "exact" : "in the input's order");
        return;
    }
    double tol = (lanes + 15) * ldexp(1.0, -24) * w->abs_sum * (1 + 1e-6);
    CHECK(fabs((double)got - w->sum) <= tol, "sum %" PRId64 ": got %.9g, exact %.12g, off by %g > %g", j, got, w->sum,
          fabs((double)got - w->sum), tol);
}

static void check_max(float got, const expect *w, int64_t j)
{
    CHECK(w->nan ? isnan(got) : got == w->max, "max %" PRId64 ": got %g, want %g", j, got, w->nan ? NAN : w->max);
}

/* Runs op with variant want into out and reads it back. */
static void run(nd_device *dev, nd_kernels *k, const char *op, nd_tensor **t, const double *axes, int naxes,
                nd_variant want, float *out, int64_t nout)
{
    nd_error err;
    float *zero = calloc((size_t)nout, sizeof *zero);
    int rc = nd_tensor_write(t[1], zero, nout * 4, &err);
    rc = rc || nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = op, .tensors = t, .ntensors = 2,
                                        .scalars = axes, .nscalars = naxes, .variant = want}, &err);
    rc = rc || nd_tensor_read(t[1], out, nout * 4, &err);
    CHECK(rc == 0, "%s: %s", op, rc ? err.msg : "");
    free(zero);
}

static void check_one(nd_kernels *k, const rcase *c, bool jit, uint64_t *rng)
{
    nd_dist d[2];
    nd_error err;
    int rc = nd_dist_from_flags(&c->in, &d[0], &err);
    rc = rc || nd_dist_from_flags(&c->out, &d[1], &err);
    CHECK(rc == 0, "the case's distributions: %s", err.msg);
    if (rc)
        return;
    nd_device_config cfg;
    nd_device_config_init(&cfg);
    cfg.grid_x = cfg.grid_y = 2;
    cfg.dram_banks = 3;
    cfg.l1_bytes = cfg.dram_bank_bytes = 64 << 20;
    cfg.threads = 2;
    nd_device *dev = NULL;
    nd_tensor *t[2] = {NULL, NULL};
    rc = nd_device_open(&cfg, &dev, &err) || nd_tensor_alloc(dev, &d[0], &t[0], &err) ||
         nd_tensor_alloc(dev, &d[1], &t[1], &err);
    CHECK(rc == 0, "%s", err.msg);
    const nd_dist_spec *s = &d[0].spec, *o = &d[1].spec;
    int64_t nin = 1, nout = 1, count = 1;
    bool red[ND_MAX_RANK] = {false};
    double axes[ND_MAX_RANK];
    for (int i = 0; i < c->naxes; ++i) {
        red[c->axes[i]] = true;
        axes[i] = c->axes[i];
    }
    for (int i = 0; i < s->rank; ++i) {
        nin *= s->shape[i];
        count *= red[i] ? s->shape[i] : 1;
    }
    for (int i = 0; i < o->rank; ++i)
        nout *= o->shape[i];
    const bool kept = !red[s->rank - 1];
    const double lanes = lane_count(count, s->shape[s->rank - 1], s->page[s->rank - 1]);
    float *in = malloc((size_t)nin * sizeof *in), *g = malloc((size_t)nout * 4), *sp = malloc((size_t)nout * 4);
    expect *want = malloc((size_t)nout * sizeof *want);
    for (int kind = 0; kind < NDATA && rc == 0; ++kind) {
        for (int64_t e = 0; e < nin; ++e)
            in[e] = random_value(rng, (data_kind)kind);
        CHECK(nd_tensor_write(t[0], in, nin * 4, &err) == 0, "%s", err.msg);
        expected(in, s, o, red, want);
        for (int op = 0; op < 2; ++op) {
            const char *name = op == 0 ? "reduce_sum" : "reduce_max";
            char desc[160];
            snprintf(desc, sizeof desc, "%s over %s [%s] of %s", name, c->in.shape, c->out.shape, data_names[kind]);
            test_case = desc;
            run(dev, k, name, t, axes, c->naxes, ND_VARIANT_GENERIC, g, nout);
            if (jit) {
                run(dev, k, name, t, axes, c->naxes, ND_VARIANT_SPECIALIZED, sp, nout);
                int64_t at = 0; /* the same bits, or both NaN (whose sign and payload depend on vector lanes) */
                while (at < nout && (memcmp(&g[at], &sp[at], 4) == 0 || (isnan(g[at]) && isnan(sp[at]))))
                    ++at;
                CHECK(at == nout, "element %" PRId64 ": the specialized kernel gives %g, the generic one %g", at,
                      at < nout ? sp[at] : 0.0f, at < nout ? g[at] : 0.0f);
            }
            for (int64_t j = 0; j < nout; ++j) {
                if (op == 0)
                    check_sum(g[j], &want[j], kept, lanes, (data_kind)kind, j);
                else
                    check_max(g[j], &want[j], j);
            }
            ++passed;
        }
    }
    free(in);
    free(g);
    free(sp);
    free(want);
    for (int i = 0; i < 2; ++i)
        if (t[i])
            nd_tensor_free(t[i]);
    if (dev)
        nd_device_close(dev);
}

/* --jit's words (td_set_jit). */
static int set_jit(nd_kernels *k, char **argv)
{
    nd_error err;
    if (td_set_jit(k, argv, &err) == 0)
        return 0;
    fprintf(stderr, "test_reduce: %s\n", err.msg);
    return -1;
}

int main(int argc, char **argv)
{
    nd_kernels *k;
    nd_error err;
    uint64_t seed = 0x5eed0016;
    bool jit = false;
    if (argc < 2 || nd_kernels_open(&k, &err) || nd_kernels_load(k, argv[1], &err)) {
        fprintf(stderr, "usage: test_reduce LIBRARY [--jit NDGEN SPEC_DIR TEMPLATE_DIR INCLUDE_DIR CFLAGS LDFLAGS] "
                        "[--seed N]: %s\n", argc < 2 ? "no library" : err.msg);
        return 1;
    }
    for (int i = 2; i < argc; ++i) {
        if (strcmp(argv[i], "--jit") == 0 && i + 6 < argc) {
            if (set_jit(k, argv + i + 1))
                return 1;
            jit = true;
            i += 6;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 0);
        } else {
            fprintf(stderr, "test_reduce: %s: not an option\n", argv[i]);
            return 1;
        }
    }
    printf("seed %#" PRIx64 "%s\n", seed, jit ? "" : "; no --jit: generic kernels only");
    for (int i = 0; i < NCASES; ++i) {
        uint64_t rng = seed + (uint64_t)i;
        test_seed = rng;
        check_one(k, &cases[i], jit, &rng);
    }
    nd_kernels_close(k);
    return test_finish(passed);
}
