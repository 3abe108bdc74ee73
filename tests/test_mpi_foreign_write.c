/*
 * test_mpi_foreign_write.c - run under mpirun -np 2 by test_mpi_foreign_write.sh: a bare kernel breaks
 * owner computes, each core storing into the next core's page with nda_page_write. In one process and
 * on one node every store lands (one address space, or the node's shared window). Over two nodes the
 * next core's page may be on the other node, of which this process maps nothing (and, of what it
 * fetched, only a read-only copy): the store must fault and end the job, never land in a copy and be lost. Prints "silently lost"
 * and exits 3 if a row did not receive its store but the job went on; 0 if every store landed.
 */
#include <stdio.h>

#include "nd_runtime_mpi.h"

enum { CORES = 4, WIDTH = 16 };

static void store_next(const nda_core *core, const nda_args *args)
{
    const nda_tensor *t = nda_operand(args, 0);
    float *p = nda_page_write(core, t, (core->id + 1) % CORES); /* the next core's row: not this core's */
    for (int k = 0; k < WIDTH; ++k)
        p[k] = (float)(100 * core->id + k);
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    nd_device_config cfg;
    nd_device *dev = NULL;
    nd_error err;
    nd_dist d;
    nd_dist_spec s;
    nd_tensor *t = NULL;
    nd_device_config_init(&cfg);
    cfg.grid_x = CORES, cfg.grid_y = 1, cfg.threads = 1, cfg.l1_bytes = 4096, cfg.dram_banks = 1;
    cfg.dram_bank_bytes = 4096;
    nd_dist_spec_init(&s);
    s.rank = s.shard_rank = 2, s.dtype = ND_F32;
    s.shape[0] = CORES, s.shape[1] = WIDTH, s.shard[0] = 1, s.shard[1] = WIDTH; /* a row per core */
    s.page_kind = ND_PAGE_BOX, s.page_rank = 2, s.page[0] = 1, s.page[1] = WIDTH;
    if (nd_dist_make(&s, CORES, 1, &d, &err) || nd_device_open_mpi(&cfg, NULL, MPI_COMM_WORLD, &dev, &err) ||
        nd_tensor_alloc(dev, &d, &t, &err)) {
        fprintf(stderr, "test_mpi_foreign_write: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    nd_tensor *ts[1] = {t};
    float h[CORES * WIDTH];
    if (nd_launch(dev, store_next, ts, 1, NULL, 0, NULL, &err) || nd_tensor_read(t, h, sizeof h, &err)) {
        fprintf(stderr, "test_mpi_foreign_write: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int lost = 0;
    for (int r = 0; r < CORES; ++r)
        lost += h[r * WIDTH + 5] != (float)(100 * ((r + CORES - 1) % CORES) + 5);
    if (rank == 0)
        printf("test_mpi_foreign_write: %d nodes, %d of %d rows %s\n", nd_mpi_nnodes(dev), lost, CORES,
               lost ? "silently lost their store" : "received their store");
    nd_tensor_free(t);
    nd_device_close(dev);
    MPI_Finalize();
    return lost ? 3 : 0;
}
