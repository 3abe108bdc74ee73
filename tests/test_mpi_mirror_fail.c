/*
 * test_mpi_mirror_fail.c - run under mpirun -np 3 with NDGEN_MPI_NODE_SIZE=2 by test_mpi_mirror_fail.sh:
 * nodes {0, 1} and {2}, so process 2's mirror of the other node's memory (two segments) is twice the
 * others' (one). Process 2 limits its address space (RLIMIT_AS) to what it uses plus its own segment
 * and a margin, below its mirror: reserving the mirror fails on process 2 alone. Every process must
 * then get an error from nd_device_open_mpi, none may wait forever in the collective MPI_Win_create
 * the others reach. Exits 0 when open failed with a message; 3 if it succeeded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "nd_runtime_mpi.h"

static long long vm_size(void) /* bytes of address space in use */
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

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    nd_device_config cfg;
    nd_device *dev;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = 3, cfg.grid_y = 1, cfg.threads = 1, cfg.l1_bytes = 4096, cfg.dram_banks = 3;
    cfg.dram_bank_bytes = 1LL << 30; /* a bank per process: segments of 1 GiB, mostly never touched */
    if (rank == 2) {
        long long used = vm_size();
        struct rlimit rl = {(rlim_t)(used + cfg.dram_bank_bytes + (512LL << 20)),
                            (rlim_t)(used + cfg.dram_bank_bytes + (512LL << 20))};
        if (used < 0 || setrlimit(RLIMIT_AS, &rl) != 0) {
            fprintf(stderr, "test_mpi_mirror_fail: cannot limit the address space\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (nd_device_open_mpi(&cfg, NULL, MPI_COMM_WORLD, &dev, &err) == 0) {
        printf("test_mpi_mirror_fail: process %d: open succeeded\n", rank);
        nd_device_close(dev);
        MPI_Finalize();
        return 3;
    }
    printf("test_mpi_mirror_fail: process %d: open failed: %s\n", rank, err.msg);
    MPI_Finalize();
    return 0;
}
