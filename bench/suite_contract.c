/*
 * suite_contract.c - ndrun bench --contractions: the contraction cases of issue 16 (matmul at 1024,
 * 2048 and 4096, bmm 8x512x512x512, scores 2,8,512,64,512, matvec 4096x4096), f32, each run four ways
 * side by side: the generic kernel, the specialized kernel, the plain reference and the OpenBLAS
 * peer doing the same contraction (sgemm per batch, with b transposed for scores; sgemv for matvec).
 * Every variant runs once per round from flushed caches, in an order rotated each round; the table
 * gives each variant's median and spread over the rounds, and the specialized kernel's rate as a
 * percentage of the peer's. A warm-up round's outputs are checked against the reference first.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ndrun.h"

#ifdef NDRUN_HAVE_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int num_threads);
#endif

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
enum { NCONTRACT = sizeof contract_cases / sizeof *contract_cases, NVARIANTS = 4, MAX_ROUNDS = 1000 };

static const char *const variant_names[NVARIANTS] = {"generic", "specialized", "reference", "OpenBLAS"};

static const char contract_usage[] =
    "usage: ndrun bench --contractions [--filter TEXT] [--repeats N] [--threads N] [--no-jit] [--cache-dir DIR]\n"
    "\n"
    "Runs the contraction cases (matmul 1024, 2048, 4096; bmm 8x512x512x512; scores 2,8,512,64,512;\n"
    "matvec 4096x4096; f32 on 2x1 cores) four ways side by side: generic kernel, specialized kernel, plain\n"
    "reference and the OpenBLAS peer (sgemm per batch, sgemv for matvec), each from flushed caches in an\n"
    "order rotated every round. Prints per case each variant's median time, GFLOP/s and spread ((max -\n"
    "min) / median over the rounds), and the specialized kernel's rate as a percentage of the peer's.\n"
    "The outputs of a warm-up round are checked against the reference (relative 1e-4 of the largest).\n"
    "Exit status: 0 when every case agrees, 1 when one does not or on error, 2 on a usage error.\n"
    "\n"
    "  --filter TEXT   only the cases whose label contains TEXT\n"
    "  --repeats N     timed rounds per case (default 3)\n";

/* ---------------------------------------------------------------- the peer */

/* The letters of operand k that are batch letters: in both inputs and the output. */
static bool is_batch(const nda_kernel_entry *e, char c)
{
    return strchr(e->indices[0], c) && strchr(e->indices[1], c) && strchr(e->indices[2], c);
}

/* The peer's view of the contraction: `batches` products of (m x k) by (k x n), b transposed when its
 * last letter is the reduced one (scores); n == 1 with no batch is a matrix-vector product. */
typedef struct peer_shape {
    int64_t batches, m, n, k;
    bool b_transposed, gemv;
} peer_shape;

static void peer_shape_of(const nr_setup *su, peer_shape *p)
{
    const nda_kernel_entry *e = su->entry;
    const char *a = e->indices[0], *b = e->indices[1], *out = e->indices[2];
    *p = (peer_shape){1, 1, 1, 1, false, false};
    for (int i = 0; a[i]; ++i) {
        int64_t d = su->dist[0].spec.shape[i];
        if (is_batch(e, a[i]))
            p->batches *= d;
        else if (strchr(out, a[i]))
            p->m *= d;
        else
            p->k *= d;
    }
    for (int i = 0; b[i]; ++i)
        if (!is_batch(e, b[i]) && strchr(out, b[i]))
            p->n *= su->dist[1].spec.shape[i];
    p->b_transposed = !strchr(out, b[strlen(b) - 1]) && strlen(b) > 1;
    p->gemv = strlen(b) == 1;
}

static void peer_run(const peer_shape *p, int threads, const float *a, const float *b, float *c)
{
#ifdef NDRUN_HAVE_OPENBLAS
    openblas_set_num_threads(threads);
    if (p->gemv) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)p->m, (int)p->k, 1.0f, a, (int)p->k, b, 1, 0.0f, c, 1);
        return;
    }
    for (int64_t i = 0; i < p->batches; ++i)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, p->b_transposed ? CblasTrans : CblasNoTrans, (int)p->m, (int)p->n,
                    (int)p->k, 1.0f, a + i * p->m * p->k, (int)p->k, b + i * p->k * p->n,
                    p->b_transposed ? (int)p->k : (int)p->n, 0.0f, c + i * p->m * p->n, (int)p->n);
#else
    (void)p, (void)threads, (void)a, (void)b, (void)c;
#endif
}

/* ---------------------------------------------------------------- one case */

typedef struct contract_run {
    nr_setup su;
    nd_kernel_pick pick[2]; /* generic, specialized */
    peer_shape peer;
    float *out[NVARIANTS];
    double *t[NVARIANTS];
    int rounds;
} contract_run;

