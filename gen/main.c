/* main.c - the ndgen command: dispatches to one subcommand per pipeline entry point. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exe_dir.h"
#include "ndgen.h"

static const char usage[] =
    "usage: ndgen <command> [options]\n"
    "\n"
    "ndgen generates C kernels specialized for ND-sharded tensor distributions.\n"
    "\n"
    "Commands:\n"
    "  generate  generate generic and specialized kernels from op specs and C templates\n"
    "  registry  write the root registry of a kernel library\n"
    "  show      show where every shard and page of a distribution lives (text, json, svg)\n"
    "  plan      sharding analysis of einsums: parallelism, pending sums, collectives, bytes moved\n"
    "  tune      the fastest distribution of one op, or of a chain of ops (--chain), by a cost model and\n"
    "            measurement (runs ndrun tune, which builds and times the kernels)\n"
    "\n"
    "Run 'ndgen <command> --help' for a command's options. 'ndgen --version' prints the version.\n";

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("ndgen %s\n", NDGEN_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "show") == 0)
        return ndg_show_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "plan") == 0)
        return ndg_plan_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "generate") == 0)
        return ndg_generate_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "registry") == 0)
        return ndg_registry_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "tune") == 0) { /* measuring takes the runtime and its JIT: ndrun, beside ndgen */
        char ndrun[PATH_MAX + 64];
        if (nd_exe_relative(ndrun, sizeof ndrun, "ndrun") == 0) {
            argv[0] = ndrun;
            execv(ndrun, argv); /* argv[1] is "tune" */
        }
        fprintf(stderr, "ndgen tune: cannot run ndrun beside ndgen (%s): %s\n", ndrun, strerror(errno));
        return 1;
    }
    fprintf(stderr, "ndgen: %s: unknown command; see ndgen --help\n", argv[1]);
    return 2;
}
