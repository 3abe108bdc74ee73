/* main.c - the ndrun command: compare generic and specialized kernels, one case or the bench suite. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gen/exe_dir.h"
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
    "  tune      the fastest distribution of one op, by a cost model and measurement\n"
    "\n"
    "Run 'ndrun <command> --help' for a command's options. 'ndrun --version' prints the version.\n";

static const char compare_usage[] =
    "usage: ndrun compare --op NAME --shape D0,.. (--shard D0,.. | --interleaved) --grid XxY [options]\n"
    "\n"
    "Runs one op three ways on the same random inputs: the generic kernel, the kernel specialized for\n"
    "these distributions (prebuilt, or generated and compiled on demand and cached), and a plain loop\n"
    "over contiguous arrays on the same threads; and beside them every peer library built in that does\n"
    "the op (OpenBLAS, BLIS, oneDNN, LIBXSMM) on the same data held densely. Checks that all agree with\n"
    "the op's reference, then times them in interleaved rounds with the probes of the case's access\n"
    "pattern; the limit is the best rate of the probes, the plain loop and the peers. A percentage is\n"
    "printed only when the medians' 95% intervals are within 5% (else \"noisy, rerun\").\n"
    "Exit status: 0 when all agree, 1 when they do not or on error, 2 on a usage error.\n"
    "Under mpirun -np R (an ndrun built with MPI): the same comparison on a device whose cores are divided\n"
    "among the R processes; rank 0 prints, adding each process's cores and the bytes its cores read.\n"
    "\n";

static const char kernels_help[] =
    "\nKernels:\n"
    "  --kernels FILE          load this kernel library instead of the bundled one; repeat for more. Any\n"
    "                          library ndgen built works: generic and specialized kernels are compared\n"
    "                          always, and against the op's plain reference when its spec gives one\n"
    "  --spec-dir DIR          a folder the JIT looks in first for a library's specs, before where the\n"
    "                          library records them; repeat for more ($NDGEN_SPEC_PATH: more, ':'-separated)\n"
    "  --template-dir DIR      a template folder for the JIT, searched before the library's own; repeat\n"
    "                          ($NDGEN_TEMPLATE_PATH: more, ':'-separated). Every template folder is on the\n"
    "                          compiler's include path\n"
    "  --fixed SET             the most the specialized kernel may fix, so that a partial kernel is compared:\n"
    "                          all (default: exact first), pattern (all but the shape), shard (all but the\n"
    "                          shape and the grid). The first loaded kernel of that set, else of the sets\n"
    "                          fixing less, that serves the case runs; else the JIT builds one of SET,\n"
    "                          cached by its fixed parameters. The report names the set it fixed\n";

/* Appends the ':'-separated folders of text to list (a ':'-separated string of len bytes). */
static int add_dirs(char *list, size_t len, const char *text, const char *what, nd_error *err)
{
    size_t n = strlen(list);
    if (!text || !*text)
        return 0;
    if (n + strlen(text) + 2 > len)
        return nd_fail(err, "%s: the spec folders are longer than %zu bytes altogether", what, len - 1);
    snprintf(list + n, len - n, "%s%s", n ? ":" : "", text);
    return 0;
}

/* ndrun's own files, beside its executable as the install lays them out (NDGEN_REL_*: bin/ndgen,
 * ../lib/libndgen_ops.so, ...), so an installed ndrun needs neither the build nor the source tree. */
typedef struct own_files {
    char ops[PATH_MAX + 64], ndgen[PATH_MAX + 64], specs[PATH_MAX + 64], templates[PATH_MAX + 64],
        include[PATH_MAX + 64], ldflags[PATH_MAX + 256];
} own_files;

static int find_own_files(own_files *f, nd_error *err)
{
    char dist[PATH_MAX + 64];
    if (nd_exe_relative(f->ops, sizeof f->ops, NDGEN_REL_OPS) ||
        nd_exe_relative(f->ndgen, sizeof f->ndgen, "ndgen") ||
        nd_exe_relative(f->specs, sizeof f->specs, NDGEN_REL_SPECS) ||
        nd_exe_relative(f->templates, sizeof f->templates, NDGEN_REL_TEMPLATES) ||
        nd_exe_relative(f->include, sizeof f->include, NDGEN_REL_INCLUDE) ||
        nd_exe_relative(dist, sizeof dist, NDGEN_REL_ND_DIST))
        return nd_fail(err, "ndrun: finding its own files: %s", f->ops);
    snprintf(f->ldflags, sizeof f->ldflags, "%s%s%s", dist, NDRUN_KERNEL_LDFLAGS[0] ? " " : "", NDRUN_KERNEL_LDFLAGS);
    return 0;
}

