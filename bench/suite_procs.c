/*
 * suite_procs.c - ndrun bench --processes: the multi-process family. Nine cases on one grid of 8
 * cores, f32, chosen for the traffic between cores they make: add (each core reads only its own
 * rows), softmax over rows (the same), reshard of rows to columns (every core reads from every
 * other), matmul (each core reads all of b), matmul into a pending sum (core q contracts slice q of k,
 * reading every row page of a and its own rows of b, and writes part q of the output), the direct all_reduce of a Partial(sum) of 8 parts (each
 * core reads the 7 other parts), the reduce_scatter of the same onto rows (its rows of every part),
 * a transpose (a slab of every core's rows) and a reduction over the leading axis (its columns of
 * every row). Under `mpirun -np R` (R dividing 8) the cores are divided
 * among the R processes; NDGEN_MPI_NODE_SIZE=k makes nodes of k processes, whose pages on other
 * nodes are fetched with MPI_Get before each launch. Without a launcher it is one process, the
 * baseline of the same table.
 *
 * Each case is ndrun compare without the machine probes: checked (generic and specialized bit for
 * bit, and against the op's reference), then timed, a launch's time including its fences and its
 * gets. No limit is reported: R processes sharing one machine's cores measure the launch protocol,
 * not a machine's bandwidth. Rank 0 prints and writes the JSON.
 */
#include <stdlib.h>
#include <string.h>

#include "ndrun.h"

typedef struct procs_case {
    const char *label;
    const char *args[24];
} procs_case;

static const procs_case procs_cases[] = {
    {"add, own rows", {"--op", "add", "--shape", "2048,1024", "--shard", "256,1024", "--grid", "4x2"}},
    {"softmax, own rows", {"--op", "softmax", "--shape", "2048,1024", "--shard", "256,1024", "--grid", "4x2"}},
    {"reshard rows to columns",
     {"--op", "reshard", "--shape", "2048,1024", "--shard", "256,1024", "--grid", "4x2", "--operand", "out",
      "--shard", "2048,128"}},
    {"matmul 512, b whole", {"--op", "matmul", "--shape", "512,512,512", "--shard", "64,512", "--grid", "4x2"}},
    {"matmul 512, pending sum",
     {"--op", "matmul", "--shape", "512,512,512", "--grid", "4x2", "--operand", "a", "--shard", "64,512", "--operand",
      "b", "--einshard", "k j -> k* j", "--operand", "out", "--placements", "[Partial(sum)]", "--mesh", "8"}},
    {"all_reduce, 8 parts",
     {"--op", "all_reduce", "--shape", "256,1024", "--grid", "4x2", "--operand", "in", "--placements",
      "[Partial(sum)]", "--mesh", "8", "--operand", "out", "--einshard", "... -> * ..."}},
    {"reduce_scatter, 8 parts",
     {"--op", "reduce_scatter", "--shape", "256,1024", "--grid", "4x2", "--operand", "in", "--placements",
      "[Partial(sum)]", "--mesh", "8", "--operand", "out", "--shard", "32,1024"}},
    {"transpose 1024", {"--op", "permute", "--shape", "1024,1024", "--shard", "128,1024", "--grid", "4x2"}},
    {"reduce_sum over columns",
     {"--op", "reduce_sum", "--shape", "2048,1024", "--shard", "256,1024", "--grid", "4x2", "--axes", "0",
      "--operand", "out", "--shard", "128"}},
};
enum { NPROCS_CASES = sizeof procs_cases / sizeof *procs_cases };

