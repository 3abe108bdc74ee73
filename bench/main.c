/* main.c - the ndrun command: compare generic and specialized kernels, one case or the bench suite. */
#include <stdlib.h>
#include <string.h>

#include "ndrun.h"

static const char usage[] =
    "usage: ndrun <command> [options]\n"
    "\n"
    "ndrun measures what specialization buys: it runs an op's generic kernel, its specialized kernel\n"
    "and a plain reference loop on the same inputs, checks that they agree, and times them beside what\n"
    "the machine can do, measured in the same run.\n"
    "\n"
    "Commands:\n"
    "  compare   one op on one set of distributions: a table, or JSON with --json\n"
    "  bench     the bundled suite: a table, a JSON result file and an SVG chart\n"
    "\n"
    "Run 'ndrun <command> --help' for a command's options. 'ndrun --version' prints the version.\n";

static const char compare_usage[] =
    "usage: ndrun compare --op NAME --shape D0,.. (--shard D0,.. | --interleaved) --grid XxY [options]\n"
    "\n"
    "Runs one op three ways on the same random inputs: the generic kernel, the kernel specialized for\n"
    "these distributions (prebuilt, or generated and compiled on demand and cached), and a plain loop\n"
    "over contiguous arrays on the same threads. Checks that the three agree, then times them in\n"
    "interleaved rounds, beside STREAM-style copy and add bandwidth and the f32 multiply-add peak\n"
    "measured in the same run (and OpenBLAS sgemm for an f32 matmul, when built with it).\n"
    "Exit status: 0 when all agree, 1 when they do not or on error, 2 on a usage error.\n"
    "\n";

static const char kernels_help[] =
    "\nKernels:\n"
    "  --kernels FILE          load this kernel library instead of the bundled one; repeat for more\n"
    "  --spec-dir DIR          where the JIT finds the specs of loaded kernels (default: the bundled specs)\n";

int nr_open_kernels(const nr_settings *s, nd_kernels **out, nd_error *err)
{
    nd_kernels *k;
    if (nd_kernels_open(&k, err))
        return -1;
    int rc = 0;
    for (int i = 0; i < s->nkernels && !rc; ++i)
        rc = nd_kernels_load(k, s->kernels[i], err);
    if (!rc && s->nkernels == 0)
        rc = nd_kernels_load(k, NDRUN_KERNEL_LIBRARY, err);
    if (!rc && s->jit) {
        nd_jit_config cfg;
        nd_jit_config_init(&cfg);
        cfg.cache_dir = s->cache_dir;
        cfg.ndgen = NDRUN_NDGEN;
        cfg.spec_dir = s->spec_dir ? s->spec_dir : NDRUN_SPEC_DIR;
        cfg.ntemplate_dirs = 1;
        cfg.template_dirs[0] = NDRUN_TEMPLATE_DIR;
        cfg.include_dir = NDRUN_INCLUDE_DIR;
        cfg.cflags = NDRUN_KERNEL_CFLAGS;
        cfg.ldflags = NDRUN_KERNEL_LDFLAGS;
        rc = nd_kernels_set_jit(k, &cfg, err);
    }
    if (rc) {
        nd_kernels_close(k);
        return -1;
    }
    *out = k;
    return 0;
}

/* The options every command takes besides those of options.c; 1 when not one of them. */
int nr_parse_common(int argc, char **argv, int *i, nr_case *c, nr_settings *s, nd_error *err)
{
    const char *arg = argv[*i];
    if (strcmp(arg, "--kernels") == 0 || strcmp(arg, "--spec-dir") == 0) {
        if (*i + 1 >= argc)
            return nd_fail(err, "%s: needs a value", arg);
        if (arg[2] == 's') {
            s->spec_dir = argv[++*i];
        } else if (s->nkernels == NR_MAX_LIBRARIES) {
            return nd_fail(err, "--kernels: at most %d libraries", NR_MAX_LIBRARIES);
        } else {
            s->kernels[s->nkernels++] = argv[++*i];
        }
        return 0;
    }
    return nr_parse_option(argc, argv, i, c, s, err);
}

int nr_compare_main(int argc, char **argv)
{
    nr_case c = {.nflags = 1};
    nr_settings s;
    nd_error err;
    nr_settings_init(&s);
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("%s%s\n%s%s", compare_usage, nr_options_help, nd_dist_flags_help, kernels_help);
            return 0;
        }
        int rc = nr_parse_common(argc, argv, &i, &c, &s, &err);
        if (rc) {
            if (rc > 0)
                fprintf(stderr, "ndrun compare: %s: unknown option; see ndrun compare --help\n", argv[i]);
            else
                fprintf(stderr, "ndrun compare: %s\n", err.msg);
            return 2;
        }
    }
    nd_kernels *k = NULL;
    nr_result r;
    int rc = nr_open_kernels(&s, &k, &err) || nr_compare(k, &c, &s, &r, &err);
    nd_kernels_close(k);
    if (rc) {
        fprintf(stderr, "ndrun compare: %s\n", err.msg);
        return 1;
    }
    if (s.json) {
        nr_print_json(stdout, &r, "  ");
        fputc('\n', stdout);
    } else {
        nr_print_table(stdout, &r);
    }
    return r.match ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("ndrun %s\n", NDGEN_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "compare") == 0)
        return nr_compare_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "bench") == 0)
        return nr_bench_main(argc - 1, argv + 1);
    fprintf(stderr, "ndrun: %s: unknown command; see ndrun --help\n", argv[1]);
    return 2;
}