int nr_open_kernels(const nr_settings *s, nd_kernels **out, nd_error *err)
{
    nr_watchdog_set(s->watchdog); /* every command opens its kernels before it launches one */
    nd_kernels *k;
    own_files *own = calloc(1, sizeof *own);
    if (!own)
        return nd_failc(err, ND_ENOMEM, "ndrun: out of memory");
    if (find_own_files(own, err) || nd_kernels_open(&k, err)) {
        free(own);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < s->nkernels && !rc; ++i)
        rc = nd_kernels_load(k, s->kernels[i], err);
    if (!rc && s->nkernels == 0 && (rc = nd_kernels_load(k, own->ops, err)) && err->code == ND_ENOENT)
        snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                 " (the bundled kernel library, looked for beside ndrun; give one with --kernels FILE)");
    if (!rc && s->jit && access(own->ndgen, X_OK) != 0)
        rc = nd_fail(err, "ndrun: on-demand specialization runs ndgen, looked for beside ndrun as %s: %s; install "
                          "them together, or give --no-jit", own->ndgen, strerror(errno));
    if (!rc && !s->jit && strcmp(s->fixed, "all") != 0 && s->nkernels == 0)
        rc = nd_fail(err, "--fixed %s with --no-jit: the bundled library has no partial kernels; give a library "
                          "that has (--kernels FILE), or let the JIT build one", s->fixed);
    if (!rc && s->jit) {
        nd_jit_config cfg;
        nd_jit_config_init(&cfg);
        cfg.cache_dir = s->cache_dir;
        cfg.ndgen = own->ndgen;
        char specs[sizeof s->spec_dirs], env[4096];
        snprintf(specs, sizeof specs, "%s", s->spec_dirs);
        rc = add_dirs(specs, sizeof specs, getenv("NDGEN_SPEC_PATH"), "NDGEN_SPEC_PATH", err) ||
             add_dirs(specs, sizeof specs, s->nkernels ? NULL : own->specs, "the bundled specs", err);
        cfg.spec_dir = specs;
        cfg.ntemplate_dirs = 0;
        for (int i = 0; i < s->ntemplate_dirs; ++i)
            cfg.template_dirs[cfg.ntemplate_dirs++] = s->template_dirs[i];
        snprintf(env, sizeof env, "%s", getenv("NDGEN_TEMPLATE_PATH") ? getenv("NDGEN_TEMPLATE_PATH") : "");
        char *save = NULL;
        for (char *d = strtok_r(env, ":", &save); d && !rc; d = strtok_r(NULL, ":", &save))
            rc = cfg.ntemplate_dirs == ND_JIT_MAX_TEMPLATE_DIRS - 1
                     ? nd_fail(err, "NDGEN_TEMPLATE_PATH: at most %d template folders with --template-dir",
                               ND_JIT_MAX_TEMPLATE_DIRS - 1)
                     : (cfg.template_dirs[cfg.ntemplate_dirs++] = d, 0);
        if (!s->nkernels) /* the bundled library's; another records its own */
            cfg.template_dirs[cfg.ntemplate_dirs++] = own->templates;
        cfg.include_dir = own->include;
        cfg.cflags = NDRUN_KERNEL_CFLAGS;
        cfg.ldflags = own->ldflags;
        rc = rc ? rc : nd_kernels_set_jit(k, &cfg, err);
    }
    rc = rc ? rc : nd_kernels_set_fixed(k, s->fixed, err);
    free(own);
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
    if (strcmp(arg, "--kernels") == 0 || strcmp(arg, "--spec-dir") == 0 || strcmp(arg, "--template-dir") == 0) {
        if (*i + 1 >= argc)
            return nd_fail(err, "%s: needs a value", arg);
        if (arg[2] != 'k' && strchr(argv[*i + 1], ':'))
            return nd_fail(err, "%s %s: a folder name with ':' cannot be searched", arg, argv[*i + 1]);
        if (arg[2] == 's') {
            return add_dirs(s->spec_dirs, sizeof s->spec_dirs, argv[++*i], "--spec-dir", err);
        } else if (arg[2] == 't') {
            if (s->ntemplate_dirs == ND_JIT_MAX_TEMPLATE_DIRS / 2)
                return nd_fail(err, "--template-dir: at most %d", ND_JIT_MAX_TEMPLATE_DIRS / 2);
            s->template_dirs[s->ntemplate_dirs++] = argv[++*i];
        } else if (s->nkernels == NR_MAX_LIBRARIES) {
            return nd_fail(err, "--kernels: at most %d libraries", NR_MAX_LIBRARIES);
        } else {
            s->kernels[s->nkernels++] = argv[++*i];
        }
        return 0;
    }
    return nr_parse_option(argc, argv, i, c, s, err);
}

