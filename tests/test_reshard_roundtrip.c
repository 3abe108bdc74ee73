/*
 * test_reshard_roundtrip.c LIBRARY [cases [seed]] - reshard A -> B -> A over random pairs of
 * distributions of one tensor (any rank to 6, page kind, grid, strategy, orientation, core list, L1
 * or DRAM, every dtype): B and the round trip hold the host's bytes exactly.
 */
#include <string.h>

#include "nd_runtime.h"
#include "oracle.h"
#include "testutil.h"

static int64_t passed;
static nd_kernels *kernels;

/* A second random distribution with a's shape and dtype. */
static void other_dist(uint64_t *rng, const nd_dist_spec *a, nd_dist_spec *b, int *gx, int *gy)
{
    char ignored[1024];
    do
        oracle_random_spec(rng, 6, 1, b, gx, gy, ignored, sizeof ignored);
    while (b->rank != a->rank);
    memcpy(b->shape, a->shape, sizeof b->shape);
    b->dtype = a->dtype;
}

static void one_case(uint64_t *rng, char *desc)
{
    nd_dist_spec sa, sb;
    nd_dist da, db;
    nd_error err;
    int ax, ay, bx, by;
    oracle_random_spec(rng, 6, 4000, &sa, &ax, &ay, desc, 1024);
    other_dist(rng, &sa, &sb, &bx, &by);
    if (nd_dist_make(&sa, ax, ay, &da, &err) || nd_dist_make(&sb, bx, by, &db, &err)) {
        CHECK(0, "distributions: %s", err.msg);
        return;
    }
    nd_device_config cfg;
    nd_device_config_init(&cfg);
    cfg.threads = 2;
    cfg.grid_x = cfg.grid_y = cfg.dram_banks = 1;
    const nd_dist *ds[] = {&da, &db};
    const int gxs[] = {ax, bx}, gys[] = {ay, by};
    for (int i = 0; i < 2; ++i) { /* the grid holds both; each DRAM bank has a core to write it */
        cfg.grid_x = gxs[i] > cfg.grid_x ? gxs[i] : cfg.grid_x;
        if (ds[i]->spec.buffer == ND_DRAM)
            cfg.dram_banks = gxs[i] > cfg.dram_banks ? gxs[i] : cfg.dram_banks;
        else
            cfg.grid_y = gys[i] > cfg.grid_y ? gys[i] : cfg.grid_y;
    }
    cfg.l1_bytes = cfg.dram_bank_bytes = 2 * (da.bytes_per_core + db.bytes_per_core) + 4096;
    nd_device *dev;
    nd_tensor *a, *b, *back;
    if (nd_device_open(&cfg, &dev, &err) || nd_tensor_alloc(dev, &da, &a, &err) || nd_tensor_alloc(dev, &db, &b, &err) ||
        nd_tensor_alloc(dev, &da, &back, &err)) {
        CHECK(0, "setup: %s", err.msg);
        return;
    }
    int64_t bytes = da.elem_bytes;
    for (int i = 0; i < sa.rank; ++i)
        bytes *= sa.shape[i];
    uint8_t *host = malloc((size_t)bytes), *got = malloc((size_t)bytes);
    for (int64_t i = 0; i < bytes; ++i)
        host[i] = (uint8_t)rng_next(rng); /* any bits, NaN patterns included: reshard moves, never computes */
    nd_tensor_write(a, host, bytes, &err);
    int rc = nd_run(&(nd_launch_desc){.device = dev, .kernels = kernels, .op = "reshard",
                                      .tensors = (nd_tensor *[]){a, b}, .ntensors = 2}, &err);
    CHECK(rc == 0, "A -> B: %s", err.msg);
    nd_tensor_read(b, got, bytes, &err);
    CHECK(memcmp(host, got, (size_t)bytes) == 0, "B differs from the host data");
    rc = nd_run(&(nd_launch_desc){.device = dev, .kernels = kernels, .op = "reshard",
                                  .tensors = (nd_tensor *[]){b, back}, .ntensors = 2}, &err);
    CHECK(rc == 0, "B -> A: %s", err.msg);
    nd_tensor_read(back, got, bytes, &err);
    CHECK(memcmp(host, got, (size_t)bytes) == 0, "the round trip differs from the host data");
    free(host);
    free(got);
    nd_tensor_free(a);
    nd_tensor_free(b);
    nd_tensor_free(back);
    nd_device_close(dev);
    ++passed;
}

int main(int argc, char **argv)
{
    nd_error err;
    if (argc < 2 || nd_kernels_open(&kernels, &err) || nd_kernels_load(kernels, argv[1], &err)) {
        fprintf(stderr, "usage: test_reshard_roundtrip LIBRARY [cases [seed]]\n");
        return 1;
    }
    test_run_cases(argc - 1, argv + 1, 300, 0x5eed0005, one_case);
    nd_kernels_close(kernels);
    return test_finish(passed);
}
