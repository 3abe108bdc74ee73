/*
 * suite_contract.c - ndrun bench --contractions: the contraction cases of issue 16 (matmul at 1024,
 * 2048 and 4096, bmm 8x512x512x512, scores 2,8,512,64,512, matvec 4096x4096), f32, each run four ways
 * side by side: the generic kernel, the specialized kernel, the plain reference and every peer library
 * doing the same contraction (peers.c: OpenBLAS and BLIS gemm or gemv, oneDNN matmul, LIBXSMM for
 * small products).
 * Every variant runs once per round from flushed caches, in an order rotated each round; the table
 * gives each variant's median and spread over the rounds, and the specialized kernel's rate as a
 * percentage of the best peer's. A warm-up round's outputs are checked against the reference first.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ndrun.h"

/* A case as ndrun compare's options, and the shape of its peer: batches of M x N x K products. */
typedef struct contract_case {
    const char *label;
    const char *args[16];
} contract_case;

static const contract_case contract_cases[] = {
    {"matmul 1024", {"--op", "matmul", "--shape", "1024,1024,1024", "--shard", "512,1024", "--grid", "2x1"}},
    {"matmul 2048", {"--op", "matmul", "--shape", "2048,2048,2048", "--shard", "1024,2048", "--grid", "2x1"}},
    {"matmul 4096", {"--op", "matmul", "--shape", "4096,4096,4096", "--shard", "2048,4096", "--grid", "2x1"}},
    {"bmm 8x512x512x512", {"--op", "bmm", "--shape", "8,512,512,512", "--shard", "4,512,512", "--grid", "2x1"}},
    {"scores 2,8,512,64,512",
     {"--op", "scores", "--shape", "2,8,512,64,512", "--shard", "1,8,512,64", "--grid", "2x1", "--operand", "out",
      "--shard", "1,8,512,512"}},
    {"matvec 4096x4096",
     {"--op", "matvec", "--shape", "4096,4096", "--shard", "2048,4096", "--grid", "2x1", "--operand", "b", "--shard",
      "4096", "--operand", "out", "--shard", "2048"}},
};
enum { NCONTRACT = sizeof contract_cases / sizeof *contract_cases, NVARIANTS = 3 + NR_MAX_PEERS, MAX_ROUNDS = 1000 };

static const char *const variant_names[3] = {"generic", "specialized", "reference"};

static const char contract_usage[] =
    "usage: ndrun bench --contractions [--filter TEXT] [--repeats N] [--threads N] [--no-jit] [--cache-dir DIR]\n"
    "\n"
    "Runs the contraction cases (matmul 1024, 2048, 4096; bmm 8x512x512x512; scores 2,8,512,64,512;\n"
    "matvec 4096x4096; f32 on 2x1 cores) four ways side by side: generic kernel, specialized kernel, plain\n"
    "reference and every peer library (OpenBLAS, BLIS, oneDNN, LIBXSMM for small products, as built),\n"
    "each from flushed caches in an order rotated every round. Prints per case each variant's median\n"
    "time, GFLOP/s and spread ((max - min) / median over the rounds), and the specialized kernel's rate\n"
    "as a percentage of the best peer's.\n"
    "The outputs of a warm-up round are checked against the reference (relative 1e-4 of the largest).\n"
    "Exit status: 0 when every case agrees, 1 when one does not or on error, 2 on a usage error.\n"
    "\n"
    "  --filter TEXT   only the cases whose label contains TEXT\n"
    "  --repeats N     timed rounds per case (default 3)\n";

/* ---------------------------------------------------------------- one case */

typedef struct contract_run {
    nr_setup su;
    nd_kernel_pick pick[2]; /* generic, specialized */
    nr_peers peers;
    float *out[NVARIANTS];
    double *t[NVARIANTS];
    int rounds;
    nr_spans spans[NVARIANTS]; /* what each variant touches: the tensors or the host inputs, and its output */
    int last;                  /* the variant run last, or -1 */
} contract_run;

