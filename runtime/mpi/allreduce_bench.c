/*
 * allreduce_bench.c - mpirun -np R nd_mpi_allreduce_bench OPS_LIBRARY [ROWS COLS REPS]: the generated
 * all_reduce (the direct one: each core reads the other parts of its block) over a device spanning
 * the R processes, against MPI_Allreduce of the same data, on a Partial(sum) ROWS x COLS f32 tensor of
 * 8 parts on 8 cores in a row. Prints, on rank 0, the median time per launch of each, and the bytes
 * the launch read locally and from other cores, in all and on the busiest process. Both results must
 * agree bit for bit (the data are quarters, whose sums are exact): it exits 1 otherwise.
 *
 * Also the bandwidth-optimal decomposition as two generated launches: reduce_scatter onto a split of
 * the columns over the 8 cores, then all_gather back to every core. Each core then reads (P-1)/P of the
 * block twice, 2(P-1)/P * B in all, the bytes of a ring or of recursive halving and doubling, where the
 * direct all_reduce reads (P-1) * B.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd_runtime_mpi.h"

enum { P = 8 };

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    int rank, nprocs;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 2 && argc != 5) {
        fprintf(stderr, "usage: mpirun -np R nd_mpi_allreduce_bench OPS_LIBRARY [ROWS COLS REPS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rows = argc == 5 ? atoi(argv[2]) : 64, cols = argc == 5 ? atoi(argv[3]) : 1024;
    int reps = argc == 5 ? atoi(argv[4]) : 20;
    if (rows < 1 || cols < 1 || reps < 1 || (int64_t)rows * cols > (1 << 26)) {
        fprintf(stderr, "nd_mpi_allreduce_bench: ROWS, COLS and REPS must be positive, ROWS*COLS at most 2^26\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int64_t n = (int64_t)rows * cols, bytes = n * 4;
    char shape[64];
    snprintf(shape, sizeof shape, "%d,%d", rows, cols);
    nd_device_config cfg;
    nd_device *dev;
    nd_kernels *k;
    nd_tensor *in, *out, *splits[2];
    nd_dist din, dout, dsplit[2];
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = P, cfg.grid_y = 1, cfg.threads = 1, cfg.dram_banks = 1, cfg.dram_bank_bytes = 4096;
    cfg.l1_bytes = 4 * bytes + 16384;
    nd_dist_flags fi = {.shape = shape, .grid = "8x1", .placements = "[Partial(sum)]", .mesh = "8"};
    nd_dist_flags fo = {.shape = shape, .grid = "8x1", .einshard = "... -> * ..."};
    /* rows: pages whole rows, as the input's, so each core reads only what it needs; columns: the op
     * library's specialized target, whose row-segment pages make the reduce_scatter read whole input rows */
    const char *split_names[2] = {"rows", "columns"};
    nd_dist_flags fs[2] = {{.shape = shape, .grid = "8x1", .einshard = "a b -> a8 b", .uneven = true},
                           {.shape = shape, .grid = "8x1", .einshard = "a b -> a b8", .uneven = true}};
    if (nd_dist_from_flags(&fi, &din, &err) || nd_dist_from_flags(&fo, &dout, &err) ||
        nd_dist_from_flags(&fs[0], &dsplit[0], &err) || nd_dist_from_flags(&fs[1], &dsplit[1], &err) ||
        nd_device_open_mpi(&cfg, NULL, MPI_COMM_WORLD, &dev, &err) ||
        nd_tensor_alloc(dev, &din, &in, &err) || nd_tensor_alloc(dev, &dout, &out, &err) ||
        nd_tensor_alloc(dev, &dsplit[0], &splits[0], &err) || nd_tensor_alloc(dev, &dsplit[1], &splits[1], &err) ||
        nd_kernels_open(&k, &err) || nd_kernels_load(k, argv[1], &err)) {
        fprintf(stderr, "nd_mpi_allreduce_bench: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    float *part = malloc((size_t)bytes), *mine = calloc((size_t)n, 4), *sum = malloc((size_t)bytes);
    float *got = malloc((size_t)bytes);
    double *t = malloc((size_t)reps * sizeof *t), *stage = malloc((size_t)reps * sizeof *stage);
    uint64_t seed = 12345;
    for (int q = 0; q < P; ++q) { /* every process writes every part (its own cores' pages of it) */
        for (int64_t i = 0; i < n; ++i) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            part[i] = (float)((int)(seed >> 33) % 33 - 16) / 4.0f;
        }
        if (nd_tensor_write_part(in, q, part, bytes, &err)) {
            fprintf(stderr, "nd_mpi_allreduce_bench: %s\n", err.msg);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (nd_mpi_rank_of_core(dev, q) == rank) /* part q lives on core q: this process's share of the sum */
            for (int64_t i = 0; i < n; ++i)
                mine[i] += part[i];
    }
    const char *variants[2] = {"generic", "specialized"};
    int bad = 0;
    float *two = malloc((size_t)bytes);
    for (int w = 0; w < 4; ++w) { /* reduce_scatter, then all_gather: two launches per all_reduce */
        int v = w % 2;
        nd_tensor *split = splits[w / 2];
        nd_launch_stats s1, s2;
        nd_variant var = v ? ND_VARIANT_SPECIALIZED : ND_VARIANT_GENERIC;
        int64_t local = 0, remote = 0;
        int rc = 0;
        for (int r = 0; r < reps && rc == 0; ++r) {
            rc = nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "reduce_scatter",
                                          .tensors = (nd_tensor *[]){in, split}, .ntensors = 2, .variant = var,
                                          .stats = &s1}, &err) ||
                 nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "all_gather",
                                          .tensors = (nd_tensor *[]){split, out}, .ntensors = 2, .variant = var,
                                          .stats = &s2}, &err);
            t[r] = s1.seconds + s2.seconds;
            local = s1.total.local_bytes_read + s2.total.local_bytes_read;
            remote = s1.total.remote_bytes_read + s2.total.remote_bytes_read;
        }
        if (rc) {
            if (rank == 0)
                printf("reduce_scatter + all_gather (%s), %s: %s\n", split_names[w / 2], variants[v], err.msg);
            continue;
        }
        nd_tensor_read(out, two, bytes, &err);
        if (rank == 0)
            printf("reduce_scatter + all_gather (%-7s), %-11s %d processes: %9.1f us per pair; read %lld bytes "
                   "locally, %lld from other cores\n", split_names[w / 2], variants[v], nprocs, 1e6 * median(t, reps),
                   (long long)local, (long long)remote);
    }
    for (int v = 0; v < 2; ++v) {
        nd_launch_stats st;
        nd_mpi_proc_stats pp[64];
        int rc = 0;
        for (int r = 0; r < reps && rc == 0; ++r) {
            rc = nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "all_reduce",
                                          .tensors = (nd_tensor *[]){in, out}, .ntensors = 2,
                                          .variant = v ? ND_VARIANT_SPECIALIZED : ND_VARIANT_GENERIC, .stats = &st},
                        &err);
            t[r] = st.seconds;
            stage[r] = 0; /* the slowest process's gets (other nodes' pages) in this launch */
            if (rc == 0 && nd_mpi_launch_procs(dev, pp, nprocs < 64 ? nprocs : 64, &err) == 0)
                for (int p = 0; p < nprocs && p < 64; ++p)
                    stage[r] = pp[p].stage_seconds > stage[r] ? pp[p].stage_seconds : stage[r];
        }
        if (rc) { /* the specialized target is one shape (8x64): others have none */
            if (rank == 0)
                printf("direct all_reduce, %s: %s\n", variants[v], err.msg);
            continue;
        }
        nd_mpi_launch_procs(dev, pp, nprocs < 64 ? nprocs : 64, &err);
        int64_t busiest = 0, staged = 0, gets = 0;
        for (int p = 0; p < nprocs && p < 64; ++p) {
            busiest = pp[p].total.remote_bytes_read > busiest ? pp[p].total.remote_bytes_read : busiest;
            staged = pp[p].staged_bytes > staged ? pp[p].staged_bytes : staged;
            gets = pp[p].gets > gets ? pp[p].gets : gets;
        }
        nd_tensor_read(out, got, bytes, &err);
        if (rank == 0)
            printf("direct all_reduce, %-11s %d processes: %9.1f us per launch; read %lld bytes locally, %lld from "
                   "other cores (busiest process %lld)\n", variants[v], nprocs, 1e6 * median(t, reps),
                   (long long)st.total.local_bytes_read, (long long)st.total.remote_bytes_read, (long long)busiest);
        if (rank == 0 && nd_mpi_nnodes(dev) > 1)
            printf("  over %d nodes: fetched %lld bytes from other nodes per launch in %lld gets (busiest process), "
                   "the gets %.1f us (median of the slowest process)\n", nd_mpi_nnodes(dev), (long long)staged,
                   (long long)gets, 1e6 * median(stage, reps));
    }
    for (int r = 0; r < reps; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(mine, sum, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t[r] = MPI_Wtime() - t0;
    }
    bad = memcmp(sum, got, (size_t)bytes) != 0 || memcmp(two, got, (size_t)bytes) != 0;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("MPI_Allreduce,                 %d processes: %9.1f us per call on %lld bytes per process%s\n", nprocs,
               1e6 * median(t, reps), (long long)bytes,
               bad ? "; RESULTS DIFFER between the three" : "; the three results are bit-identical");
    nd_tensor_free(in);
    nd_tensor_free(out);
    nd_tensor_free(splits[0]);
    nd_tensor_free(splits[1]);
    nd_kernels_close(k);
    nd_device_close(dev);
    free(part), free(mine), free(sum), free(got), free(two), free(t), free(stage);
    MPI_Finalize();
    return bad;
}