/* Variant v once, from flushed caches; its seconds, its output in run->out[v]. */
static double run_variant(contract_run *run, int v, nd_error *err)
{
    nr_setup *su = &run->su;
    int o = su->n - 1;
    nd_launch_stats st;
    nr_flush_caches(su->dev, nr_bytes(su, 0) + nr_bytes(su, 1) + nr_bytes(su, o));
    double t0 = nr_now();
    if (v < 2) {
        if (nd_launch(su->dev, run->pick[v].fn, su->t, su->n, su->scalars, su->nscalars, &st, err) ||
            nd_tensor_read(su->t[o], run->out[v], nr_bytes(su, o), err))
            return -1;
        return st.seconds;
    }
    if (v == 2 && nr_reference(su->dev, su, run->out[2], err))
        return -1;
    if (v == 3)
        peer_run(&run->peer, nd_device_threads(su->dev), su->host[0], su->host[1], run->out[3]);
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
    peer_shape_of(su, &run->peer);
    for (int v = 0; v < NVARIANTS; ++v)
        if (!(run->out[v] = malloc((size_t)nr_bytes(su, su->n - 1))) || !(run->t[v] = malloc(MAX_ROUNDS * sizeof(double))))
            return nd_failc(err, ND_ENOMEM, "out of host memory");
    for (int v = 0; v < 2; ++v) /* picks the kernels (specializing on demand), and runs each once */
        if (nd_run(&(nd_launch_desc){.device = su->dev, .kernels = k, .op = su->entry->op, .tensors = su->t,
                                     .ntensors = su->n, .variant = v ? ND_VARIANT_SPECIALIZED : ND_VARIANT_GENERIC,
                                     .pick = &run->pick[v]}, err))
            return -1;
    return 0;
}

static void close_run(contract_run *run)
{
    for (int v = 0; v < NVARIANTS; ++v)
        free(run->out[v]), free(run->t[v]);
    nr_setup_close(&run->su);
}

/* A warm-up round, checked; then `rounds` timed rounds, the order rotated by one each round. */
static int time_run(contract_run *run, int rounds, bool peer, bool *match, char *why, size_t len, nd_error *err)
{
    int n = peer ? NVARIANTS : NVARIANTS - 1;
    int64_t elems = run->su.elems[run->su.n - 1];
    for (int v = 0; v < n; ++v)
        if (run_variant(run, v, err) < 0)
            return -1;
    *match = close_to(run->out[0], run->out[2], elems, why, len, "generic") &&
             close_to(run->out[1], run->out[2], elems, why, len, "specialized") &&
             (!peer || close_to(run->out[3], run->out[2], elems, why, len, "OpenBLAS"));
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

static double flops_of(const contract_run *run)
{
    const peer_shape *p = &run->peer;
    return 2.0 * (double)p->batches * (double)p->m * (double)p->n * (double)p->k;
}

static void print_row(const contract_run *run, const char *label, bool peer, const char *mismatch)
{
    double med[NVARIANTS] = {0}, spread[NVARIANTS] = {0}, flops = flops_of(run);
    printf("%-22s", label);
    for (int v = 0; v < NVARIANTS; ++v) {
        if (v == 3 && !peer) {
            printf(" %24s", "-");
            continue;
        }
        med[v] = median_of(run->t[v], run->rounds, &spread[v]);
        printf(" %9.2f ms %6.1f %4.0f%%", med[v] * 1e3, flops / med[v] / 1e9, spread[v] * 100);
    }
    if (peer)
        printf(" %6.0f%%", med[3] / med[1] * 100);
    printf("%s%s\n", mismatch[0] ? "  MISMATCH: " : "", mismatch);
}

static void print_header(int rounds, int threads)
{
    const nr_cpu *c = nr_machine_cpu();
    printf("machine: %s, %d CPUs, L1d %lld KiB, L2 %lld KiB, L3 %lld MiB (detected); %d threads, %d rounds\n",
           c->model, c->cpus, (long long)(c->l1d >> 10), (long long)(c->l2 >> 10), (long long)(c->l3 >> 20), threads,
           rounds);
    printf("peer: %s\n", c->peer);
    printf("each variant: median time, GFLOP/s, spread (max - min) / median over the rounds\n\n%-22s", "case");
    for (int v = 0; v < NVARIANTS; ++v)
        printf(" %24s", variant_names[v]);
    printf(" %7s\n", "of peer");
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
        bool match = false, peer = nr_have_openblas();
        char why[256] = "";
        rc = open_run(k, &contract_cases[i], &s, &run, &err) || time_run(&run, s.min_repeats, peer, &match, why,
                                                                           sizeof why, &err);
        if (!rc && !header)
            print_header(s.min_repeats, nd_device_threads(run.su.dev)), header = true;
        if (!rc)
            print_row(&run, contract_cases[i].label, peer, why);
        else
            fprintf(stderr, "ndrun bench --contractions: %s: %s\n", contract_cases[i].label, err.msg);
        fflush(stdout);
        all = all && match;
        close_run(&run);
    }
    nd_kernels_close(k);
    return rc ? 1 : all ? 0 : 1;
}
