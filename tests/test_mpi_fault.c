/*
 * test_mpi_fault.c kill|hang - run under mpirun -np 2 or more by test_mpi_fault.sh: a device over the
 * processes, then the last process dies (SIGKILL) or hangs (sleeps) while the others launch a kernel.
 * The launch's fence must not wait forever: the job has to end, with a message, within a bounded time
 * (fence_timeout is 3 s here). Exits 0 only if the launch completed, which must not happen.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nd_runtime_mpi.h"

static void nothing(const nda_core *core, const nda_args *args)
{
    (void)core;
    (void)args;
}

int main(int argc, char **argv)
{
    int rank, nprocs;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 2 || (strcmp(argv[1], "kill") != 0 && strcmp(argv[1], "hang") != 0) || nprocs < 2) {
        fprintf(stderr, "usage: mpirun -np 2 test_mpi_fault kill|hang\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    nd_device_config cfg;
    nd_mpi_config mcfg;
    nd_device *dev;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = 4, cfg.grid_y = 1, cfg.threads = 1, cfg.l1_bytes = 4096, cfg.dram_banks = 1;
    cfg.dram_bank_bytes = 4096;
    nd_mpi_config_init(&mcfg);
    mcfg.fence_timeout = 3;
    if (nd_device_open_mpi(&cfg, &mcfg, MPI_COMM_WORLD, &dev, &err)) {
        fprintf(stderr, "test_mpi_fault: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == nprocs - 1) {
        if (argv[1][0] == 'k')
            raise(SIGKILL);
        sleep(600); /* hangs: never reaches the fence */
    }
    nd_launch_stats st;
    nd_launch(dev, nothing, NULL, 0, NULL, 0, &st, &err);
    printf("test_mpi_fault: process %d finished a launch with a process %s\n", rank,
           argv[1][0] == 'k' ? "killed" : "hanging");
    nd_device_close(dev);
    MPI_Finalize();
    return 0;
}
