/*
 * suite.c - ndrun bench: the bundled suite of cases over ops and distribution families, with a
 * progress line, a table, a JSON result file and an SVG chart.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ndrun.h"

typedef enum { SIZE_TINY, SIZE_QUICK, SIZE_FULL } suite_size;

/* A case as the options ndrun compare takes, at each suite size. The full size follows the issue's
 * targets: 64 MiB per operand for elementwise, matmul at 2048. */
typedef struct suite_case {
    const char *label, *family;
    const char *args[3]; /* tiny, quick, full */
} suite_case;

static const suite_case cases[] = {
    {"add", "aligned",
     {"--op add --shape 64,256 --shard 32,256 --grid 2x1", "--op add --shape 2048,2048 --shard 1024,2048 --grid 2x1",
      "--op add --shape 4096,4096 --shard 2048,4096 --grid 2x1"}}, /* 64 MiB per operand */
    {"add, 256-byte pages", "small pages",
     {"--op add --shape 64,256 --shard 32,256 --page 1,64 --grid 2x1",
      "--op add --shape 1024,1024 --shard 512,1024 --page 1,64 --grid 2x1",
      "--op add --shape 2048,2048 --shard 1024,2048 --page 1,64 --grid 2x1"}},
    {"add, 64-byte pages", "small pages",
     {"--op add --shape 64,256 --shard 32,256 --page 1,16 --grid 2x1",
      "--op add --shape 1024,1024 --shard 512,1024 --page 1,16 --grid 2x1",
      "--op add --shape 2048,2048 --shard 1024,2048 --page 1,16 --grid 2x1"}},
    {"add, 32-byte pages", "small pages",
     {"--op add --shape 64,256 --shard 32,256 --page 1,8 --grid 2x1",
      "--op add --shape 1024,1024 --shard 512,1024 --page 1,8 --grid 2x1",
      "--op add --shape 2048,2048 --shard 1024,2048 --page 1,8 --grid 2x1"}},
    {"add, a and b placed apart", "misaligned",
     {"--op add --shape 64,256 --shard 16,256 --grid 2x1 --operand b --shard 32,256 --strategy contiguous",
      "--op add --shape 2048,2048 --shard 256,2048 --grid 2x1 --operand b --shard 1024,2048 --strategy contiguous",
      "--op add --shape 4096,4096 --shard 512,4096 --grid 2x1 --operand b --shard 2048,4096 --strategy contiguous"}},
    {"relu, DRAM interleaved", "interleaved",
     {"--op relu --shape 64,256 --interleaved --buffer dram --banks 2",
      "--op relu --shape 2048,2048 --interleaved --buffer dram --banks 2",
      "--op relu --shape 4096,4096 --interleaved --buffer dram --banks 2"}},
    {"relu, 64-row pages", "large pages",
     {"--op relu --shape 128,256 --shard 64,256 --page 32,256 --grid 2x1",
      "--op relu --shape 2048,2048 --shard 1024,2048 --page 64,2048 --grid 2x1",
      "--op relu --shape 4096,4096 --shard 2048,4096 --page 64,4096 --grid 2x1"}},
    {"add, rank 3", "rank 3",
     {"--op add --shape 4,16,256 --shard 2,16,256 --grid 2x1", "--op add --shape 16,256,1024 --shard 8,256,1024 --grid 2x1",
      "--op add --shape 16,1024,1024 --shard 8,1024,1024 --grid 2x1"}},
    {"add, rank 4, block shards", "rank 4",
     {"--op add --shape 4,4,16,64 --shard 2,2,16,64 --grid 2x2", "--op add --shape 8,8,64,1024 --shard 4,8,32,1024 --grid 2x2",
      "--op add --shape 8,16,128,1024 --shard 4,16,64,1024 --grid 2x2"}},
    {"add, rank 5", "rank 5",
     {"--op add --shape 2,2,4,16,64 --shard 1,2,4,16,64 --grid 2x1",
      "--op add --shape 4,4,8,64,256 --shard 2,4,8,64,256 --grid 2x1",
      "--op add --shape 4,8,8,128,512 --shard 2,8,8,128,512 --grid 2x1"}},
    {"add, rank 6, uneven", "rank 6",
     {"--op add --shape 2,3,2,3,8,64 --shard 1,3,2,3,8,64 --grid 2x1",
      "--op add --shape 3,4,5,6,16,128 --shard 2,4,5,6,16,128 --grid 2x1",
      "--op add --shape 3,4,5,6,32,512 --shard 2,4,5,6,32,512 --grid 2x1"}},
    {"reduce_sum over rows", "aligned",
     {"--op reduce_sum --shape 64,256 --shard 32,256 --grid 2x1 --axes 1 --operand out --shard 32",
      "--op reduce_sum --shape 2048,2048 --shard 1024,2048 --grid 2x1 --axes 1 --operand out --shard 1024",
      "--op reduce_sum --shape 4096,4096 --shard 2048,4096 --grid 2x1 --axes 1 --operand out --shard 2048"}},
    {"reduce_sum over a leading axis", "reductions",
     {"--op reduce_sum --shape 64,256 --shard 32,256 --grid 2x1 --axes 0 --operand out --shard 128",
      "--op reduce_sum --shape 2048,2048 --shard 1024,2048 --grid 2x1 --axes 0 --operand out --shard 1024",
      "--op reduce_sum --shape 4096,4096 --shard 2048,4096 --grid 2x1 --axes 0 --operand out --shard 2048"}},
    {"reduce_max over rows", "reductions",
     {"--op reduce_max --shape 64,256 --shard 32,256 --grid 2x1 --axes 1 --operand out --shard 32",
      "--op reduce_max --shape 2048,2048 --shard 1024,2048 --grid 2x1 --axes 1 --operand out --shard 1024",
      "--op reduce_max --shape 4096,4096 --shard 2048,4096 --grid 2x1 --axes 1 --operand out --shard 2048"}},
    {"reduce_max over a leading axis", "reductions",
     {"--op reduce_max --shape 64,256 --shard 32,256 --grid 2x1 --axes 0 --operand out --shard 128",
      "--op reduce_max --shape 2048,2048 --shard 1024,2048 --grid 2x1 --axes 0 --operand out --shard 1024",
      "--op reduce_max --shape 4096,4096 --shard 2048,4096 --grid 2x1 --axes 0 --operand out --shard 2048"}},
    {"reduce_sum over every axis", "reductions",
     {"--op reduce_sum --shape 64,256 --shard 32,256 --grid 2x1 --axes 0,1 --operand out --shape 1,1 --shard 1,1",
      "--op reduce_sum --shape 2048,2048 --shard 1024,2048 --grid 2x1 --axes 0,1 --operand out --shape 1,1 --shard 1,1",
      "--op reduce_sum --shape 4096,4096 --shard 2048,4096 --grid 2x1 --axes 0,1 --operand out --shape 1,1 --shard 1,1"}},
    {"reduce_sum, rank 3, axes 0 and 2", "reductions",
     {"--op reduce_sum --shape 4,16,64 --shard 2,16,64 --grid 2x1 --axes 0,2 --operand out --shard 8",
      "--op reduce_sum --shape 16,512,512 --shard 8,512,512 --grid 2x1 --axes 0,2 --operand out --shard 256",
      "--op reduce_sum --shape 64,512,512 --shard 32,512,512 --grid 2x1 --axes 0,2 --operand out --shard 256"}},
    {"reduce_max over every axis", "reductions",
     {"--op reduce_max --shape 64,256 --shard 32,256 --grid 2x1 --axes 0,1 --operand out --shape 1,1 --shard 1,1",
      "--op reduce_max --shape 2048,2048 --shard 1024,2048 --grid 2x1 --axes 0,1 --operand out --shape 1,1 --shard 1,1",
      "--op reduce_max --shape 4096,4096 --shard 2048,4096 --grid 2x1 --axes 0,1 --operand out --shape 1,1 --shard 1,1"}},
    {"reduce_max, rank 3, axes 0 and 2", "reductions",
     {"--op reduce_max --shape 4,16,64 --shard 2,16,64 --grid 2x1 --axes 0,2 --operand out --shard 8",
      "--op reduce_max --shape 16,512,512 --shard 8,512,512 --grid 2x1 --axes 0,2 --operand out --shard 256",
      "--op reduce_max --shape 64,512,512 --shard 32,512,512 --grid 2x1 --axes 0,2 --operand out --shard 256"}},
    {"reduce_sum, rank 3, middle axis", "reductions",
     {"--op reduce_sum --shape 4,16,64 --shard 2,16,64 --grid 2x1 --axes 1 --operand out --shard 2,64",
      "--op reduce_sum --shape 16,512,512 --shard 8,512,512 --grid 2x1 --axes 1 --operand out --shard 8,512",
      "--op reduce_sum --shape 64,512,512 --shard 32,512,512 --grid 2x1 --axes 1 --operand out --shard 32,512"}},
    {"gelu", "math",
     {"--op gelu --shape 64,256 --shard 32,256 --grid 2x1", "--op gelu --shape 2048,2048 --shard 1024,2048 --grid 2x1",
      "--op gelu --shape 4096,4096 --shard 2048,4096 --grid 2x1"}},
    {"exp", "math",
     {"--op exp --shape 64,256 --shard 32,256 --grid 2x1", "--op exp --shape 2048,2048 --shard 1024,2048 --grid 2x1",
      "--op exp --shape 4096,4096 --shard 2048,4096 --grid 2x1"}},
    {"sigmoid", "math",
     {"--op sigmoid --shape 64,256 --shard 32,256 --grid 2x1",
      "--op sigmoid --shape 2048,2048 --shard 1024,2048 --grid 2x1",
      "--op sigmoid --shape 4096,4096 --shard 2048,4096 --grid 2x1"}},
    {"tanh", "math",
     {"--op tanh --shape 64,256 --shard 32,256 --grid 2x1", "--op tanh --shape 2048,2048 --shard 1024,2048 --grid 2x1",
      "--op tanh --shape 4096,4096 --shard 2048,4096 --grid 2x1"}},
    {"softmax", "math",
     {"--op softmax --shape 64,256 --shard 32,256 --grid 2x1",
      "--op softmax --shape 2048,2048 --shard 1024,2048 --grid 2x1",
      "--op softmax --shape 4096,4096 --shard 2048,4096 --grid 2x1"}},
    {"matmul", "aligned",
     {"--op matmul --shape 64,64,64 --shard 32,64 --grid 2x1",
      "--op matmul --shape 512,512,512 --shard 256,512 --grid 2x1",
      "--op matmul --shape 2048,2048,2048 --shard 1024,2048 --grid 2x1"}},
    {"permute, transpose", "aligned",
     {"--op permute --shape 64,128 --shard 32,128 --grid 2x1 --operand out --shard 64,32",
      "--op permute --shape 2048,2048 --shard 1024,2048 --grid 2x1",
      "--op permute --shape 4096,4096 --shard 2048,4096 --grid 2x1"}},
    {"permute 3-D, perm 2,0,1", "permutes",
     {"--op permute --shape 8,16,32 --shard 4,16,32 --grid 2x1 --perm 2,0,1 --operand out --shard 16,8,16",
      "--op permute --shape 128,128,128 --shard 64,128,128 --grid 2x1 --perm 2,0,1 --operand out --shard 64,128,128",
      "--op permute --shape 256,256,256 --shard 128,256,256 --grid 2x1 --perm 2,0,1 --operand out --shard 128,256,256"}},
    {"permute 3-D, perm 0,2,1", "permutes",
     {"--op permute --shape 8,16,32 --shard 4,16,32 --grid 2x1 --perm 0,2,1 --operand out --shard 4,32,16",
      "--op permute --shape 128,128,128 --shard 64,128,128 --grid 2x1 --perm 0,2,1",
      "--op permute --shape 256,256,256 --shard 128,256,256 --grid 2x1 --perm 0,2,1"}},
    {"bmm 8x512x512x512", "contractions",
     {"--op bmm --shape 2,16,32,16 --shard 1,16,32 --grid 2x1 --operand b --shard 1,32,16 --operand out --shard 1,16,16",
      "--op bmm --shape 4,256,256,256 --shard 2,256,256 --grid 2x1",
      "--op bmm --shape 8,512,512,512 --shard 4,512,512 --grid 2x1"}},
    {"scores bhqd,bhkd->bhqk", "contractions",
     {"--op scores --shape 1,2,16,8,16 --shard 1,1,16,8 --grid 2x1 --operand out --shard 1,1,16,16",
      "--op scores --shape 2,4,256,64,256 --shard 1,4,256,64 --grid 2x1 --operand out --shard 1,4,256,256",
      "--op scores --shape 2,8,512,64,512 --shard 1,8,512,64 --grid 2x1 --operand out --shard 1,8,512,512"}},
    {"reshard, rows to columns", "misaligned",
     {"--op reshard --shape 64,256 --shard 32,256 --grid 2x1 --operand out --shard 64,128",
      "--op reshard --shape 2048,2048 --shard 1024,2048 --grid 2x1 --operand out --shard 2048,1024",
      "--op reshard --shape 4096,4096 --shard 2048,4096 --grid 2x1 --operand out --shard 4096,2048"}},
    {"add on 2x1 cores", "cores 2x1",
     {"--op add --shape 64,256 --shard 32,256 --grid 2x1", "--op add --shape 4096,1024 --shard 2048,1024 --grid 2x1",
      "--op add --shape 4096,4096 --shard 2048,4096 --grid 2x1"}},
    {"add on 64x64 cores", "cores 64x64",
     {"--op add --shape 4096,256 --shard 1,256 --grid 64x64", "--op add --shape 4096,1024 --shard 1,1024 --grid 64x64",
      "--op add --shape 4096,4096 --shard 1,4096 --grid 64x64"}},
};
enum { NCASES = sizeof cases / sizeof *cases };