static const char procs_usage[] =
    "usage: [mpirun -np R] ndrun bench --processes [--filter TEXT] [--json-out FILE] [options]\n"
    "\n"
    "The multi-process family: add and softmax (each core reads its own rows), reshard of rows to\n"
    "columns (every core reads from every other), matmul 512 (each core reads all of b, or into a\n"
    "pending sum, each core its slice of k: every row of a and its own rows of b), the direct\n"
    "all_reduce of a Partial(sum) of 8 parts and its reduce_scatter onto rows, a transpose and a\n"
    "reduce_sum over the leading axis, f32 on 8 cores (4x2). Under mpirun -np R (R dividing 8) the\n"
    "cores are divided among the R processes; NDGEN_MPI_NODE_SIZE=k groups them into nodes of k processes,\n"
    "whose pages on other nodes are fetched with MPI_Get before each launch. Without a launcher: one\n"
    "process, the baseline. Each case is checked (generic and specialized bit for bit, and against the\n"
    "reference), then timed; a launch's time includes its fences and gets. Prints per case each kernel's\n"
    "median time per launch and spread ((max - min) / median), the bytes of other processes' pages the\n"
    "specialized launch reads (in all, and the busiest process's) and of those the bytes fetched from\n"
    "other nodes with the number of gets; the JSON has every process's counts. No machine limits or peer: processes\n"
    "sharing one machine's cores measure the launch protocol, not the machine.\n"
    "Exit status: 0 when every case agrees, 1 when one does not or on error, 2 on a usage error.\n"
    "\n"
    "  --filter TEXT    only the cases whose label contains TEXT (none: a usage error)\n"
    "  --json-out FILE  the JSON result file (default ndrun-bench-processes.json)\n"
    "  --threads N, --repeats N, --min-time S, --no-jit, --cache-dir DIR, --seed N    as for ndrun compare\n";

/* The bytes a launch's processes need from other processes' pages (the read set the runtime plans: in
 * their node's other processes, and fetched from other nodes): in all, and the busiest process's. */
static void other_process_bytes(const nr_result *r, int64_t *all, int64_t *busiest)
{
    *all = *busiest = 0;
    for (int i = 0; i < r->processes && r->processes > 1; ++i) {
        int64_t b = r->procs[i].node_bytes + r->procs[i].fetched_bytes;
        *all += b;
        *busiest = b > *busiest ? b : *busiest;
    }
}

static void print_header(const nr_result *r)
{
    const nr_cpu *c = nr_machine_cpu();
    printf("machine: %s, %d CPUs (detected); %d process%s on %d node%s, %d thread%s each\n", c->model, c->cpus,
           r->processes, r->processes == 1 ? "" : "es", r->nodes, r->nodes == 1 ? "" : "s", r->threads,
           r->threads == 1 ? "" : "s");
    printf("per launch: median time and spread over the rounds, fences and gets included; the bytes of other\n"
           "processes' pages the specialized launch reads (in all / the busiest process), and of those the bytes\n"
           "fetched from other nodes and in how many gets\n\n");
    printf("%-24s %20s %20s %22s %20s\n", "case", "generic", "specialized", "other processes", "fetched (gets)");
}

static void print_row(const nr_result *r)
{
    int64_t all, busiest, fetched = 0, gets = 0;
    other_process_bytes(r, &all, &busiest);
    for (int i = 0; i < r->processes && r->processes > 1; ++i)
        fetched += r->procs[i].fetched_bytes, gets += r->procs[i].gets;
    char other[48], got[48];
    snprintf(other, sizeof other, "%lld / %lld", (long long)all, (long long)busiest);
    snprintf(got, sizeof got, "%lld (%lld)", (long long)fetched, (long long)gets);
    printf("%-24s %10.3f ms %5.0f%% %10.3f ms %5.0f%% %22s %20s%s%s\n", r->label, r->generic.median * 1e3,
           (r->generic.max - r->generic.min) / r->generic.median * 100, r->specialized.median * 1e3,
           (r->specialized.max - r->specialized.min) / r->specialized.median * 100, other, got,
           r->match ? "" : "  MISMATCH: ", r->match ? "" : r->mismatch);
}

/* The results as JSON: the job, then per case the processes' counts and ndrun compare's result. */
static void write_json(FILE *fp, const void *ctx)
{
    const nr_results *pr = ctx;
    const nr_result *r = pr->r;
    fprintf(fp, "{\n  \"tool\": \"ndrun bench --processes\",\n  \"processes\": %d,\n  \"nodes\": %d,\n  \"cases\": [\n",
            pr->n ? r[0].processes : 1, pr->n ? r[0].nodes : 1);
    for (int i = 0; i < pr->n; ++i) {
        fputs("    {\n", fp);
        nr_print_procs_json(fp, &r[i], "      ");
        fputs("      \"result\": ", fp);
        nr_print_json(fp, &r[i], "      ");
        fputs(i + 1 < pr->n ? "\n    },\n" : "\n    }\n", fp);
    }
    fputs("  ]\n}\n", fp);
}

