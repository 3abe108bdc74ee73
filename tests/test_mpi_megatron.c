/*
 * test_mpi_megatron.c LIB8 LIB4 PLAN_TOTAL PLAN_BUSIEST - run under mpirun -np R: the Megatron MLP
 * Z = relu(X @ W1) @ W2, all_reduce(Z), over a device spanning the R processes.
 *
 * LIB8 is specs/examples/megatron.lua (8 cores in a row): specialized and generic kernels give the
 * plain reference's Z bit for bit, and every launch's per-core statistics equal those of the same
 * launch on a one-process device (run on rank 0).
 *
 * LIB4 is the same MLP on 4 cores (tests/mpi/megatron4.lua). On 4 processes each runs one core, so a
 * page another core holds is another process's: the bytes the processes read from each other must be
 * what `ndgen plan ... --grid 4x1` predicts (PLAN_TOTAL in all, PLAN_BUSIEST by the busiest process;
 * test_mpi_megatron.sh passes the plan's figures), all of it in the all_reduce.
 *
 * On both, every launch but the all_reduce reads no page of another process (its read set beyond this
 * process's pages is empty) and is ordered with no other process: the one synchronization of a step is
 * the all_reduce's.
 */
#include <string.h>

#include "nd_runtime_mpi.h"
#include "megatron_ref.h"
#include "testutil.h"

enum { B = MEG_B, X = MEG_X, Y = MEG_Y, Z = MEG_Z };

static int rank, nprocs;

typedef struct model {
    nd_device *dev;
    nd_tensor *x, *w1, *y, *h, *w2, *z, *zr;
} model;

static int tensor(nd_device *dev, int cores, const char *shape, const char *einshard, const char *placements,
                  nd_tensor **out, nd_error *err)
{
    char grid[16], mesh[16];
    snprintf(grid, sizeof grid, "%dx1", cores);
    snprintf(mesh, sizeof mesh, "%d", cores);
    nd_dist_flags f = {.shape = shape, .grid = grid, .einshard = einshard, .placements = placements,
                       .mesh = placements ? mesh : NULL};
    nd_dist d;
    return nd_dist_from_flags(&f, &d, err) || nd_tensor_alloc(dev, &d, out, err);
}

static int build(model *m, int cores, bool mpi, nd_error *err)
{
    nd_device_config cfg;
    nd_device_config_init(&cfg);
    cfg.grid_x = cores;
    cfg.grid_y = 1;
    cfg.threads = 1;
    cfg.l1_bytes = 1 << 18;
    cfg.dram_banks = 1;
    cfg.dram_bank_bytes = 4096;
    memset(m, 0, sizeof *m);
    int rc = mpi ? nd_device_open_mpi(&cfg, NULL, MPI_COMM_WORLD, &m->dev, err) : nd_device_open(&cfg, &m->dev, err);
    return rc || tensor(m->dev, cores, "8,128", "... -> * ...", NULL, &m->x, err) ||
           tensor(m->dev, cores, "128,256", "x y -> x y*", NULL, &m->w1, err) ||
           tensor(m->dev, cores, "8,256", "b y -> b y*", NULL, &m->y, err) ||
           tensor(m->dev, cores, "8,256", "b y -> b y*", NULL, &m->h, err) ||
           tensor(m->dev, cores, "256,64", "y z -> y* z", NULL, &m->w2, err) ||
           tensor(m->dev, cores, "8,64", NULL, "[Partial(sum)]", &m->z, err) ||
           tensor(m->dev, cores, "8,64", "... -> * ...", NULL, &m->zr, err);
}

static void release(model *m)
{
    nd_tensor *all[] = {m->x, m->w1, m->y, m->h, m->w2, m->z, m->zr};
    for (size_t i = 0; i < sizeof all / sizeof *all; ++i)
        nd_tensor_free(all[i]);
    nd_device_close(m->dev);
}

typedef struct traffic {
    nda_stats per_core[4][8]; /* per launch */
    int64_t other_total, other_busiest; /* bytes read from other processes, all four launches */
} traffic;

static void launch(model *m, nd_kernels *k, int step, const char *op, nd_tensor *a, nd_tensor *b, nd_tensor *out,
                   nd_variant want, traffic *t)
{
    nd_tensor *ts[3] = {a, b, out};
    nd_kernel_pick pick;
    nd_launch_stats st;
    nd_error err;
    int rc = nd_run(&(nd_launch_desc){.device = m->dev, .kernels = k, .op = op, .tensors = ts, .ntensors = out ? 3 : 2,
                                      .variant = want, .pick = &pick, .stats = &st}, &err);
    CHECK(rc == 0, "%s: %s", op, err.msg);
    if (rc)
        return;
    CHECK(pick.specialized == (want == ND_VARIANT_SPECIALIZED), "%s: picked %s", op, pick.symbol);
    memcpy(t->per_core[step], st.per_core, (size_t)st.ncores * sizeof *st.per_core);
    nd_mpi_proc_stats pp[8];
    int n = nd_mpi_nprocs(m->dev);
    CHECK(n <= 8 && nd_mpi_launch_procs(m->dev, pp, n, &err) == 0, "%s", err.msg);
    for (int p = 0; p < n && n <= 8; ++p) {
        /* Only the all_reduce talks: the matmuls read their own slices and copies (einsum reference, the
         * chunk rule for the pending sum), the relu is placed as its output (elementwise reference). */
        const nd_mpi_proc_stats *q = &pp[p];
        if (step == 3)
            CHECK(n == 1 || q->order != ND_MPI_ORDER_NONE, "all_reduce: process %d ordered with nobody", p);
        else
            CHECK(q->order != ND_MPI_ORDER_FENCE && q->node_bytes == 0 && q->staged_bytes == 0 &&
                      (q->order != ND_MPI_ORDER_PAIRS || (q->pair_writers == 0 && q->pair_readers == 0)),
                  "launch %d (%s), process %d: order %d with %d writers and %d readers, read set %lld bytes in "
                  "its node, %lld staged; want no other process", step, op, p, (int)q->order, q->pair_writers,
                  q->pair_readers, (long long)q->node_bytes, (long long)q->staged_bytes);
        if (pp[p].other_process_bytes_read < 0)
            continue;
        t->other_total += pp[p].other_process_bytes_read;
        t->other_busiest = pp[p].other_process_bytes_read > t->other_busiest ? pp[p].other_process_bytes_read
                                                                             : t->other_busiest;
    }
}

