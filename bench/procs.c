/*
 * procs.c - ndrun under an MPI launcher (`mpirun -np R ndrun compare ...`): every process runs the
 * same comparison on one device whose cores are divided among the R processes (nd_runtime_mpi), so
 * the kernels run across address spaces; rank 0 alone prints, and the result says, per process, the
 * cores it ran and the bytes its cores read from their own pages, from other cores' pages in the same
 * process, and from pages of other processes.
 *
 * ndrun is SPMD here: every process parses the same arguments, makes the same inputs (seeded) and the
 * same calls in the same order, as nd_runtime_mpi requires. The check is unchanged: the generic and
 * specialized kernels must agree bit for bit, and with the op's plain reference, computed in each
 * process as in a one-process run. Without MPI in the build, a run under a launcher with more than one
 * process is refused: R independent copies would each print and measure a one-process run.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ndrun.h"
#ifdef NDRUN_HAVE_MPI
#include "nd_runtime_mpi.h"
#endif

static bool active; /* MPI_Init was called */

/* The size of the job the launcher says this process is part of; 1 when none says. */
static int launcher_size(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; ++i) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 0)
            return atoi(v);
    }
    return getenv("PMIX_RANK") || getenv("OMPI_COMM_WORLD_RANK") ? 2 : 1;
}

int nr_procs_init(int *argc, char ***argv, nd_error *err)
{
    int size = launcher_size();
    if (size <= 1)
        return 0;
#ifdef NDRUN_HAVE_MPI
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
        return nd_failc(err, ND_ESYS, "MPI_Init failed");
    active = true;
    if (nr_procs_rank() != 0 && !freopen("/dev/null", "w", stdout)) /* rank 0 prints */
        return nd_failc(err, ND_ESYS, "cannot silence the output of rank %d", nr_procs_rank());
    return 0;
#else
    (void)argc;
    (void)argv;
    return nd_failc(err, ND_EINVAL, "run under an MPI launcher with %d processes, but this ndrun was built without "
                                    "MPI (configure with MPI installed, NDGEN_MPI=ON), so each would run alone; run "
                                    "it without mpirun", size);
#endif
}

void nr_procs_finish(void)
{
#ifdef NDRUN_HAVE_MPI
    if (active)
        MPI_Finalize();
#endif
    active = false;
}

int nr_procs_rank(void)
{
    int rank = 0;
#ifdef NDRUN_HAVE_MPI
    if (active)
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#endif
    return rank;
}

int nr_open_device(const nd_device_config *cfg, nd_device **out, nd_error *err)
{
#ifdef NDRUN_HAVE_MPI
    if (active) { /* processes share the CPUs: no pinning */
        nd_mpi_config m;
        nd_mpi_config_init(&m);
        if (!getenv("NDGEN_MPI_STATS_ROOT")) /* which, when set, decides (nd_mpi_config_init read it) */
            m.stats_root = 0;                /* rank 0 alone reports: the launches' statistics go there only */
        return nd_device_open_mpi(cfg, &m, MPI_COMM_WORLD, out, err);
    }
#endif
    if (nd_device_open(cfg, out, err))
        return -1;
    nr_pin_threads(*out);
    return 0;
}

int nr_procs_capture(nd_device *dev, nr_result *r, nd_error *err)
{
    r->processes = r->nodes = 1;
#ifdef NDRUN_HAVE_MPI
    if (!active)
        return 0;
    int n = nd_mpi_nprocs(dev);
    nd_mpi_proc_stats *p = calloc((size_t)n, sizeof *p);
    if (!p)
        return nd_failc(err, ND_ENOMEM, "per-process statistics: out of memory");
    int rc = n > NR_MAX_PROCS ? nd_fail(err, "%d processes; ndrun reports at most %d", n, NR_MAX_PROCS)
                              : nd_mpi_launch_procs(dev, p, n, err);
    static const char *const orders[] = {[ND_MPI_ORDER_FENCE] = "fence", [ND_MPI_ORDER_PAIRS] = "pairs",
                                         [ND_MPI_ORDER_NONE] = "none"};
    for (int i = 0; i < n && !rc; ++i)
        r->procs[i] = (nr_proc){p[i].core_lo,    p[i].core_hi,      p[i].total.local_bytes_read,
                                p[i].total.remote_bytes_read, p[i].other_process_bytes_read,
                                p[i].node,       p[i].node_bytes,   p[i].staged_bytes, p[i].gets,
                                orders[p[i].order], p[i].pair_writers, p[i].pair_readers, p[i].reserved_bytes,
                                p[i].staging_bytes};
    r->processes = rc ? 1 : n;
    r->nodes = rc ? 1 : nd_mpi_nnodes(dev);
    free(p);
    return rc;
#else
    (void)dev;
    (void)err;
    return 0;
#endif
}

