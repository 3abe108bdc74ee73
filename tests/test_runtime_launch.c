/*
 * test_runtime_launch.c - kernels written against the generic accessor, launched on the thread pool.
 *
 * The kernel computes out = 3 * in + 1 (i32) owner-computes: each core walks the output pages it
 * holds and reads the same page of the input wherever it lives. Input and output are distributed
 * differently, so many reads are remote. Checked against plain loops over contiguous arrays, with
 * local/remote counts checked against the oracle, on 1, 2 and 7 threads (identical results and
 * statistics), and on a 64x64 grid of virtual cores on 2 threads.
 */
#include <stdlib.h>
#include <string.h>

#include "nd_runtime.h"
#include "oracle.h"
#include "testutil.h"

static int64_t passed;

static void affine_kernel(const nda_core *core, const nda_args *args)
{
    const nda_tensor *in = &args->tensors[0], *out = &args->tensors[1];
    int64_t n = out->page_bytes / (int64_t)sizeof(int32_t);
    for (nda_iter it = nda_iter_local(core, out); nda_iter_valid(&it); nda_iter_next(&it)) {
        const int32_t *src = nda_page_read(core, in, nda_iter_page(&it));
        int32_t *dst = (int32_t *)nda_iter_ptr(&it);
        for (int64_t e = 0; e < n; ++e)
            dst[e] = src[e] * 3 + 1;
    }
}

/* A second distribution of the same tensor and page box: new shard, cores, strategy, orientation. */
static void redistribute(uint64_t *rng, const nd_dist_spec *a, int gx, int gy, nd_dist_spec *b)
{
    *b = *a;
    b->buffer = ND_L1; /* the output is written by its owners, so it lives in L1 */
    b->interleaved = rng_range(rng, 0, 4) == 0;
    for (int i = 0; i < a->rank; ++i)
        b->shard[i] = a->page[i] * rng_range(rng, 1, 3);
    b->strategy = rng_range(rng, 0, 1) ? ND_CONTIGUOUS : ND_ROUND_ROBIN;
    b->cores.orientation = rng_range(rng, 0, 1) ? ND_COL_MAJOR : ND_ROW_MAJOR;
    b->cores.nranges = 0;
    if (rng_range(rng, 0, 1)) {
        b->cores.nranges = 1;
        b->cores.ranges[0] = (nd_core_range){{0, 0}, {(int32_t)rng_range(rng, 0, gx - 1), (int32_t)rng_range(rng, 0, gy - 1)}};
    }
}

/* Two distributions of one i32 tensor with the same page box, on a gx x gy device. */
static void random_pair(uint64_t *rng, nd_dist *a, nd_dist *b, int *gx, int *gy, char *desc)
{
    nd_dist_spec sa, sb;
    nd_error err;
    int ax, ay;
    oracle_random_spec(rng, 5, 4000, &sa, &ax, &ay, desc, 1024);
    sa.dtype = ND_I32;
    *gx = sa.buffer == ND_DRAM ? (int)rng_range(rng, 1, 8) : ax;
    *gy = sa.buffer == ND_DRAM ? (int)rng_range(rng, 1, 8) : ay;
    if (nd_dist_make(&sa, ax, ay, a, &err)) {
        fprintf(stderr, "%s: %s\n", desc, err.msg);
        exit(1);
    }
    sa = a->spec; /* resolved page box, as a general box */
    sa.page_kind = ND_PAGE_BOX;
    redistribute(rng, &sa, *gx, *gy, &sb);
    if (nd_dist_make(&sb, *gx, *gy, b, &err)) {
        fprintf(stderr, "%s: output: %s\n", desc, err.msg);
        exit(1);
    }
}

/* Pages of b whose owner core also holds the same page of a, by the oracle. */
static int64_t expected_local_reads(const nd_dist *a, const nd_dist *b, int gx, int gy)
{
    oracle oa, ob;
    int64_t local = 0, coord[ND_MAX_RANK], x[ND_MAX_RANK];
    oracle_init(&oa, &a->spec, a->spec.buffer == ND_DRAM ? 12 : gx, a->spec.buffer == ND_DRAM ? 1 : gy);
    oracle_init(&ob, &b->spec, gx, gy);
    for (int64_t p = 0; p < b->layout.num_pages; ++p) {
        nd_dist_page_coord(b, p, coord);
        for (int i = 0; i < b->spec.rank; ++i)
            x[i] = coord[i] * b->spec.page[i];
        oracle_place pa = oracle_element(&oa, x), pb = oracle_element(&ob, x);
        local += a->spec.buffer == ND_L1 && pa.xy.x == pb.xy.x && pa.xy.y == pb.xy.y;
    }
    oracle_free(&oa);
    oracle_free(&ob);
    return local;
}

typedef struct run_result {
    int32_t *out;
    nda_stats *per_core;
    nd_launch_stats stats;
} run_result;

static run_result run(nd_device *dev, nd_tensor *in, nd_tensor *out, int64_t n)
{
    run_result r;
    nd_error err;
    nd_tensor *ts[] = {in, out};
    int rc = nd_launch(dev, affine_kernel, ts, 2, NULL, 0, &r.stats, &err);
    CHECK(rc == 0, "launch: %s", err.msg);
    r.out = malloc((size_t)n * sizeof *r.out);
    CHECK(nd_tensor_read(out, r.out, n * (int64_t)sizeof *r.out, &err) == 0, "read: %s", err.msg);
    r.per_core = malloc((size_t)r.stats.ncores * sizeof *r.per_core);
    memcpy(r.per_core, r.stats.per_core, (size_t)r.stats.ncores * sizeof *r.per_core);
    return r;
}