/* Variant v once, from cold caches (nr_cold); its seconds, its output in run->out[v]. */
static double run_variant(contract_run *run, int v, nd_error *err)
{
    nr_setup *su = &run->su;
    int o = su->n - 1;
    nd_launch_stats st;
    nr_cold(su->dev, &run->spans[v], run->last >= 0 ? &run->spans[run->last] : NULL);
    run->last = v;
    double t0 = nr_now();
    if (v < 2) {
        nr_watch_begin(v ? "specialized" : "generic", su->entry->op, run->pick[v].symbol);
        int rc = nd_launch(su->dev, run->pick[v].fn, su->t, su->n, su->scalars, su->nscalars, &st, err);
        nr_watch_end();
        if (rc || nd_tensor_read(su->t[o], run->out[v], nr_bytes(su, o), err))
            return -1;
        return st.seconds;
    }
    if (v == 2 && nr_reference(su->dev, su, run->out[2], err))
        return -1;
    if (v >= 3)
        nr_peer_run(&run->peers, v - 3, su, run->out[v]);
    return nr_now() - t0;
}

/* Whether got is within 1e-4 of the largest reference element from want, everywhere. */
static bool close_to(const float *got, const float *want, int64_t n, char *why, size_t len, const char *what)
{
    double big = 1;
    for (int64_t i = 0; i < n; ++i)
        big = fmax(big, fabs(want[i]));
    for (int64_t i = 0; i < n; ++i)
        if (!(fabs((double)got[i] - want[i]) <= 1e-4 * big)) {
            snprintf(why, len, "%s element %lld is %.9g, the reference %.9g", what, (long long)i, got[i], want[i]);
            return false;
        }
    return true;
}

static int open_run(nd_kernels *k, const contract_case *cc, const nr_settings *s, contract_run *run, nd_error *err)
{
    nr_case c;
    if (nr_case_from_args(cc->label, cc->args, 16, &c, err) || nr_setup_open(k, &c, s, &run->su, err))
        return -1;
    nr_setup *su = &run->su;
    if (nr_peers_open(su, &run->peers, err))
        return -1;
    run->last = -1;
    for (int v = 0; v < NVARIANTS; ++v) {
        if (!(run->out[v] = nr_host_alloc(su->dev, nr_bytes(su, su->n - 1))) || !(run->t[v] = malloc(MAX_ROUNDS * sizeof(double))))
            return nd_failc(err, ND_ENOMEM, "out of host memory");
        /* a kernel's output is read back into out[v] after its launch, so its run touches that too */
        if (nr_setup_spans(su, v < 2 ? NULL : run->out[v], &run->spans[v]) ||
            (v < 2 && nr_spans_add(&run->spans[v], run->out[v], nr_bytes(su, su->n - 1))))
            return nd_failc(err, ND_ENOMEM, "out of host memory");
    }
    for (int v = 0; v < 2; ++v) { /* picks the kernels (specializing on demand), and runs each once */
        nr_watch_begin(v ? "specialized" : "generic", su->entry->op, NULL);
        int rc = nd_run(&(nd_launch_desc){.device = su->dev, .kernels = k, .op = su->entry->op, .tensors = su->t,
                                          .ntensors = su->n, .variant = v ? ND_VARIANT_SPECIALIZED : ND_VARIANT_GENERIC,
                                          .pick = &run->pick[v], .picked = nr_watch_picked}, err);
        nr_watch_end();
        if (rc)
            return -1;
    }
    return 0;
}

static void close_run(contract_run *run)
{
    for (int v = 0; v < NVARIANTS; ++v)
        free(run->out[v]), free(run->t[v]), nr_spans_free(&run->spans[v]);
    nr_peers_close(&run->peers);
    nr_setup_close(&run->su);
}

/* A warm-up round, checked; then `rounds` timed rounds, the order rotated by one each round. */
static int time_run(contract_run *run, int rounds, bool *match, char *why, size_t len, nd_error *err)
{
    int n = 3 + run->peers.n;
    int64_t elems = run->su.elems[run->su.n - 1];
    for (int v = 0; v < n; ++v)
        if (run_variant(run, v, err) < 0)
            return -1;
    *match = close_to(run->out[0], run->out[2], elems, why, len, "generic") &&
             close_to(run->out[1], run->out[2], elems, why, len, "specialized");
    for (int p = 0; p < run->peers.n && *match; ++p)
        *match = close_to(run->out[3 + p], run->out[2], elems, why, len, run->peers.p[p].name);
    for (run->rounds = 0; run->rounds < rounds; ++run->rounds)
        for (int i = 0; i < n; ++i) {
            int v = (i + run->rounds) % n;
            if ((run->t[v][run->rounds] = run_variant(run, v, err)) < 0)
                return -1;
        }
    return 0;
}