void nr_print_procs(FILE *fp, const nr_result *r)
{
    if (r->processes <= 1)
        return;
    if (r->nodes <= 1)
        fprintf(fp, "processes: %d (one node, a shared-memory window); bytes the specialized kernel's cores read:\n",
                r->processes);
    else
        fprintf(fp, "processes: %d on %d nodes (a shared-memory window per node, other nodes' pages fetched by "
                    "MPI_Get); bytes the specialized kernel's cores read:\n", r->processes, r->nodes);
    bool uncounted = false;
    for (int i = 0; i < r->processes; ++i) {
        const nr_proc *p = &r->procs[i];
        char other[32];
        uncounted |= p->other_process_bytes < 0;
        if (p->other_process_bytes < 0)
            snprintf(other, sizeof other, "not counted");
        else
            snprintf(other, sizeof other, "%lld", (long long)p->other_process_bytes);
        fprintf(fp, "  process %d: cores [%lld, %lld), own pages %lld, other cores' pages %lld, of which in other "
                    "processes %s", i, (long long)p->core_lo, (long long)p->core_hi, (long long)p->local_bytes,
                (long long)p->remote_bytes, other);
        fprintf(fp, "; read set: %lld bytes in its node's other processes", (long long)p->node_bytes);
        if (r->nodes > 1)
            fprintf(fp, ", node %d, fetched %lld bytes from other nodes in %lld gets", p->node,
                    (long long)p->fetched_bytes, (long long)p->gets);
        fprintf(fp, "; reserves %lld bytes of address space for device memory (%lld to stage other nodes' pages)",
                (long long)p->reserved_bytes, (long long)p->staging_bytes);
        if (!strcmp(p->order, "pairs"))
            fprintf(fp, "; ordered in pairs, with %d writers of pages it read and %d readers of its pages",
                    p->pair_writers, p->pair_readers);
        else
            fprintf(fp, "; ordered %s", !strcmp(p->order, "fence") ? "by a fence over every process" : "with nobody");
        fputc('\n', fp);
    }
    if (uncounted) /* kernels count reads by core, and a process running several cannot split them */
        fprintf(fp, "  (other processes' bytes are counted when each process runs one core, -np equal to the "
                    "grid's cores, and no operand is in DRAM)\n");
    fputc('\n', fp);
}

void nr_print_procs_json(FILE *fp, const nr_result *r, const char *indent)
{
    fprintf(fp, "%s\"processes\": %d,\n%s\"nodes\": %d,\n%s\"per_process\": [", indent, r->processes, indent,
            r->nodes > 0 ? r->nodes : 1, indent);
    for (int i = 0; i < r->processes && r->processes > 1; ++i) {
        const nr_proc *p = &r->procs[i];
        fprintf(fp, "%s\n%s  {\"cores\": [%lld, %lld], \"local_bytes\": %lld, \"other_core_bytes\": %lld, "
                    "\"other_process_bytes\": %lld, \"node\": %d, \"node_bytes\": %lld, \"fetched_bytes\": %lld, "
                    "\"gets\": %lld, \"order\": \"%s\", \"pair_writers\": %d, \"pair_readers\": %d, "
                    "\"reserved_bytes\": %lld, \"staging_bytes\": %lld}", i ? "," : "",
                indent, (long long)p->core_lo, (long long)p->core_hi, (long long)p->local_bytes,
                (long long)p->remote_bytes, (long long)p->other_process_bytes, p->node, (long long)p->node_bytes,
                (long long)p->fetched_bytes, (long long)p->gets, p->order, p->pair_writers, p->pair_readers,
                (long long)p->reserved_bytes, (long long)p->staging_bytes);
    }
    fprintf(fp, "%s%s],\n", r->processes > 1 ? "\n" : "", r->processes > 1 ? indent : "");
}

void nr_procs_align(void)
{
#ifdef NDRUN_HAVE_MPI
    if (active && MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) {
        fprintf(stderr, "ndrun: process %d: MPI_Barrier failed; ending the job\n", nr_procs_rank());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#endif
}

bool nr_procs_agree(bool go)
{
#ifdef NDRUN_HAVE_MPI
    if (active) {
        int v = go;
        if (MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
            fprintf(stderr, "ndrun: process %d: MPI_Bcast failed; ending the job\n", nr_procs_rank());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        return v != 0;
    }
#endif
    return go;
}
