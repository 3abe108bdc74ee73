/*
 * test_mpi_alloc.c LIBRARY - run under mpirun -np 2: a DRAM tensor's memory is cleared at allocation by
 * the process holding its bank, which need not be the one whose core writes it (core 0 writes entry 0 of
 * a tensor on bank 1, which process 1 holds) nor any reader. Launches ordered in pairs never meet that
 * process, so the clearing must be ordered otherwise (nd_tensor_alloc fences a DRAM allocation):
 *   late clear: process 1 clears a large tensor, then u; meanwhile process 0 writes u (relu of x) and
 *               reads it back (relu into z): u and z must be x, not the zeros of a clearing that came late;
 *   reuse:      process 0 reads u (relu into z) while process 1 frees u and allocates w over the same
 *               memory, clearing it: z must be u's values.
 * Neither launch asks for statistics, so no gather orders the processes either. Found by an adversarial
 * review: before the fence every element was wrong in every round of both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd_runtime_mpi.h"
#include "testutil.h"

static int64_t passed;

static nd_tensor *tensor(nd_device *dev, const char *shape, const char *cores, const char *buffer)
{
    nd_dist_flags f = {.shape = shape, .shard = shape, .grid = "2x1", .cores = cores, .buffer = buffer, .banks = "2",
                       .l1_size = "16M", .dram_bank_size = "256M"};
    nd_dist d;
    nd_error err;
    nd_tensor *t = NULL;
    if (nd_dist_from_flags(&f, &d, &err) || nd_tensor_alloc(dev, &d, &t, &err)) {
        fprintf(stderr, "test_mpi_alloc: tensor %s on %s: %s\n", shape, cores, err.msg);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return t;
}

static void relu(nd_device *dev, nd_kernels *k, nd_tensor *in, nd_tensor *out)
{
    nd_error err;
    if (nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "relu", .tensors = (nd_tensor *[]){in, out},
                                 .ntensors = 2, .variant = ND_VARIANT_GENERIC},
               &err)) {
        fprintf(stderr, "test_mpi_alloc: relu: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* z read back against want, n elements. */
static void check_equal(nd_tensor *z, const float *want, float *got, int64_t n, const char *what, int round)
{
    nd_error err;
    CHECK(nd_tensor_read(z, got, n * (int64_t)sizeof *got, &err) == 0, "read: %s", err.msg);
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i)
        wrong += got[i] != want[i];
    passed += wrong == 0;
    CHECK(wrong == 0, "%s, round %d: %lld of %lld elements wrong (element 0 is %g, want %g)", what, round,
          (long long)wrong, (long long)n, got[0], want[0]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    nd_device_config cfg;
    nd_device_config_init(&cfg);
    cfg.grid_x = 2, cfg.grid_y = 1, cfg.l1_bytes = 16 << 20, cfg.dram_banks = 2, cfg.dram_bank_bytes = 256 << 20;
    cfg.threads = 1;
    nd_device *dev;
    nd_kernels *k;
    nd_error err;
    if (argc != 2 || nprocs != 2 || nd_device_open_mpi(&cfg, NULL, MPI_COMM_WORLD, &dev, &err) ||
        nd_kernels_open(&k, &err) || nd_kernels_load(k, argv[1], &err)) {
        fprintf(stderr, "usage: mpirun -np 2 test_mpi_alloc LIBRARY%s%s\n", argc == 2 && nprocs == 2 ? ": " : "",
                argc == 2 && nprocs == 2 ? err.msg : "");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    enum { SMALL = 256 * 256, LARGE = 1024 * 1024 };
    float *want = malloc(LARGE * sizeof *want), *got = malloc(LARGE * sizeof *got);
    CHECK(want && got, "out of memory");
    for (int64_t i = 0; want && i < LARGE; ++i)
        want[i] = (float)(i % 7) + 1;
    nd_tensor *x = tensor(dev, "256,256", "(0,0)", "l1");
    CHECK(nd_tensor_write(x, want, SMALL * (int64_t)sizeof *want, &err) == 0, "write: %s", err.msg);
    for (int round = 0; round < 3 && want && got; ++round) {
        nd_tensor *big = tensor(dev, "8192,4096", "(1,0)", "dram"); /* 128 MiB for process 1 to clear first */
        nd_tensor *u = tensor(dev, "256,256", "(1,0)", "dram"), *z = tensor(dev, "256,256", "(0,0)", "l1");
        relu(dev, k, x, u); /* core 0 (process 0) writes u into bank 1 (process 1's) */
        relu(dev, k, u, z); /* and reads it back */
        check_equal(u, want, got, SMALL, "late clear, u", round); /* zeros if the clearing came after */
        check_equal(z, want, got, SMALL, "late clear, z", round);
        nd_tensor_free(z);
        nd_tensor_free(u);
        nd_tensor_free(big);
    }
    for (int round = 0; round < 3 && want && got; ++round) {
        nd_tensor *u = tensor(dev, "1024,1024", "(1,0)", "dram"), *z = tensor(dev, "1024,1024", "(0,0)", "l1");
        CHECK(nd_tensor_write(u, want, LARGE * (int64_t)sizeof *want, &err) == 0, "write: %s", err.msg);
        relu(dev, k, u, z); /* process 0 reads u ... */
        nd_tensor_free(u);
        nd_tensor *w = tensor(dev, "1024,1024", "(1,0)", "dram"); /* ... while process 1 clears its memory */
        check_equal(z, want, got, LARGE, "reuse", round);
        nd_tensor_free(w);
        nd_tensor_free(z);
    }
    nd_tensor_free(x);
    free(want);
    free(got);
    nd_kernels_close(k);
    nd_device_close(dev);
    int failed = test_failures > 0, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_mpi_alloc: %lld checks passed%s\n", (long long)passed, any ? ", some failed" : "");
    MPI_Finalize();
    return any;
}
