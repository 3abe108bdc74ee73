/*
 * test_mpi_fault.c MODE - run under mpirun -np 2 or more by test_mpi_fault.sh: a device over the
 * processes, two tensors, a write and a launch, while the last process breaks the job's rules in one
 * way (MODE):
 *   kill   dies (SIGKILL) before the first write;  hang  sleeps instead;  stop  stops itself (SIGSTOP)
 *   extra  makes one more write than the others;   args  writes a tensor of another shape
 *   order  allocates the two tensors in the other order (its arena offsets differ)
 *   scalar launches with another scalar
 *   local  makes an elementwise launch that reads no other core's page (it fences nothing) with another
 *          scalar: found at the next fence, the device's close, which compares the skipped calls too
 *   pairs  makes an elementwise launch ordered in pairs (process 0 reads the last one's pages) with another
 *          scalar: found where the two meet, process 0 receiving the last one's READY
 *   alone  the same over tensors whose pages every process reads from itself alone (ordered in pairs
 *          with nobody): found at the next fence, the close
 * The fences must end the job within a bounded time (fence_timeout is 2 s here) with a message naming
 * the process, never hang and never let the call finish. Prints "finished" and exits 0 only if every
 * call completed, which must not happen.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nd_runtime_mpi.h"

static void nothing(const nda_core *core, const nda_args *args)
{
    (void)core;
    (void)args;
}

static void die(const char *what, const nd_error *err)
{
    fprintf(stderr, "test_mpi_fault: %s: %s\n", what, err->msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static nd_tensor *tensor_dealt(nd_device *dev, const char *shape, const char *shard, nd_strategy strategy)
{
    nd_dist_spec s;
    nd_dist d;
    nd_tensor *t = NULL;
    nd_error err;
    nd_dist_spec_init(&s);
    if (nd_parse_dims("shape", shape, s.shape, &s.rank, &err) ||
        nd_parse_dims("shard", shard, s.shard, &s.shard_rank, &err) || ((s.strategy = strategy), 0) ||
        nd_dist_make(&s, 4, 1, &d, &err) ||
        nd_tensor_alloc(dev, &d, &t, &err))
        die("tensor", &err);
    return t;
}

static nd_tensor *tensor(nd_device *dev, const char *shape, const char *shard)
{
    return tensor_dealt(dev, shape, shard, ND_ROUND_ROBIN);
}

/* An elementwise launch (read rule POINTWISE) of a into c with one scalar, then c freed; says so on stderr
 * when the launch was not ordered as `want`. */
static void launch_pointwise(nd_device *dev, nd_tensor *a, nd_tensor *c, double value, nd_mpi_order want)
{
    nd_tensor *both[2] = {a, c};
    const char *const operands[] = {"a", "out"}, *const indices[] = {"...", "..."};
    const nda_kernel_entry e = {.op = "fault_pointwise", .symbol = "fault_pointwise", .fn = nothing, .noperands = 2,
                                .operands = operands, .indices = indices, .noutputs = 1, .reads = NDA_READS_POINTWISE};
    nd_launch_stats st;
    nd_mpi_proc_stats pp[8];
    nd_error err;
    int rank = nd_mpi_rank(dev), n = nd_mpi_nprocs(dev);
    if (nd_launch_entry(dev, &e, both, 2, &value, 1, &st, &err))
        die("elementwise launch", &err);
    if (n <= 8 && nd_mpi_launch_procs(dev, pp, n, &err) == 0 && pp[rank].order != want)
        fprintf(stderr, "test_mpi_fault: process %d: the launch was not ordered as it should be (%d, not %d)\n", rank,
                (int)pp[rank].order, (int)want);
    nd_tensor_free(c);
}

int main(int argc, char **argv)
{
    static const char *const modes[] = {"kill", "hang", "stop", "extra", "args", "order", "scalar", "local", "pairs", "alone"};
    int rank, nprocs, mode = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int i = 0; argc == 2 && i < (int)(sizeof modes / sizeof *modes); ++i)
        mode = strcmp(argv[1], modes[i]) == 0 ? i : mode;
    if (mode < 0 || nprocs < 2) {
        fprintf(stderr, "usage: mpirun -np 2 test_mpi_fault kill|hang|stop|extra|args|order|scalar|local|pairs|alone\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *m = modes[mode];
    bool odd = rank == nprocs - 1; /* the process that breaks the rules */
    nd_device_config cfg;
    nd_mpi_config mcfg;
    nd_device *dev;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = 4, cfg.grid_y = 1, cfg.threads = 1, cfg.l1_bytes = 1 << 16, cfg.dram_banks = 1;
    cfg.dram_bank_bytes = 4096;
    nd_mpi_config_init(&mcfg);
    mcfg.fence_timeout = 2;
    if (nd_device_open_mpi(&cfg, &mcfg, MPI_COMM_WORLD, &dev, &err))
        die("device", &err);
    nd_tensor *a, *b;
    if (odd && strcmp(m, "order") == 0) {
        b = tensor(dev, "16,32", "4,32");
        a = tensor(dev, "8,32", "2,32");
    } else {
        a = tensor(dev, "8,32", "2,32");
        b = tensor(dev, "16,32", "4,32");
    }
    nd_tensor *w = odd && strcmp(m, "args") == 0 ? b : a;
    float host[16 * 32] = {0};
    int64_t bytes = nd_tensor_dist(w)->spec.shape[0] * 32 * (int64_t)sizeof(float);
    if (odd && strcmp(m, "kill") == 0)
        raise(SIGKILL);
    if (odd && strcmp(m, "stop") == 0)
        raise(SIGSTOP);
    if (odd && strcmp(m, "hang") == 0)
        sleep(600); /* never reaches the fence */
    if (nd_tensor_write(w, host, bytes, &err))
        die("write", &err);
    double scalar = odd && strcmp(m, "scalar") == 0 ? 2.0 : 1.0;
    nd_tensor *ts[2] = {a, b};
    nd_launch_stats st;
    if (nd_launch(dev, nothing, ts, 2, &scalar, 1, &st, &err))
        die("launch", &err);
    if (odd && strcmp(m, "extra") == 0 && nd_tensor_write(a, host, 8 * 32 * (int64_t)sizeof(float), &err))
        die("extra write", &err);
    if (strcmp(m, "local") == 0) /* c lies as a: an elementwise launch over them reads no other core's page */
        launch_pointwise(dev, a, tensor(dev, "8,32", "2,32"), odd ? 2.0 : 1.0, ND_MPI_ORDER_NONE);
    /* pairs: c's rows 0 to 7 on cores 0 and 1 read a's rows on every core (every process); alone: c's
       one-row shards dealt in blocks, two to a core, hold the rows a's two-row shards hold on that core, so
       each core reads its own pages and no process talks, yet c does not lie as a (no skipped fence) */
    if (strcmp(m, "pairs") == 0)
        launch_pointwise(dev, a, tensor(dev, "8,32", "4,32"), odd ? 2.0 : 1.0, ND_MPI_ORDER_PAIRS);
    if (strcmp(m, "alone") == 0)
        launch_pointwise(dev, a, tensor_dealt(dev, "8,32", "1,32", ND_CONTIGUOUS), odd ? 2.0 : 1.0, ND_MPI_ORDER_PAIRS);
    nd_tensor_free(b);
    nd_tensor_free(a);
    nd_device_close(dev);
    printf("test_mpi_fault: process %d finished (%s)\n", rank, m);
    MPI_Finalize();
    return 0;
}