/* The options: --filter, --json-out and ndrun compare's shared ones; 0, or an exit status. */
static int parse_procs(int argc, char **argv, const char **filter, const char **json_out, nr_settings *s)
{
    nr_case dummy = {.nflags = 1};
    nd_error err;
    for (int i = 2; i < argc; ++i) { /* argv[1] is --processes */
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return fputs(procs_usage, stdout), -1;
        if ((!strcmp(argv[i], "--filter") || !strcmp(argv[i], "--json-out")) && i + 1 < argc) {
            *(argv[i][2] == 'f' ? filter : json_out) = argv[i + 1];
            ++i;
            continue;
        }
        if (nr_parse_common(argc, argv, &i, &dummy, s, &err)) {
            fprintf(stderr, "ndrun bench --processes: %s: not an option here; see --help\n", argv[i]);
            return 2;
        }
    }
    s->probes = false;
    return 0;
}

/* One case: ndrun compare of its options. */
static int run_case(nd_kernels *k, const procs_case *pc, const nr_settings *s, nr_result *r, nd_error *err)
{
    nr_case c;
    if (nr_case_from_args(pc->label, pc->args, 24, &c, err) || nr_compare(k, &c, s, r, err))
        return -1;
    snprintf(r->label, sizeof r->label, "%s", pc->label);
    snprintf(r->family, sizeof r->family, "processes");
    return 0;
}

int nr_bench_procs_main(int argc, char **argv)
{
    const char *filter = NULL, *json_out = "ndrun-bench-processes.json";
    nr_settings s;
    nd_error err;
    nr_settings_init(&s);
    int status = parse_procs(argc, argv, &filter, &json_out, &s);
    if (status)
        return status < 0 ? 0 : status;
    int chosen = 0;
    for (int i = 0; i < NPROCS_CASES; ++i)
        chosen += !filter || strstr(procs_cases[i].label, filter) != NULL;
    if (chosen == 0) { /* rather than an empty report over the last one */
        fprintf(stderr, "ndrun bench --processes: --filter '%s' matches no case's label\n", filter);
        return 2;
    }
    nd_kernels *k = NULL;
    ndf_output file = {0};
    const char *what = "--json-out";
    int rc = nr_procs_rank() == 0 && nr_outputs_open(&file, &json_out, &what, 1, &err), n = 0; /* rank 0 alone */
    nr_result *res = rc ? NULL : calloc(NPROCS_CASES, sizeof *res);
    rc = rc || (!res ? nd_failc(&err, ND_ENOMEM, "out of memory") : nr_open_kernels(&s, &k, &err));
    bool all = true;
    for (int i = 0; i < NPROCS_CASES && !rc; ++i) {
        if (filter && !strstr(procs_cases[i].label, filter))
            continue;
        if ((rc = run_case(k, &procs_cases[i], &s, &res[n], &err)) != 0) {
            nd_error why = err;
            nd_failc(&err, why.code, "case '%s': %.400s", procs_cases[i].label, why.msg);
            break;
        }
        if (n == 0)
            print_header(&res[0]);
        print_row(&res[n]);
        fflush(stdout);
        all = all && res[n++].match;
    }
    if (!rc && nr_procs_rank() == 0)
        rc = nr_write_file(&file, write_json, &(nr_results){res, n}, &err);
    ndf_abort(&file); /* not committed (a failure): the old file stays */
    if (rc)
        fprintf(stderr, "ndrun bench --processes: %s\n", err.msg);
    else
        printf("\n%d cases; JSON in %s\n", n, json_out);
    nd_kernels_close(k);
    free(res);
    return rc ? 1 : all ? 0 : 1;
}
