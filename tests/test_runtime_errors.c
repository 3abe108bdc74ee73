/*
 * test_runtime_errors.c - the runtime refuses bad requests with a message and changes nothing:
 * a failed allocation leaves every arena as it was.
 */
#include <string.h>

#include "nd_runtime.h"
#include "testutil.h"

static int64_t passed;

static void expect_error(int rc, const nd_error *err, nd_errcode code, const char *want)
{
    CHECK_ERROR(rc, *err, code, want);
    ++passed;
}

static nd_dist dist(const char *shape, const char *shard, int gx, int gy, nd_buffer buffer)
{
    nd_dist_spec s;
    nd_dist d;
    nd_error err;
    nd_dist_spec_init(&s);
    s.buffer = buffer;
    if (nd_parse_dims("shape", shape, s.shape, &s.rank, &err) ||
        nd_parse_dims("shard", shard, s.shard, &s.shard_rank, &err) || nd_dist_make(&s, gx, gy, &d, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    return d;
}

static void config_errors(void)
{
    nd_device_config cfg;
    nd_device *dev = NULL;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = 0;
    expect_error(nd_device_open(&cfg, &dev, &err), &err, ND_EINVAL, "grid 0x8");
    nd_device_config_init(&cfg);
    cfg.l1_bytes = 0;
    expect_error(nd_device_open(&cfg, &dev, &err), &err, ND_EINVAL, "l1_bytes 0");
    cfg.l1_bytes = INT64_MAX / 2; /* over 64 cores: more than 64 bits */
    expect_error(nd_device_open(&cfg, &dev, &err), &err, ND_ERANGE, "must be positive and fit the address space");
    nd_device_config_init(&cfg);
    cfg.dram_bank_bytes = INT64_MAX / 4;
    expect_error(nd_device_open(&cfg, &dev, &err), &err, ND_ERANGE, "the total overflows the address space");
    nd_device_config_init(&cfg);
    cfg.threads = -1;
    expect_error(nd_device_open(&cfg, &dev, &err), &err, ND_EINVAL, "threads -1");
    CHECK(dev == NULL, "a failed open returned a device");
}

/* L1 of 16 KiB per core on a 2x2 grid; a [64,64] f32 tensor in [32,64] shards needs 8 KiB per core. */
static void capacity_errors(void)
{
    nd_device_config cfg;
    nd_device *dev;
    nd_tensor *a, *b, *c, *big;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = cfg.grid_y = 2;
    cfg.l1_bytes = 16 << 10;
    cfg.dram_banks = 2;
    cfg.dram_bank_bytes = 8 << 10;
    cfg.threads = 1;
    if (nd_device_open(&cfg, &dev, &err))
        exit(1);
    nd_dist half = dist("64,64", "32,64", 2, 2, ND_L1);       /* cores 0 and 1, 8 KiB each */
    nd_dist whole = dist("128,64", "64,64", 2, 2, ND_L1);     /* 16 KiB on cores 0 and 1 */
    nd_dist wide = dist("64,64", "64,64", 4, 4, ND_L1);       /* made for a bigger grid */
    nd_dist dram = dist("64,64", "64,64", 2, 1, ND_DRAM);     /* 16 KiB in one bank of 8 */
    expect_error(nd_tensor_alloc(dev, &dram, &big, &err), &err, ND_ENOMEM,
                 "dram: the tensor needs 16384 bytes per bank");
    expect_error(nd_tensor_alloc(dev, &wide, &big, &err), &err, ND_EINVAL, "leaves the device's 2x2 core grid");
    CHECK(nd_tensor_alloc(dev, &half, &a, &err) == 0 && nd_tensor_alloc(dev, &half, &b, &err) == 0, "%s", err.msg);
    expect_error(nd_tensor_alloc(dev, &half, &c, &err), &err, ND_ENOMEM, "core (0,0) has 0 bytes free in one piece");
    nd_tensor_free(a);
    expect_error(nd_tensor_alloc(dev, &whole, &big, &err), &err, ND_ENOMEM, "has 8192 bytes free in one piece");
    nd_tensor_free(b);
    /* The failed allocations left nothing behind: the whole arena is free again. */
    CHECK(nd_tensor_alloc(dev, &whole, &big, &err) == 0, "after frees: %s", err.msg);
    ++passed;

    float host[64 * 64] = {0};
    expect_error(nd_tensor_write(big, host, sizeof host, &err), &err, ND_EINVAL,
                 "tensor write: host array has 16384 bytes, but the f32 tensor needs 32768");
    expect_error(nd_tensor_read(big, host, 7, &err), &err, ND_EINVAL, "tensor read: host array has 7 bytes");
    nd_tensor *many[17];
    for (int i = 0; i < 17; ++i)
        many[i] = big;
    expect_error(nd_launch(dev, NULL, many, 17, NULL, 0, NULL, &err), &err, ND_EINVAL, "launch: 17 tensors");
    nd_tensor_free(big);
    nd_device_close(dev);
}

int main(void)
{
    config_errors();
    capacity_errors();
    return test_finish(passed);
}
