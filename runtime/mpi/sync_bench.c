/*
 * sync_bench.c - mpirun -np R nd_mpi_sync_bench OPS_LIBRARY [LAUNCHES]: what ordering a launch with the
 * other processes costs, per launch, with launches ordered in pairs (nd_mpi_config.sync PAIRS) and
 * with fences over every process (FENCE), on a grid of one core per process and tensors of 8 rows of
 * 64 floats per core, so that the kernels' own work is a few microseconds:
 *   alone   reduce_sum of each core's own rows: no process reads another's page;
 *   all     a reshard from row blocks to column blocks: every process reads every other's pages.
 * No launch asks for statistics (no gather). Each process times its own launches; printed on rank 0:
 * the largest over processes of their medians, and of their 90th percentiles, in microseconds, over
 * three alternating rounds of each setting.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd_runtime_mpi.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what, const nd_error *err)
{
    fprintf(stderr, "nd_mpi_sync_bench: %s: %s\n", what, err->msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The median and 90th percentile of n launch times of one case on one setting, the largest over
 * processes, into q[0..2) (rank 0). */
static void time_case(nd_mpi_sync sync, const char *ops, int which, int n, double q[2])
{
    int nprocs;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    char shape[32], cols[32], grid[32];
    snprintf(shape, sizeof shape, "%d,64", 8 * nprocs);
    snprintf(cols, sizeof cols, "%d,%d", 8 * nprocs, (64 + nprocs - 1) / nprocs);
    snprintf(grid, sizeof grid, "%dx1", nprocs);
    nd_device_config cfg;
    nd_mpi_config m;
    nd_device *dev;
    nd_kernels *k;
    nd_error err;
    nd_dist da, db, dr;
    nd_tensor *a, *b, *r;
    nd_device_config_init(&cfg);
    cfg.grid_x = nprocs, cfg.grid_y = 1, cfg.threads = 1, cfg.l1_bytes = 1 << 20, cfg.dram_banks = 1;
    cfg.dram_bank_bytes = 4096;
    nd_mpi_config_init(&m);
    m.sync = sync;
    char rows[16];
    snprintf(rows, sizeof rows, "%d", 8 * nprocs);
    nd_dist_flags fa = {.shape = shape, .shard = "8,64", .grid = grid};
    nd_dist_flags fb = {.shape = shape, .shard = cols, .grid = grid};
    nd_dist_flags fr = {.shape = rows, .shard = "8", .grid = grid};
    if (nd_dist_from_flags(&fa, &da, &err) || nd_dist_from_flags(&fb, &db, &err) ||
        nd_dist_from_flags(&fr, &dr, &err) || nd_device_open_mpi(&cfg, &m, MPI_COMM_WORLD, &dev, &err) ||
        nd_tensor_alloc(dev, &da, &a, &err) || nd_tensor_alloc(dev, &db, &b, &err) ||
        nd_tensor_alloc(dev, &dr, &r, &err) || nd_kernels_open(&k, &err) || nd_kernels_load(k, ops, &err))
        die("setup", &err);
    double axis = 1, *t = malloc((size_t)n * sizeof *t);
    nd_launch_desc d = which ? (nd_launch_desc){.device = dev, .kernels = k, .op = "reshard",
                                                .tensors = (nd_tensor *[]){a, b}, .ntensors = 2}
                             : (nd_launch_desc){.device = dev, .kernels = k, .op = "reduce_sum",
                                                .tensors = (nd_tensor *[]){a, r}, .ntensors = 2, .scalars = &axis,
                                                .nscalars = 1};
    for (int i = -n / 10; i < n; ++i) { /* a tenth more first, untimed */
        double t0 = MPI_Wtime();
        if (nd_run(&d, &err))
            die(d.op, &err);
        if (i >= 0)
            t[i] = MPI_Wtime() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, by_value);
    double mine[2] = {t[n / 2], t[n * 9 / 10]};
    MPI_Reduce(mine, q, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    free(t);
    nd_tensor_free(r);
    nd_tensor_free(b);
    nd_tensor_free(a);
    nd_kernels_close(k);
    nd_device_close(dev);
}

int main(int argc, char **argv)
{
    int rank, nprocs;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int n = argc == 3 ? atoi(argv[2]) : 2000;
    if ((argc != 2 && argc != 3) || n < 10 || nprocs > 64) {
        fprintf(stderr, "usage: mpirun -np R nd_mpi_sync_bench OPS_LIBRARY [LAUNCHES >= 10], R at most 64\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    static const char *const cases[2] = {"alone", "all"}, *const syncs[2] = {"pairs", "fence"};
    if (rank == 0)
        printf("%d processes, %d launches a round; microseconds per launch, the slowest process's median "
               "(90th percentile)\n%-6s %-6s %26s %26s %26s\n", nprocs, n, "case", "sync", "round 1", "round 2",
               "round 3");
    for (int c = 0; c < 2; ++c) {
        double q[2][3][2] = {{{0}}};
        for (int round = 0; round < 3; ++round) /* the settings alternate */
            for (int s = 0; s < 2; ++s)
                time_case(s ? ND_MPI_SYNC_FENCE : ND_MPI_SYNC_PAIRS, argv[1], c, n, q[s][round]);
        for (int s = 0; s < 2 && rank == 0; ++s)
            printf("%-6s %-6s %14.1f (%9.1f) %14.1f (%9.1f) %14.1f (%9.1f)\n", cases[c], syncs[s], 1e6 * q[s][0][0],
                   1e6 * q[s][0][1], 1e6 * q[s][1][0], 1e6 * q[s][1][1], 1e6 * q[s][2][0], 1e6 * q[s][2][1]);
    }
    MPI_Finalize();
    return 0;
}