static void one_case(uint64_t *rng, char *desc)
{
    nd_dist a, b;
    int gx, gy;
    nd_error err;
    random_pair(rng, &a, &b, &gx, &gy, desc);
    nd_device_config cfg;
    nd_device_config_init(&cfg);
    cfg.grid_x = gx, cfg.grid_y = gy, cfg.threads = 1;
    cfg.l1_bytes = (a.bytes_per_core > b.bytes_per_core ? a.bytes_per_core : b.bytes_per_core) * 2 + 4096;
    nd_device *dev;
    nd_tensor *in, *out;
    if (nd_device_open(&cfg, &dev, &err) || nd_tensor_alloc(dev, &a, &in, &err) || nd_tensor_alloc(dev, &b, &out, &err)) {
        CHECK(0, "setup: %s", err.msg);
        return;
    }
    int64_t n = 1;
    for (int i = 0; i < a.spec.rank; ++i)
        n *= a.spec.shape[i];
    int32_t *host = malloc((size_t)n * sizeof *host);
    for (int64_t i = 0; i < n; ++i)
        host[i] = (int32_t)rng_range(rng, -1000, 1000);
    CHECK(nd_tensor_write(in, host, n * (int64_t)sizeof *host, &err) == 0, "write: %s", err.msg);

    static const int threads[] = {1, 2, 7};
    run_result first = {0};
    for (int k = 0; k < 3; ++k) {
        CHECK(nd_device_set_threads(dev, threads[k], &err) == 0, "threads: %s", err.msg);
        run_result r = run(dev, in, out, n);
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; ++i)
            wrong += r.out[i] != host[i] * 3 + 1; /* the reference: a plain loop */
        CHECK(wrong == 0, "%d threads: %" PRId64 " of %" PRId64 " elements differ from the reference", threads[k],
              wrong, n);
        CHECK(r.stats.total.pages_written == 0 && r.stats.total.remote_pages_written == 0, "writes through iterator");
        int64_t reads = r.stats.total.local_pages_read + r.stats.total.remote_pages_read;
        CHECK(reads == b.layout.num_pages, "%" PRId64 " page reads for %" PRId64 " pages", reads, b.layout.num_pages);
        if (k == 0) {
            int64_t want = expected_local_reads(&a, &b, gx, gy);
            CHECK(r.stats.total.local_pages_read == want, "%" PRId64 " local reads, oracle says %" PRId64,
                  r.stats.total.local_pages_read, want);
            first = r;
            continue;
        }
        CHECK(memcmp(first.out, r.out, (size_t)n * sizeof *r.out) == 0, "%d threads: results differ", threads[k]);
        CHECK(memcmp(first.per_core, r.per_core, (size_t)r.stats.ncores * sizeof *r.per_core) == 0,
              "%d threads: per-core statistics differ", threads[k]);
        free(r.out);
        free(r.per_core);
    }
    free(first.out);
    free(first.per_core);
    free(host);
    nd_tensor_free(in);
    nd_tensor_free(out);
    nd_device_close(dev);
    ++passed;
}

/* 4096 virtual cores on 2 threads: every core runs, and the answer is right. */
static void many_cores(void)
{
    nd_device_config cfg;
    nd_device *dev;
    nd_tensor *in, *out;
    nd_error err;
    nd_dist a, b;
    nd_dist_spec s;
    test_seed = 0;
    test_case = "64x64 grid, [256,256] i32, pages [1,4]: [4,4] shards col-major read from [2,8] shards, 2 threads";
    nd_device_config_init(&cfg);
    cfg.grid_x = cfg.grid_y = 64;
    cfg.l1_bytes = 64 << 10;
    cfg.threads = 2;
    nd_dist_spec_init(&s);
    s.rank = s.shard_rank = 2;
    s.dtype = ND_I32;
    s.shape[0] = s.shape[1] = 256;
    s.page_kind = ND_PAGE_BOX, s.page_rank = 2, s.page[0] = 1, s.page[1] = 4;
    s.shard[0] = 2, s.shard[1] = 8; /* 128 x 32 = 4096 shards */
    if (nd_dist_make(&s, 64, 64, &a, &err))
        exit(1);
    s.shard[0] = 4, s.shard[1] = 4; /* 64 x 64 = 4096 shards */
    s.cores.orientation = ND_COL_MAJOR;
    if (nd_dist_make(&s, 64, 64, &b, &err) || nd_device_open(&cfg, &dev, &err) || nd_tensor_alloc(dev, &a, &in, &err) ||
        nd_tensor_alloc(dev, &b, &out, &err)) {
        CHECK(0, "setup: %s", err.msg);
        return;
    }
    int64_t n = 256 * 256;
    int32_t *host = malloc((size_t)n * sizeof *host);
    for (int64_t i = 0; i < n; ++i)
        host[i] = (int32_t)(i * 7 - 5000);
    nd_tensor_write(in, host, n * 4, &err);
    run_result r = run(dev, in, out, n);
    int64_t wrong = 0, busy = 0;
    for (int64_t i = 0; i < n; ++i)
        wrong += r.out[i] != host[i] * 3 + 1;
    for (int64_t c = 0; c < r.stats.ncores; ++c)
        busy += r.per_core[c].local_pages_read + r.per_core[c].remote_pages_read > 0;
    CHECK(wrong == 0, "%" PRId64 " elements differ from the reference", wrong);
    CHECK(r.stats.ncores == 4096 && busy == 4096, "%" PRId64 " of %" PRId64 " cores did work", busy, r.stats.ncores);
    free(r.out);
    free(r.per_core);
    free(host);
    nd_tensor_free(in);
    nd_tensor_free(out);
    nd_device_close(dev);
    ++passed;
}

int main(int argc, char **argv)
{
    test_run_cases(argc, argv, 150, 0x5eed0003, one_case);
    many_cores();
    return test_finish(passed);
}