/* ---------------------------------------------------------------- the table */

static int cmp_seconds(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median of the rounds, and spread (max - min) / median. */
static double median_of(double *t, int n, double *spread)
{
    qsort(t, (size_t)n, sizeof *t, cmp_seconds);
    *spread = (t[n - 1] - t[0]) / t[n / 2];
    return t[n / 2];
}

/* One line per variant: median, GFLOP/s, spread; the peers' lines say what they ran, and the
 * specialized kernel's rate as a percentage of the best peer's closes the case. */
static void print_row(contract_run *run, const char *label, const char *mismatch)
{
    double med[NVARIANTS] = {0}, spread[NVARIANTS] = {0}, flops = nr_peers_flops(&run->peers), best = 0;
    int n = 3 + run->peers.n;
    printf("%s%s%s\n", label, mismatch[0] ? "  MISMATCH: " : "", mismatch);
    for (int v = 0; v < n; ++v) {
        med[v] = median_of(run->t[v], run->rounds, &spread[v]);
        if (v >= 3 && (best == 0 || med[v] < best))
            best = med[v];
        printf("  %-44s %9.2f ms %7.1f GFLOP/s  spread %3.0f%%\n", v < 3 ? variant_names[v] : run->peers.p[v - 3].name,
               med[v] * 1e3, flops / med[v] / 1e9, spread[v] * 100);
    }
    if (best > 0)
        printf("  specialized at %.0f%% of the best peer\n", best / med[1] * 100);
    else
        printf("  (no peer library does this contraction)\n");
}

static void print_header(int rounds, int threads)
{
    const nr_cpu *c = nr_machine_cpu();
    printf("machine: %s, %d CPUs, L1d %lld KiB, L2 %lld KiB, L3 %lld MiB (detected); %d threads, %d rounds\n",
           c->model, c->cpus, (long long)(c->l1d >> 10), (long long)(c->l2 >> 10), (long long)(c->l3 >> 20), threads,
           rounds);
    printf("kernels compiled for %s; peers: %s; OpenBLAS: %s\n", c->isa, nr_peer_libraries(), c->peer);
    printf("each variant: median time, GFLOP/s, spread (max - min) / median over the rounds\n\n");
}

/* ---------------------------------------------------------------- the command */

int nr_bench_contract_main(int argc, char **argv)
{
    nr_settings s;
    nd_error err;
    const char *filter = NULL;
    nr_settings_init(&s);
    s.min_repeats = 3;
    nr_case dummy = {.nflags = 1};
    for (int i = 2; i < argc; ++i) { /* argv[1] is --contractions */
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return fputs(contract_usage, stdout), 0;
        if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
            filter = argv[++i];
            continue;
        }
        if (nr_parse_common(argc, argv, &i, &dummy, &s, &err)) {
            fprintf(stderr, "ndrun bench --contractions: %s: not an option here; see --help\n", argv[i]);
            return 2;
        }
    }
    if (s.min_repeats > MAX_ROUNDS)
        s.min_repeats = MAX_ROUNDS;
    nd_kernels *k = NULL;
    if (nr_open_kernels(&s, &k, &err)) {
        fprintf(stderr, "ndrun bench --contractions: %s\n", err.msg);
        return 1;
    }
    bool all = true, header = false;
    int rc = 0;
    for (int i = 0; i < NCONTRACT && !rc; ++i) {
        if (filter && !strstr(contract_cases[i].label, filter))
            continue;
        contract_run run = {0};
        bool match = false;
        char why[256] = "";
        rc = open_run(k, &contract_cases[i], &s, &run, &err) || time_run(&run, s.min_repeats, &match, why, sizeof why,
                                                                           &err);
        if (!rc && !header)
            print_header(s.min_repeats, nd_device_threads(run.su.dev)), header = true;
        if (!rc)
            print_row(&run, contract_cases[i].label, why);
        else
            fprintf(stderr, "ndrun bench --contractions: %s: %s\n", contract_cases[i].label, err.msg);
        fflush(stdout);
        all = all && match;
        close_run(&run);
    }
    nd_kernels_close(k);
    return rc ? 1 : all ? 0 : 1;
}