static void forward(model *m, nd_kernels *k, nd_variant want, const float *expect, traffic *t)
{
    static float got[B * Z];
    nd_error err;
    memset(t, 0, sizeof *t);
    launch(m, k, 0, "matmul", m->x, m->w1, m->y, want, t);
    launch(m, k, 1, "relu", m->y, m->h, NULL, want, t);
    launch(m, k, 2, "matmul", m->h, m->w2, m->z, want, t);
    launch(m, k, 3, "all_reduce", m->z, m->zr, NULL, want, t);
    CHECK(nd_tensor_read(m->zr, got, sizeof got, &err) == 0, "%s", err.msg);
    int at = 0;
    while (at < B * Z && got[at] == expect[at])
        ++at;
    CHECK(at == B * Z, "Z differs from the reference at %d: %g, want %g", at, (double)got[at], (double)expect[at]);
}

static void run_lib(const char *lib, int cores, const float *x, const float *w1, const float *w2, const float *z,
                    int64_t plan_total, int64_t plan_busiest)
{
    model m, l;
    nd_kernels *k = NULL;
    nd_error err;
    traffic mt, lt;
    if (build(&m, cores, true, &err) || nd_kernels_open(&k, &err) || nd_kernels_load(k, lib, &err)) {
        CHECK(0, "%s", err.msg);
        return;
    }
    CHECK(nd_tensor_write(m.x, x, B * X * 4, &err) == 0 && nd_tensor_write(m.w1, w1, X * Y * 4, &err) == 0 &&
              nd_tensor_write(m.w2, w2, Y * Z * 4, &err) == 0, "%s", err.msg);
    for (int v = 0; v < 2; ++v) {
        nd_variant want = v ? ND_VARIANT_GENERIC : ND_VARIANT_SPECIALIZED;
        test_case = v ? "generic" : "specialized";
        forward(&m, k, want, z, &mt);
        if (rank == 0) { /* the same launches in one process */
            CHECK(build(&l, cores, false, &err) == 0, "%s", err.msg);
            CHECK(nd_tensor_write(l.x, x, B * X * 4, &err) == 0 && nd_tensor_write(l.w1, w1, X * Y * 4, &err) == 0 &&
                      nd_tensor_write(l.w2, w2, Y * Z * 4, &err) == 0, "%s", err.msg);
            forward(&l, k, want, z, &lt);
            for (int s = 0; s < 4; ++s)
                CHECK(memcmp(mt.per_core[s], lt.per_core[s], (size_t)cores * sizeof(nda_stats)) == 0,
                      "launch %d: per-core statistics over %d processes differ from one process's", s, nprocs);
            release(&l);
        }
        if (cores == nprocs) { /* one core per process: the plan's bytes between cores are between processes */
            CHECK(mt.other_total == plan_total && mt.other_busiest == plan_busiest,
                  "%d processes read %lld bytes from each other, the busiest %lld; ndgen plan predicts %lld and %lld",
                  nprocs, (long long)mt.other_total, (long long)mt.other_busiest, (long long)plan_total,
                  (long long)plan_busiest);
            if (rank == 0 && v == 0)
                printf("megatron on %d processes: %lld bytes read across processes (plan %lld), busiest %lld\n",
                       nprocs, (long long)mt.other_total, (long long)plan_total, (long long)mt.other_busiest);
        }
    }
    nd_kernels_close(k);
    release(&m);
}

/* Halves in [-1, 1]: every product and sum is exact in f32, so results compare bit for bit. */
static void fill(float *v, int n)
{
    for (int i = 0; i < n; ++i)
        v[i] = (float)rng_range(&test_seed, -2, 2) / 2.0f;
}

int main(int argc, char **argv)
{
    static float x[B * X], w1[X * Y], w2[Y * Z], z[B * Z];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 5) {
        fprintf(stderr, "usage: test_mpi_megatron LIB8 LIB4 PLAN_TOTAL PLAN_BUSIEST\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    test_seed = 20261121;
    fill(x, B * X);
    fill(w1, X * Y);
    fill(w2, Y * Z);
    megatron_reference(x, w1, w2, z);
    int64_t total = strtoll(argv[3], NULL, 10), busiest = strtoll(argv[4], NULL, 10);
    CHECK(total > 0 && busiest > 0, "plan figures %s and %s: expected positive byte counts", argv[3], argv[4]);
    run_lib(argv[1], 8, x, w1, w2, z, 0, 0);
    run_lib(argv[2], 4, x, w1, w2, z, total, busiest);
    int failures = test_failures, any = 0;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_mpi_megatron on %d processes: ", nprocs);
    int rc = rank == 0 ? test_finish(4) : failures != 0;
    MPI_Finalize();
    return any ? 1 : rc;
}