static const char bench_usage[] =
    "usage: ndrun bench [--quick | --tiny] [options]\n"
    "\n"
    "Runs the bundled suite: elementwise, vector math (gelu, exp, sigmoid, tanh, softmax), reductions over\n"
    "each axis set, contractions (matmul, bmm, scores), permutes and reshard over aligned, misaligned,\n"
    "interleaved, small-page and large-page distributions, ranks 2 to 6, and 2x1 against 64x64 cores.\n"
    "Each case is an ndrun compare: checked, then timed. Prints a table and writes a JSON result file\n"
    "and an SVG chart (per case: generic, specialized, plain-loop and best-peer bars as a percentage of\n"
    "the case's limit, measured in the same run). Kernels the bundled library lacks\n"
    "are specialized on demand and cached, so a second run starts at once.\n"
    "Exit status: 0 when every case agrees, 1 when one does not or on error, 2 on a usage error.\n"
    "\n"
    "Options:\n"
    "  --quick                 smaller cases, shorter timing: a few minutes on 2 cores\n"
    "  --tiny                  the smallest cases and one timed round: a check, for tests\n"
    "  --filter TEXT           only the cases whose label or family contains TEXT (none: a usage error)\n"
    "  --list                  list the cases with their ndrun compare options, and exit\n"
    "  --json-out FILE         the JSON result file (default ndrun-bench.json); it and --svg-out are\n"
    "                          written whole at the end, only over regular files (checked at the start)\n"
    "  --svg-out FILE          the SVG chart (default ndrun-bench.svg)\n"
    "  --threads N, --repeats N, --min-time S, --no-jit, --no-probes, --cache-dir DIR, --seed N,\n"
    "  --kernels FILE, --spec-dir DIR    as for ndrun compare\n";

