/* run_softplus LIBRARY: softplus on a 64x64 tensor, specialized and generic, against log1pf(expf(x)). */
#include <math.h>
#include <stdio.h>

#include "nd_runtime.h"

int main(int argc, char **argv)
{
    enum { N = 64 * 64 };
    static float x[N], y[N];
    nd_device_config cfg;
    nd_device *dev;
    nd_kernels *k;
    nd_dist_spec spec;
    nd_dist d;
    nd_tensor *t[2];
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = cfg.grid_y = 2;
    nd_dist_spec_init(&spec);
    spec.rank = spec.shard_rank = 2;
    spec.shape[0] = spec.shape[1] = 64;
    spec.shard[0] = 16, spec.shard[1] = 64;
    if (argc < 2 || nd_device_open(&cfg, &dev, &err) || nd_kernels_open(&k, &err) || nd_kernels_load(k, argv[1], &err) ||
        nd_dist_make(&spec, 2, 2, &d, &err) || nd_tensor_alloc(dev, &d, &t[0], &err) ||
        nd_tensor_alloc(dev, &d, &t[1], &err)) {
        fprintf(stderr, "run_softplus: %s\n", argc < 2 ? "usage: run_softplus LIBRARY" : err.msg);
        return 1;
    }
    for (int i = 0; i < N; ++i)
        x[i] = (float)(i % 41) / 4.0f - 5.0f;
    nd_tensor_write(t[0], x, sizeof x, &err);
    int failed = 0;
    const nd_variant variants[] = {ND_VARIANT_SPECIALIZED, ND_VARIANT_GENERIC};
    for (int v = 0; v < 2; ++v) {
        nd_kernel_pick pick;
        if (nd_run(dev, k, "softplus", t, 2, NULL, 0, variants[v], &pick, NULL, &err)) {
            fprintf(stderr, "run_softplus: %s\n", err.msg);
            return 1;
        }
        nd_tensor_read(t[1], y, sizeof y, &err);
        int bad = 0;
        for (int i = 0; i < N; ++i)
            bad += y[i] != log1pf(expf(x[i]));
        printf("%s: softplus(%g) = %g; %d of %d elements differ from log1pf(expf(x))\n", pick.symbol, (double)x[0],
               (double)y[0], bad, N);
        failed += bad != 0;
    }
    printf("%d passed, %d failed\n", 2 - failed, failed);
    nd_tensor_free(t[0]);
    nd_tensor_free(t[1]);
    nd_kernels_close(k);
    nd_device_close(dev);
    return failed != 0;
}
