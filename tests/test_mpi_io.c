/*
 * test_mpi_io.c DIR - run under mpirun -np R (3 in CTest): tensors saved to and loaded from files with
 * MPI-IO over a device spanning the processes, on distributions with uneven shards (13 rows over 5
 * cores, tiles with edge padding, DRAM banks, copies, a Partial load). Checks: the saved file is the
 * row-major array byte for byte (read back with stdio on rank 0); a load into another distribution
 * reads back bit-exact; each process staged exactly the elements of the pages its own cores or banks
 * hold (counted here element by element from the distribution model), so none held more than its own
 * shards; and the refusals: a Partial save, a missing file, a file of the wrong size. Then each
 * process's own slice of a host array on such distributions (DRAM over banks of every process, bf16
 * copies held by different processes, a process holding two copies of some elements, a Partial sum):
 * its runs equal a brute-force listing from the model (every element, which process holds it in any
 * copy); write_local from every process then nd_tensor_read gives the array bit for bit; read_local
 * gives the array's elements at the runs; every page a process holds is the array with zero padding
 * (read from its buffers, poisoned before); a slice of the wrong size on one process fails on all.
 * Last, 12 random distributions (seed 2026 + k, printed on failure) of up to 400 rows.
 */
#include <string.h>

#include "nd_runtime_mpi.h"
#include "testutil.h"

static int rank, nprocs;
static const char *dir;

/* The process holding core-list entry i (of every copy) of d: its core's, or its bank's. */
static int entry_rank(nd_device *dev, const nd_dist *d, int64_t i)
{
    nd_core c = nd_dist_core(d, i);
    return d->spec.buffer == ND_DRAM ? nd_mpi_rank_of_bank(dev, c.x) : nd_mpi_rank_of_core(dev, (int64_t)c.y * 8 + c.x);
}

/* Bytes of t's copy r held by this process's cores or banks: element by element, from the model; each
 * such element's row-major index is also marked in held (may be NULL). */
