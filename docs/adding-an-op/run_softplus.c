/* run_softplus LIBRARY: softplus and silu on a 64x64 tensor, specialized and generic, within 1e-6
 * (relative) of log(1 + exp(x)) and x / (1 + exp(-x)) computed in double; square in each dtype against x * x, exact on small integers;
 * rms_norm with its launch scalar eps against the formula, and refused without it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nd_runtime.h"

/* x * x for x in -8..7 (0..15 for u8), stored as the dtype stores it: bf16 as an f32's top half. */
static double value(nd_dtype dt, int i) { return dt == ND_U8 ? i % 16 : i % 16 - 8; }

static void store(nd_dtype dt, uint8_t *p, double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    if (dt == ND_F32)
        memcpy(p, &f, 4);
    else if (dt == ND_BF16)
        p[0] = (uint8_t)(u >> 16), p[1] = (uint8_t)(u >> 24);
    else if (dt == ND_I32)
        memcpy(p, &(int32_t){(int32_t)v}, 4);
    else
        p[0] = (uint8_t)v;
}

/* Square in each dtype, specialized and generic: the number of runs that differ from x * x. */
static int run_square(nd_device *dev, nd_kernels *k, const nd_dist_spec *like)
{
    enum { N = 64 * 64 };
    static uint8_t x[N * 4], y[N * 4], want[N * 4];
    const nd_dtype dtypes[] = {ND_F32, ND_BF16, ND_I32, ND_U8};
    int failed = 0;
    for (int j = 0; j < 4; ++j) {
        nd_dist_spec spec = *like;
        nd_dist d;
        nd_tensor *t[2];
        nd_error err;
        spec.dtype = dtypes[j];
        int size = nd_dtype_size(spec.dtype);
        for (int i = 0; i < N; ++i) {
            store(spec.dtype, x + i * size, value(spec.dtype, i));
            store(spec.dtype, want + i * size, value(spec.dtype, i) * value(spec.dtype, i));
        }
        if (nd_dist_make(&spec, 2, 2, &d, &err) || nd_tensor_alloc(dev, &d, &t[0], &err) ||
            nd_tensor_alloc(dev, &d, &t[1], &err) || nd_tensor_write(t[0], x, (size_t)N * size, &err)) {
            fprintf(stderr, "run_softplus: %s\n", err.msg);
            return 8;
        }
        const nd_variant variants[] = {ND_VARIANT_SPECIALIZED, ND_VARIANT_GENERIC};
        for (int v = 0; v < 2; ++v) {
            nd_kernel_pick pick = {0};
            int rc = nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "square", .tensors = t,
                                              .ntensors = 2, .variant = variants[v], .pick = &pick}, &err) ||
                     nd_tensor_read(t[1], y, (size_t)N * size, &err);
            int bad = rc || memcmp(y, want, (size_t)N * size) != 0;
            printf("%s: %s\n", rc ? err.msg : pick.symbol ? pick.symbol : "?", bad ? "differs from x * x" : "equals x * x");
            failed += bad;
        }
        nd_tensor_free(t[0]);
        nd_tensor_free(t[1]);
    }
    return failed;
}

/* rms_norm with eps = 1e-5, specialized and generic: each within 1e-5 of x / sqrt(mean(x * x) + eps),
 * the two bit for bit alike; and a launch without its scalar refused. The number of failed checks. */
static int run_rms_norm(nd_device *dev, nd_kernels *k, nd_tensor **t)
{
    enum { N = 64 * 64 };
    static float x[N], y[2][N];
    nd_error err;
    int failed = 0;
    for (int i = 0; i < N; ++i)
        x[i] = (float)(i % 29) / 8.0f - 1.5f;
    nd_tensor_write(t[0], x, sizeof x, &err);
    const nd_variant variants[] = {ND_VARIANT_SPECIALIZED, ND_VARIANT_GENERIC};
    for (int v = 0; v < 2; ++v) {
        nd_kernel_pick pick = {0};
        if (nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "rms_norm", .tensors = t, .ntensors = 2,
                                     .scalars = (double[]){1e-5}, .nscalars = 1, .variant = variants[v],
                                     .pick = &pick}, &err) ||
            nd_tensor_read(t[1], y[v], sizeof y[v], &err)) {
            printf("rms_norm: %s\n", err.msg);
            failed++;
            continue;
        }
        int bad = 0;
        for (int r = 0; r < 64; ++r) {
            double sum = 0;
            for (int j = 0; j < 64; ++j)
                sum += (double)x[r * 64 + j] * x[r * 64 + j];
            for (int j = 0; j < 64; ++j) {
                double want = x[r * 64 + j] / sqrt(sum / 64 + 1e-5);
                bad += fabs(y[v][r * 64 + j] - want) > 1e-5 * (1 + fabs(want));
            }
        }
        printf("%s: %d of %d elements differ from x / sqrt(mean(x * x) + eps)\n", pick.symbol, bad, N);
        failed += bad != 0;
    }
    int same = memcmp(y[0], y[1], sizeof y[0]) == 0;
    printf("rms_norm: specialized and generic %s\n", same ? "agree bit for bit" : "differ");
    failed += !same;
    int refused = nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "rms_norm", .tensors = t, .ntensors = 2},
                         &err) != 0;
    printf("rms_norm without eps: %s\n", refused ? err.msg : "ran, but should have been refused");
    int out_of_range = nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "rms_norm", .tensors = t,
                                                .ntensors = 2, .scalars = (double[]){0}, .nscalars = 1}, &err) != 0;
    printf("rms_norm with eps = 0: %s\n", out_of_range ? err.msg : "ran, but should have been refused");
    return failed + !refused + !out_of_range;
}

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
    for (int op = 0; op < 2; ++op)
        for (int v = 0; v < 2; ++v) {
            nd_kernel_pick pick;
            if (nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = op ? "silu" : "softplus", .tensors = t,
                                         .ntensors = 2, .variant = variants[v], .pick = &pick}, &err)) {
                fprintf(stderr, "run_softplus: %s\n", err.msg);
                return 1;
            }
            nd_tensor_read(t[1], y, sizeof y, &err);
            int bad = 0; /* within 1e-6, relative: the kernels may compute expf their own way */
            for (int i = 0; i < N; ++i) {
                double want = op ? x[i] / (1.0 + exp(-(double)x[i])) : log1p(exp((double)x[i]));
                bad += fabs(y[i] - want) > 1e-6 * (fabs(want) + 1e-3);
            }
            printf("%s: %s(%g) = %g; %d of %d elements differ from %s\n", pick.symbol, op ? "silu" : "softplus",
                   (double)x[0], (double)y[0], bad, N, op ? "x / (1 + exp(-x))" : "log(1 + exp(x))");
            failed += bad != 0;
        }
    failed += run_rms_norm(dev, k, t);
    nd_tensor_free(t[0]);
    nd_tensor_free(t[1]);
    failed += run_square(dev, k, &spec);
    printf("%d passed, %d failed\n", 17 - failed, failed);
    nd_kernels_close(k);
    nd_device_close(dev);
    return failed != 0;
}
