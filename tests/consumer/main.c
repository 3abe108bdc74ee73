/* consumer LIBRARY: runs the consumer's ops, specialized and generic, against plain loops. */
#include <stdio.h>
#include <string.h>

#include "nd_runtime.h"

static int run(nd_device *dev, nd_kernels *k, const char *op, nd_tensor **t, nd_variant v, float *out, int n)
{
    nd_error err;
    nd_kernel_pick pick;
    if (nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = op, .tensors = t, .ntensors = 2, .variant = v,
                                 .pick = &pick}, &err) ||
        nd_tensor_read(t[1], out, n * 4, &err)) {
        fprintf(stderr, "%s: %s\n", op, err.msg);
        return -1;
    }
    return pick.specialized == (v == ND_VARIANT_SPECIALIZED) ? 0 : -1;
}

int main(int argc, char **argv)
{
    enum { N = 32 * 48 };
    static float x[N], g[N], s[N];
    nd_device_config cfg;
    nd_device *dev;
    nd_kernels *k;
    nd_tensor *t[2];
    nd_dist_spec spec;
    nd_dist d;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = cfg.grid_y = 2;
    nd_dist_spec_init(&spec);
    spec.rank = spec.shard_rank = 2;
    spec.shape[0] = 32, spec.shape[1] = 48, spec.shard[0] = 8, spec.shard[1] = 48;
    if (argc < 2 || nd_device_open(&cfg, &dev, &err) || nd_kernels_open(&k, &err) ||
        nd_kernels_load(k, argv[1], &err) || nd_dist_make(&spec, 2, 2, &d, &err) ||
        nd_tensor_alloc(dev, &d, &t[0], &err) || nd_tensor_alloc(dev, &d, &t[1], &err)) {
        fprintf(stderr, "consumer: %s\n", argc < 2 ? "usage: consumer LIBRARY" : err.msg);
        return 1;
    }
    for (int i = 0; i < N; ++i)
        x[i] = (float)(i % 17) - 8.0f;
    nd_tensor_write(t[0], x, sizeof x, &err);
    int passed = 0, failed = 0;
    const char *ops[] = {"affine", "square"};
    for (int o = 0; o < 2; ++o) {
        int bad = run(dev, k, ops[o], t, ND_VARIANT_GENERIC, g, N) || run(dev, k, ops[o], t, ND_VARIANT_SPECIALIZED, s, N);
        for (int i = 0; i < N && !bad; ++i)
            bad = g[i] != s[i] || g[i] != (o == 0 ? 3.0f * x[i] + 1.0f : x[i] * x[i]);
        passed += !bad;
        failed += bad;
    }
    printf("%d passed, %d failed\n", passed, failed);
    nd_tensor_free(t[0]);
    nd_tensor_free(t[1]);
    nd_kernels_close(k);
    nd_device_close(dev);
    return failed != 0;
}