static int64_t own_bytes(nd_device *dev, const nd_dist *d, int64_t r, uint8_t *held)
{
    int64_t n = 0, e[ND_MAX_RANK] = {0}, coord[ND_MAX_RANK], flat = 0;
    for (;; ++flat) {
        for (int i = 0; i < d->spec.rank; ++i)
            coord[i] = e[i] / d->spec.page[i];
        nd_loc loc = nd_layout_locate_id(&d->squeezed, nd_dist_page_id(d, coord));
        int owner = entry_rank(dev, d, r * d->layout.ncores + loc.core);
        n += owner == rank ? d->elem_bytes : 0;
        if (held && owner == rank)
            held[flat] = 1;
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
    int64_t own_a = own_bytes(dev, &da, 0, NULL), own_b = 0;
    for (int64_t r = 0; r < db.spec.replicas; ++r) {
        int64_t o = own_bytes(dev, &db, r, NULL);
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

/* The elements held (held[e] != 0) as maximal runs, brute force; returns how many runs. */
static int64_t held_runs(const uint8_t *held, int64_t elems, nd_elem_run *runs)
{
    int64_t n = 0;
    for (int64_t e = 0; e < elems; ++e) {
        if (!held[e])
            continue;
        if (n && runs[n - 1].offset + runs[n - 1].count == e)
            ++runs[n - 1].count;
        else
            runs[n++] = (nd_elem_run){e, 1};
    }
    return n;
}

/* The array's elements at the runs, one after another. */
static void gather_runs(const uint8_t *host, const nd_elem_run *runs, int64_t n, int64_t eb, uint8_t *slice)
{
    for (int64_t i = 0; i < n; slice += runs[i].count * eb, ++i)
        memcpy(slice, host + runs[i].offset * eb, (size_t)(runs[i].count * eb));
}

/* Checks this process's runs of t against the model, and that every element is held somewhere; returns
 * the runs (the model's) and their element count, or NULL. */
static nd_elem_run *check_runs(nd_device *dev, const nd_tensor *t, const nd_dist *d, int64_t elems, int64_t *nruns,
                               int64_t *count)
{
    nd_error err;
    uint8_t *held = calloc((size_t)elems, 1), *any = calloc((size_t)elems, 1);
    nd_elem_run *want = malloc((size_t)elems * sizeof *want), *got = malloc((size_t)elems * sizeof *got);
    int64_t held_n = 0, n = -1, cnt = -1;
    for (int64_t r = 0; r < d->spec.replicas; ++r)
        own_bytes(dev, d, r, held);
    for (int64_t e = 0; e < elems; ++e)
        held_n += held[e];
    int64_t want_n = held_runs(held, elems, want);
    CHECK(nd_tensor_local_runs_mpi(t, NULL, 0, &n, &cnt, &err) == 0, "%s", err.msg);
    CHECK(n == want_n && cnt == held_n, "process %d: %lld runs of %lld elements, the model says %lld of %lld", rank,
          (long long)n, (long long)cnt, (long long)want_n, (long long)held_n);
    if (want_n > 0) {
        int rc = nd_tensor_local_runs_mpi(t, got, want_n - 1, &n, &cnt, &err);
        CHECK_ERROR(rc, err, ND_EINVAL, "but the array has room for");
    }
    memset(got, 0, (size_t)elems * sizeof *got);
    CHECK(nd_tensor_local_runs_mpi(t, got, elems, &n, &cnt, &err) == 0 &&
          memcmp(got, want, (size_t)want_n * sizeof *want) == 0, "process %d: the runs differ from the model", rank);
    MPI_Allreduce(held, any, (int)elems, MPI_UINT8_T, MPI_BOR, MPI_COMM_WORLD);
    CHECK(memchr(any, 0, (size_t)elems) == NULL, "an element is held by no process");
    free(held), free(any), free(got);
    *nruns = want_n;
    *count = held_n;
    return want;
}

/* Sets every byte of the buffers this process holds to 0xFF, padding included. */
static void poison_own(nd_device *dev, const nd_tensor *t, const nd_dist *d)
{
    const nda_tensor *v = nd_tensor_view(t);
    for (int64_t i = 0; i < d->spec.replicas * d->layout.ncores; ++i)
        if (entry_rank(dev, d, i) == rank)
            memset(v->all_base[i], 0xFF, (size_t)d->bytes_per_core);
}

/* Whether every page this process holds, in every copy, is host's elements row-major over the page box
 * with zero bytes where the box leaves the tensor: read straight from the buffers. */
static bool own_pages_hold(nd_device *dev, const nd_tensor *t, const nd_dist *d, const uint8_t *host)
{
    const nda_tensor *v = nd_tensor_view(t);
    int rk = d->spec.rank;
    int64_t eb = d->elem_bytes, coord[ND_MAX_RANK];
    for (int64_t i = 0; i < d->spec.replicas * d->layout.ncores; ++i) {
        for (int64_t p = 0; p < d->layout.num_pages && entry_rank(dev, d, i) == rank; ++p) {
            nd_loc loc = nd_layout_locate_id(&d->squeezed, p);
            if (loc.core != i % d->layout.ncores)
                continue;
            const uint8_t *slot = v->all_base[i] + loc.offset * d->page_bytes;
            nd_dist_page_coord(d, p, coord);
            int64_t in[ND_MAX_RANK] = {0}; /* odometer over the page box */
            for (int64_t k = 0;; ++k) {
                int64_t flat = 0;
                bool inside = true;
                for (int j = 0; j < rk; ++j) {
                    int64_t e = coord[j] * d->spec.page[j] + in[j];
                    inside = inside && e < d->spec.shape[j];
                    flat = flat * d->spec.shape[j] + e;
                }
                static const uint8_t zero[8];
                if (memcmp(slot + k * eb, inside ? host + flat * eb : zero, (size_t)eb) != 0)
                    return false;
                int j = rk - 1;
                while (j >= 0 && ++in[j] == d->spec.page[j])
                    in[j--] = 0;
                if (j < 0)
                    break;
            }
        }
    }
    return true;
}

/* This process's slice: runs as the model lists them; write_local then read whole gives the array bit for
 * bit, read_local gives the array's elements at the runs; a wrong size on one process fails everywhere. */
static void slice_trip(nd_device *dev, const char *name, const nd_dist_flags *f)
{
    nd_dist d;
    nd_tensor *t = NULL;
    nd_error err;
    test_case = name;
    int rc = make(dev, f, &d, &t, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc)
        return;
    int64_t elems = 1, eb = d.elem_bytes, n = 0, count = 0;
    for (int i = 0; i < d.spec.rank; ++i)
        elems *= d.spec.shape[i];
    nd_elem_run *runs = check_runs(dev, t, &d, elems, &n, &count);
    uint8_t *host = malloc((size_t)(elems * eb)), *other = malloc((size_t)(elems * eb)), *back = malloc((size_t)(elems * eb));
    uint8_t *slice = malloc((size_t)(count * eb + 1)), *want = malloc((size_t)(count * eb + 1));
    uint64_t seed = 7 + (uint64_t)elems;
    for (int64_t i = 0; i < elems * eb; ++i)
        host[i] = (uint8_t)rng_next(&seed), other[i] = (uint8_t)rng_next(&seed);
    /* read_local after a whole write: this process's elements of that array */
    CHECK(nd_tensor_write(t, other, elems * eb, &err) == 0, "%s", err.msg);
    gather_runs(other, runs, n, eb, want);
    memset(slice, 0xAB, (size_t)(count * eb));
    CHECK(nd_tensor_read_local_mpi(t, slice, count * eb, &err) == 0 && memcmp(slice, want, (size_t)(count * eb)) == 0,
          "process %d: read_local differs from the written array at its runs", rank);
    /* write_local over it from every process: the whole tensor is the new array, in every page held */
    gather_runs(host, runs, n, eb, slice);
    poison_own(dev, t, &d);
    CHECK(nd_tensor_write_local_mpi(t, slice, count * eb, &err) == 0, "%s", err.msg);
    CHECK(own_pages_hold(dev, t, &d, host), "process %d: a page it holds is not the array, or its padding not zero",
          rank);
    memset(back, 0, (size_t)(elems * eb));
    CHECK(nd_tensor_read(t, back, elems * eb, &err) == 0 && memcmp(back, host, (size_t)(elems * eb)) == 0,
          "after every process's write_local, the tensor differs from the array");
    memset(want, 0xCD, (size_t)(count * eb));
    CHECK(nd_tensor_read_local_mpi(t, want, count * eb, &err) == 0 && memcmp(slice, want, (size_t)(count * eb)) == 0,
          "process %d: read_local after write_local differs from the slice", rank);
    /* a wrong size on rank 0 alone: every process fails, nothing written */
    rc = nd_tensor_write_local_mpi(t, other, count * eb + (rank == 0 ? eb : 0), &err);
    CHECK_ERROR(rc, err, ND_EINVAL, rank == 0 ? "elements of the" : "another process's slice has the wrong size");
    rc = nd_tensor_read_local_mpi(t, slice, rank == 0 ? count * eb + 1 : count * eb, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, rank == 0 ? "but this process holds" : "another process's slice");
    CHECK(nd_tensor_read(t, back, elems * eb, &err) == 0 && memcmp(back, host, (size_t)(elems * eb)) == 0,
          "a refused write_local changed the tensor");
    free(runs), free(host), free(other), free(back), free(slice), free(want);
    nd_tensor_free(t);
}

/* Random slices, case k from seed + k (the seed is printed on failure): rows up to 400 (over 256),
 * uneven tails, every dtype, row and column splits, copies, tiles dealt round robin, DRAM banks. */
static void slice_random(nd_device *dev, uint64_t seed, int cases)
{
    static const char *const dtypes[] = {"f32", "bf16", "i32", "u8"};
    static const char *const splits[] = {"a b -> a8 b2", "a b -> * a4 b2", "a b -> a2 * b4"};
    for (int k = 0; k < cases; ++k) {
        uint64_t rng = test_seed = seed + (uint64_t)k;
        int64_t rows = 1 + (int64_t)(rng_next(&rng) % 400), cols = 1 + (int64_t)(rng_next(&rng) % 40);
        int64_t pr = 1 + (int64_t)(rng_next(&rng) % 8), pc = 1 + (int64_t)(rng_next(&rng) % 8);
        int64_t sr = pr * (1 + (int64_t)(rng_next(&rng) % 3)), sc = pc * (1 + (int64_t)(rng_next(&rng) % 2));
        char shape[64], page[64], shard[64], desc[200];
        snprintf(shape, sizeof shape, "%lld,%lld", (long long)rows, (long long)cols);
        nd_dist_flags f = {.shape = shape, .grid = "8x2", .dtype = dtypes[rng_next(&rng) % 4]};
        int kind = (int)(rng_next(&rng) % 5);
        if (kind < 3) {
            f.einshard = splits[kind], f.uneven = true;
        } else if (kind == 3) {
            snprintf(page, sizeof page, "%lld,%lld", (long long)pr, (long long)pc);
            snprintf(shard, sizeof shard, "%lld,%lld", (long long)sr, (long long)sc);
            f.page = page, f.shard = shard;
        } else {
            snprintf(page, sizeof page, "1,%lld", (long long)cols);
            f.page = page, f.buffer = "dram", f.banks = "16", f.interleaved = true;
        }
        snprintf(desc, sizeof desc, "slice_random %s %s %s", shape, f.dtype,
                 kind < 3 ? f.einshard : kind == 3 ? "tiles" : "dram");
        slice_trip(dev, desc, &f);
    }
    test_seed = 0;
}

/* A Partial(sum) tensor from slices: part 0 the value, the others zeros, so the parts add up to the array;
 * read_local refuses it. */
static void slice_partial(nd_device *dev)
{
    nd_dist d;
    nd_tensor *t = NULL;
    nd_error err;
    test_case = "slice_partial";
    nd_dist_flags f = {.shape = "13,7", .grid = "8x2", .placements = "[Shard(0), Partial(sum)]", .mesh = "4,4"};
    int rc = make(dev, &f, &d, &t, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc)
        return;
    enum { ELEMS = 13 * 7 };
    static float v[ELEMS], parts[ELEMS], sum[ELEMS], slice[ELEMS];
    int64_t n = 0, count = 0;
    nd_elem_run *runs = check_runs(dev, t, &d, ELEMS, &n, &count);
    for (int i = 0; i < ELEMS; ++i)
        v[i] = (float)(i * 3) - 100.5f;
    for (int q = 0; q < 4; ++q) /* every part first holds the value: the write must clear parts 1 to 3 */
        CHECK(nd_tensor_write_part(t, q, v, sizeof v, &err) == 0, "%s", err.msg);
    gather_runs((const uint8_t *)v, runs, n, 4, (uint8_t *)slice);
    CHECK(nd_tensor_write_local_mpi(t, slice, count * 4, &err) == 0, "%s", err.msg);
    memset(sum, 0, sizeof sum);
    for (int q = 0; q < 4; ++q) {
        CHECK(nd_tensor_read_part(t, q, parts, sizeof parts, &err) == 0, "%s", err.msg);
        int nonzero = 0;
        for (int i = 0; i < ELEMS; ++i) {
            sum[i] += parts[i];
            nonzero += q > 0 && parts[i] != 0.0f;
        }
        CHECK(nonzero == 0, "part %d has %d elements not zero", q, nonzero);
    }
    CHECK(memcmp(sum, v, sizeof v) == 0, "the Partial tensor's parts do not add up to the array");
    rc = nd_tensor_read_local_mpi(t, slice, count * 4, &err);
    CHECK_ERROR(rc, err, ND_EREFUSED, "is Partial, 4 parts pending a sum");
    free(runs);
    nd_tensor_free(t);
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
    cfg.grid_x = 8, cfg.grid_y = 2, cfg.threads = 1, cfg.l1_bytes = 1 << 16, cfg.dram_banks = 16;
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
    /* each process's slice: the same uneven, padded, banked and copied distributions */
    slice_trip(dev, "slice_rows",
               &(nd_dist_flags){.shape = "13,37", .grid = "8x2", .einshard = "a b -> a8 b2", .uneven = true});
    slice_trip(dev, "slice_tiles",
               &(nd_dist_flags){.shape = "3,45,70", .grid = "8x2", .page = "1,4,8", .shard = "1,8,16"});
    slice_trip(dev, "slice_dram", &(nd_dist_flags){.shape = "3,45,70", .page = "1,1,70", .buffer = "dram",
                                                   .banks = "16", .interleaved = true});
    /* bf16, two copies of 8 cores: processes 0 and 1 hold copy 0, 1 and 2 copy 1 */
    slice_trip(dev, "slice_copies", &(nd_dist_flags){.shape = "6,10,9", .dtype = "bf16", .grid = "8x2",
                                                     .einshard = "a b c -> * a2 b4 c", .uneven = true});
    /* four copies of 4 cores: process 0 holds all of copy 0 and part of copy 1 (each element listed once) */
    slice_trip(dev, "slice_copies_same_process", &(nd_dist_flags){.shape = "5,300", .dtype = "bf16", .grid = "8x2",
                                                                  .einshard = "a b -> a2 * b4", .uneven = true});
    slice_partial(dev);
    slice_random(dev, 2026, 12);
    nd_device_close(dev);
    int failures = test_failures, any = 0;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_mpi_io on %d processes: ", nprocs);
    int rc = rank == 0 ? test_finish(22) : failures != 0;
    MPI_Finalize();
    return any ? 1 : rc;
}
