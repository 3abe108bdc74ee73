/*
 * test_mpi_address_space.c LIBRARY - run under mpirun -np 4 with NDGEN_MPI_NODE_SIZE=1 by CTest: four
 * nodes of one process, each holding one core and one DRAM bank of 512 MiB, 2 GiB in all. A process may
 * hold its own memory and the other nodes' pages its calls read, never the job's (issue 28 item 2):
 * each limits its address space (RLIMIT_AS) to what it uses after MPI_Init, plus its own segment, plus
 * a margin far below the other nodes' 1.5 GiB, then opens the device and runs
 *   - a relu whose output lies as its input (no other node's page read),
 *   - a reshard from row blocks to column blocks (a column slab of every other node's rows read),
 *   - a read of the column blocks back to the host (every other node's entry of it read),
 *   - the reshard again, into 512 x 512 blocks allocated where the column blocks were (a read set kept for
 *     the last launch must not serve it),
 * each checked against plain loops, each after two launches asking for no statistics (what the third
 * reports is its own: the bytes it fetched, counted here by hand). For every launch, each process's
 * reserved address space
 * (nd_mpi_proc_stats.reserved_bytes) must lie between its node's memory plus what it fetched and its
 * node's memory plus, per other node's entry of the inputs, the entry and two OS pages of rounding; and
 * the address space the kernel reports (VmSize) may have grown by no more than that bound and the
 * margin. A device that mapped the other nodes' memory could not open under the limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "nd_runtime_mpi.h"
#include "testutil.h"

enum { N = 1024, PROCS = 4 };
static const long long BANK = 512LL << 20, L1 = 1LL << 20, MARGIN = 384LL << 20;

static int rank;
static int64_t passed;

static long long vm_size(void) /* bytes of address space in use, as the kernel counts them */
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmSize:", 7) == 0)
            kb = atoll(line + 7);
    if (f)
        fclose(f);
    return kb * 1024;
}

static nd_tensor *tensor(nd_device *dev, const char *shard)
{
    nd_dist_flags f = {.shape = "1024,1024", .shard = shard, .page = "32,32", .grid = "4x1", .buffer = "dram",
                       .banks = "4", .dram_bank_size = "512M", .cores = "(0,0)-(3,0)"};
    nd_dist d;
    nd_error err;
    nd_tensor *t = NULL;
    if (nd_dist_from_flags(&f, &d, &err) || nd_tensor_alloc(dev, &d, &t, &err)) {
        fprintf(stderr, "test_mpi_address_space: process %d: tensor sharded %s: %s\n", rank, shard, err.msg);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return t;
}

/* The bound on a process's reservation after reading, from other nodes, every entry of t it does not
 * hold: each such entry whole and two OS pages for rounding its span out. */
static long long remote_entries_bound(const nd_device *dev, const nd_tensor *t)
{
    const nd_dist *d = nd_tensor_dist(t);
    long long page = sysconf(_SC_PAGESIZE), bytes = 0;
    for (int64_t i = 0; i < d->layout.ncores; ++i)
        if (nd_mpi_rank_of_bank(dev, nd_dist_core(d, i).x) != rank)
            bytes += d->bytes_per_core + 2 * page;
    return bytes;
}

/* Runs op from in to out and checks this process's reservation against [low, high]. */
static void launch(nd_device *dev, nd_kernels *k, const char *op, nd_tensor *in, nd_tensor *out, long long high,
                   long long fetch, long long start_vm)
{
    nd_error err;
    nd_launch_stats st;
    nd_mpi_proc_stats procs[PROCS];
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; ++i) /* the last asks for statistics: they are its own alone */
        rc = nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = op, .tensors = (nd_tensor *[]){in, out},
                                      .ntensors = 2, .variant = ND_VARIANT_GENERIC, .stats = i == 2 ? &st : NULL},
                    &err);
    CHECK(rc == 0, "%s: %s", op, rc ? err.msg : "");
    if (rc)
        return;
    CHECK(nd_mpi_launch_procs(dev, procs, PROCS, &err) == 0, "%s: statistics: %s", op, err.msg);
    const nd_mpi_proc_stats *me = &procs[rank];
    long long low = BANK + L1 + me->staged_bytes, vm = vm_size() - start_vm;
    CHECK(me->reserved_bytes >= low && me->reserved_bytes <= high,
          "%s, process %d: reserved %lld bytes; want between %lld (its node's memory and the %lld bytes it fetched) "
          "and %lld", op, rank, (long long)me->reserved_bytes, low, (long long)me->staged_bytes, high);
    CHECK(vm <= high + MARGIN, "%s, process %d: the address space grew by %lld bytes since MPI_Init; want at most %lld",
          op, rank, vm, high + MARGIN);
    CHECK(me->staged_bytes == fetch, "%s, process %d: fetched %lld bytes in the launch; want %lld", op, rank,
          (long long)me->staged_bytes, fetch);
    passed += 3;
    printf("test_mpi_address_space: process %d: %s fetched %lld bytes, reserved %lld, address space +%lld MiB\n",
           rank, op, (long long)me->staged_bytes, (long long)me->reserved_bytes, vm >> 20);
}