/* The report (report.c) with what was checked against what said plainly: JSON gains
 * "reference_checked" and "reference_name" after "match"; the table's results line names the reference, or
 * says that none was checked and drops the reference row. */
static void print_result(const nr_result *r, bool json)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) { /* no memory for the rewrite: the report as it is */
        json ? nr_print_json(stdout, r, "  ") : nr_print_table(stdout, r);
        fputs(json ? "\n" : "", stdout);
        return;
    }
    json ? nr_print_json(mem, r, "  ") : nr_print_table(mem, r);
    fclose(mem);
    char none[160];
    snprintf(none, sizeof none, "op '%s' has no plain reference (its spec gives no reference = ...)", r->op);
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        next = next ? next + 1 : NULL;
        int n = next ? (int)(next - line) : (int)strlen(line);
        if (json && strncmp(line, "  \"specialized_symbol\":", 23) == 0) {
            printf("%.*s  \"specialized_fixed\": \"%s\",\n", n, line, r->specialized_fixed);
        } else if (!json && strncmp(line, "kernels: ", 9) == 0) {
            int set = ndreg_fixed_parse(r->specialized_fixed);
            printf("%.*sfixed: the specialized kernel fixes %s%s%s%s\n", n, line, set < 0 ? "nothing (the generic "
                   "kernel stood in)" : "\"", set < 0 ? "" : r->specialized_fixed, set < 0 ? "" : "\": ",
                   set < 0 ? "" : ndreg_fixed_what(set));
        } else if (json && strncmp(line, "  \"match\":", 10) == 0) {
            nr_print_procs_json(stdout, r, "  ");
            printf("%.*s  \"reference_checked\": %s,\n  \"reference_name\": ", n, line, r->has_reference ? "true" : "false");
            printf(r->has_reference ? "\"%s\",\n" : "null,\n  \"reference_note\": \"%s\",\n",
                   r->has_reference ? r->reference_name : none);
        } else if (!json && strncmp(line, "results: ", 9) == 0) {
            if (!r->match)
                printf("%.*s", n, line);
            else if (r->has_reference)
                printf("results: all three agree: generic and specialized bit for bit, and the reference (%s); "
                       "largest difference from it %.3g\n", r->reference_name, r->max_error);
            else
                printf("results: generic and specialized agree bit for bit; NO REFERENCE CHECKED: %s\n", none);
        } else if (!(!json && !r->has_reference && strncmp(line, "  reference ", 12) == 0)) {
            printf("%.*s", n, line);
        }
    }
    if (!json)
        nr_print_procs(stdout, r);
    fputs(json ? "\n" : "", stdout);
    free(text);
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
        if (strncmp(argv[i], "--fixed", 7) == 0 && (argv[i][7] == '\0' || argv[i][7] == '=')) {
            const char *v = argv[i][7] ? argv[i] + 8 : i + 1 < argc ? argv[++i] : NULL;
            if (!v || ndreg_fixed_parse(v) < 0) {
                fprintf(stderr, "ndrun compare: --fixed %s: expected all, pattern or shard (docs/partial.md)\n",
                        v ? v : "needs a value;");
                return 2;
            }
            s.fixed = v;
            continue;
        }
        int rc = nr_parse_common(argc, argv, &i, &c, &s, &err);
        if (rc) {
            if (rc > 0) {
                nr_near near = {"", 0};
                nr_nearest_option(argv[i], compare_usage, &near);
                nr_nearest_option(argv[i], nr_options_help, &near);
                nr_nearest_option(argv[i], nd_dist_flags_help, &near);
                nr_nearest_option(argv[i], kernels_help, &near);
                fprintf(stderr, "ndrun compare: %s: unknown option%s%s%s; see ndrun compare --help\n", argv[i],
                        near.name[0] ? " (did you mean --" : "", near.name, near.name[0] ? "?)" : "");
            }
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
    print_result(&r, s.json);
    return r.match ? 0 : 1;
}

static int run_command(int argc, char **argv)
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
    if (strcmp(argv[1], "tune") == 0)
        return nr_tune_main(argc - 1, argv + 1);
    fprintf(stderr, "ndrun: %s: unknown command; see ndrun --help\n", argv[1]);
    return 2;
}

int main(int argc, char **argv)
{
    nd_error err;
    if (nr_procs_init(&argc, &argv, &err)) {
        fprintf(stderr, "ndrun: %s\n", err.msg);
        return 2;
    }
    int rc = run_command(argc, argv);
    nr_procs_finish();
    return rc;
}
