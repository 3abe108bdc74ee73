/*
 * test_mpi_io.c DIR - run under mpirun -np R (3 in CTest): tensors saved to and loaded from files with
 * MPI-IO over a device spanning the processes, on distributions with uneven shards (13 rows over 5
 * cores, tiles with edge padding, DRAM banks, copies, a Partial load). Checks: the saved file is the
 * row-major array byte for byte (read back with stdio on rank 0); a load into another distribution
 * reads back bit-exact; each process staged exactly the elements of the pages its own cores or banks
 * hold (counted here element by element from the distribution model), so none held more than its own
 * shards; and the refusals: a Partial save, a missing file, a file of the wrong size.
 */
#include <string.h>

#include "nd_runtime_mpi.h"
#include "testutil.h"

static int rank, nprocs;
static const char *dir;

/* Bytes of t's copy r held by this process's cores or banks: element by element, from the model. */
static int64_t own_bytes(nd_device *dev, const nd_dist *d, int64_t r)
{
    int64_t n = 0, e[ND_MAX_RANK] = {0}, coord[ND_MAX_RANK];
    for (;;) {
        for (int i = 0; i < d->spec.rank; ++i)
            coord[i] = e[i] / d->spec.page[i];
        nd_loc loc = nd_layout_locate_id(&d->squeezed, nd_dist_page_id(d, coord));
        nd_core c = nd_dist_core(d, r * d->layout.ncores + loc.core);
        int owner = d->spec.buffer == ND_DRAM ? nd_mpi_rank_of_bank(dev, c.x)
                                              : nd_mpi_rank_of_core(dev, (int64_t)c.y * 8 + c.x);
        n += owner == rank ? d->elem_bytes : 0;
        int i = d->spec.rank - 1;
        while (i >= 0 && ++e[i] == d->spec.shape[i])
            e[i--] = 0;
        if (i < 0)
            return n;
    }
}

static int make(nd_device *dev, const nd_dist_flags *f, nd_dist *d, nd_tensor **t, nd_error *err)
{
    return nd_dist_from_flags(f, d, err) || nd_tensor_alloc(dev, d, t, err);
}

/* Save from distribution a, check the file, load into b, read back. */
static void round_trip(nd_device *dev, const char *name, const nd_dist_flags *fa, const nd_dist_flags *fb)
{
    nd_dist da, db;
    nd_tensor *ta = NULL, *tb = NULL;
    nd_error err;
    char path[1024];
    test_case = name;
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    int rc = make(dev, fa, &da, &ta, &err) || make(dev, fb, &db, &tb, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc)
        return;
    int64_t elems = 1;
    for (int i = 0; i < da.spec.rank; ++i)
        elems *= da.spec.shape[i];
    int64_t bytes = elems * da.elem_bytes;
    uint8_t *host = malloc((size_t)bytes), *back = malloc((size_t)bytes), *file = malloc((size_t)bytes);
    uint64_t seed = 99;
    for (int64_t i = 0; i < bytes; ++i)
        host[i] = (uint8_t)rng_next(&seed);
    int64_t saved = -1, loaded = -1;
    CHECK(nd_tensor_write(ta, host, bytes, &err) == 0, "%s", err.msg);
    CHECK(nd_tensor_save_mpi(ta, path, &saved, &err) == 0, "save: %s", err.msg);
    if (rank == 0) { /* the file is the row-major array */
        FILE *fp = fopen(path, "rb");
        size_t got = fp ? fread(file, 1, (size_t)bytes + 1, fp) : 0;
        CHECK(fp && got == (size_t)bytes && memcmp(file, host, (size_t)bytes) == 0,
              "the saved file (%zu bytes) is not the %lld-byte array", got, (long long)bytes);
        if (fp)
            fclose(fp);
    }
    CHECK(nd_tensor_load_mpi(tb, path, &loaded, &err) == 0, "load: %s", err.msg);
    memset(back, 0, (size_t)bytes);
    CHECK(nd_tensor_read(tb, back, bytes, &err) == 0 && memcmp(back, host, (size_t)bytes) == 0,
          "loaded into the other distribution, the tensor differs from the array");
    /* staged: exactly this process's elements of copy 0 (save), and of the copy it holds most of (load) */
    int64_t own_a = own_bytes(dev, &da, 0), own_b = 0;
    for (int64_t r = 0; r < db.spec.replicas; ++r) {
        int64_t o = own_bytes(dev, &db, r);
        own_b = o > own_b ? o : own_b;
    }
    CHECK(saved == own_a && loaded == own_b, "process %d staged %lld bytes to save and %lld to load; it holds %lld "
          "and %lld", rank, (long long)saved, (long long)loaded, (long long)own_a, (long long)own_b);
    int64_t sum = 0;
    MPI_Allreduce(&saved, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == bytes, "the processes saved %lld bytes of a %lld-byte tensor", (long long)sum, (long long)bytes);
    CHECK(nprocs == 1 || saved < bytes, "process %d staged the whole tensor", rank);
    free(host), free(back), free(file);
    nd_tensor_free(ta);
    nd_tensor_free(tb);
}