/* t read back against x (transposed blocks are the same elements: the host array is row-major). */
static void check_values(nd_tensor *t, const float *want, float *got, const char *what)
{
    nd_error err;
    CHECK(nd_tensor_read(t, got, (int64_t)N * N * (int64_t)sizeof *got, &err) == 0, "%s: read: %s", what, err.msg);
    int64_t wrong = 0;
    for (int64_t i = 0; i < (int64_t)N * N; ++i)
        wrong += got[i] != (want[i] > 0 ? want[i] : 0);
    CHECK(wrong == 0, "%s: %lld of %d elements wrong", what, (long long)wrong, N * N);
    passed += wrong == 0;
}

int main(int argc, char **argv)
{
    int nprocs;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const char *ns = getenv("NDGEN_MPI_NODE_SIZE");
    if (argc != 2 || nprocs != PROCS || !ns || atoi(ns) != 1) {
        fprintf(stderr, "usage: NDGEN_MPI_NODE_SIZE=1 mpirun -np %d test_mpi_address_space LIBRARY\n", PROCS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long long start_vm = vm_size(), limit = start_vm + BANK + L1 + MARGIN;
    struct rlimit rl = {(rlim_t)limit, (rlim_t)limit};
    if (start_vm < 0 || setrlimit(RLIMIT_AS, &rl) != 0) {
        fprintf(stderr, "test_mpi_address_space: cannot limit the address space\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    nd_device_config cfg;
    nd_device *dev;
    nd_kernels *k;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = PROCS, cfg.grid_y = 1, cfg.threads = 1, cfg.l1_bytes = L1, cfg.dram_banks = PROCS;
    cfg.dram_bank_bytes = BANK;
    if (nd_device_open_mpi(&cfg, NULL, MPI_COMM_WORLD, &dev, &err) || nd_kernels_open(&k, &err) ||
        nd_kernels_load(k, argv[1], &err)) {
        fprintf(stderr, "test_mpi_address_space: process %d: %s (the limit: %lld MiB of address space)\n", rank,
                err.msg, limit >> 20);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    float *want = malloc((size_t)N * N * sizeof *want), *got = malloc((size_t)N * N * sizeof *got);
    CHECK(want && got, "out of memory");
    for (int64_t i = 0; want && i < (int64_t)N * N; ++i)
        want[i] = (float)(i % 13) - 6;
    nd_tensor *rows = tensor(dev, "256,1024"), *relu = tensor(dev, "256,1024"), *cols = tensor(dev, "1024,256");
    CHECK(nd_tensor_write(rows, want, (int64_t)N * N * (int64_t)sizeof *want, &err) == 0, "write: %s", err.msg);
    long long node = BANK + L1;
    for (int round = 0; round < 2 && want && got; ++round) {
        long long staged = node + remote_entries_bound(dev, relu); /* the area is kept from call to call */
        /* the reshard: each core's 256 columns of every other node's 256 rows, pages of 32 x 32 */
        long long slab = (long long)(PROCS - 1) * 256 * 256 * (long long)sizeof(float);
        launch(dev, k, "relu", rows, relu, round == 0 ? node : staged, 0, start_vm); /* fetches nothing */
        launch(dev, k, "reshard", relu, cols, staged, slab, start_vm);               /* a slab of each entry */
        check_values(cols, want, got, "the reshard, read back");
    }
    /* The same op on the same input into an output of another distribution, allocated where the last one
     * was: a read set kept for the last launch (runtime/mpi/stage_mpi.c) must not serve it. Core q's
     * 512 x 512 block (blocks dealt row by row) reads 512 rows of two nodes, one its own. */
    nd_tensor_free(cols);
    cols = tensor(dev, "512,512");
    const long long block = 256LL * 512 * (long long)sizeof(float); /* the other node's 256 rows of 512 columns */
    launch(dev, k, "reshard", relu, cols, node + remote_entries_bound(dev, relu), block, start_vm);
    check_values(cols, want, got, "the reshard into 512 x 512 blocks, read back");
    nd_tensor_free(cols);
    nd_tensor_free(relu);
    nd_tensor_free(rows);
    free(want);
    free(got);
    nd_kernels_close(k);
    nd_device_close(dev);
    int failed = test_failures > 0, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_mpi_address_space: %lld checks passed on process 0%s\n", (long long)passed,
               any ? ", some failed" : "");
    MPI_Finalize();
    return any;
}
