/* main.c - the ndrun command: compare generic and specialized kernels, one case or the bench suite. */
#include <stdio.h>
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
    "  tune      the fastest distribution of one op, or of a chain of ops (--chain), by a cost model and\n"
    "            measurement\n"
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
    if (strcmp(argv[1], "tune") == 0) {
        for (int i = 2; i < argc; ++i)
            if (strcmp(argv[i], "--chain") == 0)
                return nr_tune_chain_main(argc - 1, argv + 1);
        return nr_tune_main(argc - 1, argv + 1);
    }
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