static void refusals(nd_device *dev)
{
    nd_dist d, dp;
    nd_tensor *t = NULL, *p = NULL;
    nd_error err;
    char path[1024];
    int rc;
    test_case = "refusals";
    nd_dist_flags f = {.shape = "13,7", .grid = "5x1", .einshard = "a b -> a5 b", .uneven = true};
    nd_dist_flags fp = {.shape = "13,7", .grid = "4x1", .placements = "[Partial(sum)]", .mesh = "4"};
    CHECK(make(dev, &f, &d, &t, &err) == 0 && make(dev, &fp, &dp, &p, &err) == 0, "%s", err.msg);
    snprintf(path, sizeof path, "%s/partial.bin", dir);
    rc = nd_tensor_save_mpi(p, path, NULL, &err);
    CHECK_ERROR(rc, err, ND_EREFUSED, "is Partial, 4 parts pending a sum");
    snprintf(path, sizeof path, "%s/no/such/file.bin", dir);
    rc = nd_tensor_load_mpi(t, path, NULL, &err);
    CHECK_ERROR(rc, err, ND_EIO, "cannot open");
    snprintf(path, sizeof path, "%s/short.bin", dir);
    if (rank == 0) {
        FILE *fp2 = fopen(path, "wb");
        CHECK(fp2 && fwrite("0123456789", 1, 10, fp2) == 10, "cannot write %s", path);
        if (fp2)
            fclose(fp2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    rc = nd_tensor_load_mpi(t, path, NULL, &err);
    CHECK_ERROR(rc, err, ND_EIO, "the file has 10 bytes, but the f32 tensor has 364");
    /* a Partial load: part 0 gets the value, the other parts zeros, so the sum is the file */
    static float v[13 * 7], parts[13 * 7], sum[13 * 7];
    for (int i = 0; i < 13 * 7; ++i)
        v[i] = (float)i - 40.0f;
    snprintf(path, sizeof path, "%s/value.bin", dir);
    CHECK(nd_tensor_write(t, v, sizeof v, &err) == 0 && nd_tensor_save_mpi(t, path, NULL, &err) == 0, "%s", err.msg);
    CHECK(nd_tensor_load_mpi(p, path, NULL, &err) == 0, "%s", err.msg);
    memset(sum, 0, sizeof sum);
    for (int q = 0; q < 4; ++q) {
        CHECK(nd_tensor_read_part(p, q, parts, sizeof parts, &err) == 0, "%s", err.msg);
        for (int i = 0; i < 13 * 7; ++i)
            sum[i] += parts[i];
    }
    CHECK(memcmp(sum, v, sizeof v) == 0, "the loaded Partial tensor's parts do not add up to the file");
    nd_tensor_free(t);
    nd_tensor_free(p);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 2) {
        fprintf(stderr, "usage: test_mpi_io DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    dir = argv[1];
    nd_device_config cfg;
    nd_device *dev;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = 8, cfg.grid_y = 2, cfg.threads = 1, cfg.l1_bytes = 1 << 16, cfg.dram_banks = 5;
    cfg.dram_bank_bytes = 1 << 16;
    if (nd_device_open_mpi(&cfg, NULL, MPI_COMM_WORLD, &dev, &err)) {
        fprintf(stderr, "test_mpi_io: %s\n", err.msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* 13 rows over 8 (2,2,2,2,2,2,1,0 by the chunk rule) by 37 columns over 2 (19,18), into 4 by 4 */
    round_trip(dev, "rows",
               &(nd_dist_flags){.shape = "13,37", .grid = "8x2", .einshard = "a b -> a8 b2", .uneven = true},
               &(nd_dist_flags){.shape = "13,37", .grid = "8x2", .einshard = "a b -> a4 b4", .uneven = true});
    /* tiles with edge padding, round robin over 16 cores, into DRAM interleaved over 5 banks */
    round_trip(dev, "tiles_dram",
               &(nd_dist_flags){.shape = "3,45,70", .grid = "8x2", .page = "1,4,8", .shard = "1,8,16"},
               &(nd_dist_flags){.shape = "3,45,70", .page = "1,1,70", .buffer = "dram", .banks = "5",
                                .interleaved = true});
    /* bf16, two copies of a split over 8 cores each, into a 3-dim split */
    round_trip(dev, "copies", &(nd_dist_flags){.shape = "6,10,9", .dtype = "bf16", .grid = "8x2",
                                               .einshard = "a b c -> * a2 b4 c", .uneven = true},
               &(nd_dist_flags){.shape = "6,10,9", .dtype = "bf16", .grid = "8x2", .einshard = "a b c -> a2 b4 c2",
                                .uneven = true});
    refusals(dev);
    nd_device_close(dev);
    int failures = test_failures, any = 0;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_mpi_io on %d processes: ", nprocs);
    int rc = rank == 0 ? test_finish(4) : failures != 0;
    MPI_Finalize();
    return any ? 1 : rc;
}