/* Splits a case's options into words (no quoting needed: case options have no spaces) and parses them. */
static int case_from_text(const char *text, nr_case *c, char *store, size_t len, nd_error *err)
{
    char *argv[64];
    int argc = 0;
    nr_settings ignored;
    nr_settings_init(&ignored);
    snprintf(store, len, "%s", text);
    for (char *t = strtok(store, " "); t && argc < 64; t = strtok(NULL, " "))
        argv[argc++] = t;
    for (int i = 0; i < argc; ++i) {
        int rc = nr_parse_option(argc, argv, &i, c, &ignored, err);
        if (rc > 0)
            return nd_fail(err, "suite case '%s': %s is not an option", text, argv[i]);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Writes a result file whole or not at all. */
static void write_json(FILE *fp, const void *ctx)
{
    const nr_results *sr = ctx;
    fputs("{\n  \"tool\": \"ndrun bench\",\n  \"cases\": [\n", fp);
    for (int i = 0; i < sr->n; ++i) {
        fputs("    ", fp);
        nr_print_json(fp, &sr->r[i], "      ");
        fputs(i + 1 < sr->n ? ",\n" : "\n", fp);
    }
    fputs("  ]\n}\n", fp);
}

static void write_svg(FILE *fp, const void *ctx)
{
    const nr_results *sr = ctx;
    nr_chart_svg(fp, sr->r, sr->n);
}

typedef struct bench_opts {
    suite_size size;
    const char *filter, *json_out, *svg_out;
    bool list;
} bench_opts;

/* Whether c is still as a fresh case: bench takes settings only, never what to run. */
static bool untouched(const nr_case *c)
{
    nr_case fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.nflags = 1;
    return memcmp(c, &fresh, sizeof fresh) == 0;
}

static int parse_bench(int argc, char **argv, bench_opts *b, nr_settings *s, int *status)
{
    nr_case dummy;
    nd_error err;
    memset(&dummy, 0, sizeof dummy);
    dummy.nflags = 1;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        bool valued = !strcmp(a, "--filter") || !strcmp(a, "--json-out") || !strcmp(a, "--svg-out");
        if (valued && i + 1 >= argc) {
            fprintf(stderr, "ndrun bench: %s: needs a value\n", a);
            return *status = 2, -1;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(bench_usage, stdout);
            return *status = 0, -1;
        } else if (!strcmp(a, "--quick") || !strcmp(a, "--tiny")) {
            b->size = a[2] == 'q' ? SIZE_QUICK : SIZE_TINY;
        } else if (!strcmp(a, "--list")) {
            b->list = true;
        } else if (valued) {
            const char **slot = a[2] == 'f' ? &b->filter : a[2] == 'j' ? &b->json_out : &b->svg_out;
            *slot = argv[++i];
        } else {
            int at = i, rc = nr_parse_common(argc, argv, &i, &dummy, s, &err);
            if (rc == 0 && untouched(&dummy))
                continue;
            fprintf(stderr, rc < 0 ? "ndrun bench: %s\n" : "ndrun bench: %s: not an option of bench; see ndrun bench --help\n",
                    rc < 0 ? err.msg : argv[at]);
            return *status = 2, -1;
        }
    }
    return 0;
}

static bool selected(const suite_case *sc, const char *filter)
{
    return !filter || strstr(sc->label, filter) || strstr(sc->family, filter);
}

static void progress(int i, int n, const char *label, bool tty)
{
    fprintf(stderr, tty ? "\r\033[K[%d/%d] %s" : "[%d/%d] %s\n", i + 1, n, label);
    fflush(stderr);
}

/* Runs the selected cases; *count receives how many ran. */
static int run_cases(nd_kernels *k, const bench_opts *b, const nr_settings *s, nr_result *res, int *count,
                     nd_error *err)
{
    int total = 0, n = 0;
    bool tty = isatty(2);
    char store[1024];
    for (int i = 0; i < NCASES; ++i)
        total += selected(&cases[i], b->filter);
    for (int i = 0; i < NCASES; ++i) {
        if (!selected(&cases[i], b->filter))
            continue;
        nr_case c = {.nflags = 1, .family = cases[i].family};
        snprintf(c.label, sizeof c.label, "%s", cases[i].label);
        progress(n, total, cases[i].label, tty);
        if (case_from_text(cases[i].args[b->size], &c, store, sizeof store, err) ||
            nr_compare(k, &c, s, &res[n], err)) {
            if (tty)
                fputc('\n', stderr);
            nd_error why = *err; /* the message is formatted into err: not from it */
            return nd_failc(err, why.code, "case '%s' (%s): %.400s", cases[i].label, cases[i].args[b->size], why.msg);
        }
        ++n;
    }
    if (tty)
        fprintf(stderr, "\r\033[K");
    *count = n;
    return 0;
}

int nr_bench_main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--contractions")) return nr_bench_contract_main(argc, argv); /* suite_contract.c */
    if (argc > 1 && !strcmp(argv[1], "--processes")) return nr_bench_procs_main(argc, argv); /* suite_procs.c */
    bench_opts b = {.size = SIZE_FULL, .json_out = "ndrun-bench.json", .svg_out = "ndrun-bench.svg"};
    nr_settings s;
    nd_error err;
    int status = 0, n = 0;
    nr_settings_init(&s);
    if (parse_bench(argc, argv, &b, &s, &status))
        return status;
    int chosen = 0;
    for (int i = 0; i < NCASES; ++i)
        chosen += selected(&cases[i], b.filter);
    if (chosen == 0) { /* rather than an empty report over the last one */
        fprintf(stderr, "ndrun bench: --filter '%s' matches no case's label or family; --list shows them\n", b.filter);
        return 2;
    }
    if (b.list) {
        for (int i = 0; i < NCASES; ++i)
            if (selected(&cases[i], b.filter))
                printf("%-30s %-12s %s\n", cases[i].label, cases[i].family, cases[i].args[b.size]);
        return 0;
    }
    if (b.size != SIZE_FULL) { /* unless given: short timing */
        bool timed = false;
        for (int i = 1; i < argc; ++i)
            timed = timed || !strcmp(argv[i], "--min-time") || !strcmp(argv[i], "--repeats");
        if (!timed) { /* quick: at least the 8 rounds a 95% interval needs, and time to tighten it */
            s.min_seconds = b.size == SIZE_QUICK ? 0.1 : 0;
            s.min_repeats = b.size == SIZE_QUICK ? 8 : 1;
        }
    }
    nd_kernels *k = NULL;
    ndf_output files[2] = {{0}};
    const bool writer = nr_procs_rank() == 0; /* under mpirun, rank 0 alone writes */
    const char *paths[] = {b.json_out, b.svg_out}, *what[] = {"--json-out", "--svg-out"};
    int rc = writer && nr_outputs_open(files, paths, what, 2, &err);
    nr_result *res = rc ? NULL : calloc(NCASES, sizeof *res);
    rc = rc || (!res ? nd_failc(&err, ND_ENOMEM, "out of memory") : nr_open_kernels(&s, &k, &err));
    double t0 = nr_now();
    rc = rc || run_cases(k, &b, &s, res, &n, &err);
    if (!rc && writer)
        rc = nr_write_file(&files[0], write_json, &(nr_results){res, n}, &err) ||
             nr_write_file(&files[1], write_svg, &(nr_results){res, n}, &err);
    for (int i = 0; i < 2; ++i) /* what was not committed (a failure): the old files stay */
        ndf_abort(&files[i]);
    if (rc) {
        fprintf(stderr, "ndrun bench: %s\n", err.msg);
    } else {
        nr_print_suite_table(stdout, res, n);
        printf("\n%d cases in %.1f s on %d threads; results in %s, chart in %s\n", n, nr_now() - t0, s.threads,
               b.json_out, b.svg_out);
    }
    bool all = true;
    for (int i = 0; i < n; ++i)
        all = all && res[i].match;
    nd_kernels_close(k);
    free(res);
    return rc ? 1 : all ? 0 : 1;
}
