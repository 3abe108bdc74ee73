/*
 * nd_fixed_scalars_bench LIB [rounds] - what fixing launch scalars at generation buys: for every op
 * of LIB (bench/fixed_scalars.lua) with two specialized kernels on one distribution, one taking its
 * scalars at launch (t0) and one whose target fixed them (t1), times both side by side, alternating
 * which goes first each round, on the same tensors, and checks they write the same bytes.
 *
 * Prints per op the median time of each and the median, min and max of the per-round ratio
 * (launch-time / fixed). Working sets are 128 MiB, four times this machine's last-level cache, so
 * every launch starts from memory, in the same cache state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd_runtime.h"

enum { MAX_ROUNDS = 64 };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const nda_kernel_entry *find(nd_kernels *k, const char *op, const char *suffix)
{
    char want[256];
    snprintf(want, sizeof want, "nd_%s__f32__%s", op, suffix);
    for (int i = 0; i < nd_kernels_count(k); ++i)
        if (strcmp(nd_kernels_entry(k, i)->symbol, want) == 0)
            return nd_kernels_entry(k, i);
    return NULL;
}

static int alloc_operands(nd_device *dev, const nda_kernel_entry *e, nd_tensor **t, nd_error *err)
{
    for (int i = 0; i < 2; ++i) {
        nd_dist d;
        int gx, gy;
        if (nd_dist_from_signature(e->signatures[i], &d, &gx, &gy, err) || nd_dist_make(&d.spec, gx, gy, &d, err) ||
            nd_tensor_alloc(dev, &d, &t[i], err))
            return -1;
    }
    return 0;
}

static int64_t elems(const nd_tensor *t)
{
    const nd_dist_spec *s = &nd_tensor_dist(t)->spec;
    int64_t n = 1;
    for (int i = 0; i < s->rank; ++i)
        n *= s->shape[i];
    return n;
}

/* Both kernels of op, rounds times each; 0 when timed and equal. */
static int bench_op(nd_device *dev, nd_kernels *k, const char *op, int rounds, nd_error *err)
{
    const nda_kernel_entry *e[2] = {find(k, op, "t0"), find(k, op, "t1")};
    nd_tensor *t[2] = {NULL, NULL};
    double time[2][MAX_ROUNDS], ratio[MAX_ROUNDS];
    if (!e[0] || !e[1] || !e[1]->nscalar_values)
        return nd_fail(err, "%s: the library needs nd_%s__f32__t0 and __t1, t1 fixing scalars", op, op);
    if (alloc_operands(dev, e[0], t, err))
        return -1;
    int64_t n = elems(t[0]), m = elems(t[1]);
    float *in = malloc((size_t)n * 4), *out[2] = {calloc((size_t)m, 4), calloc((size_t)m, 4)};
    for (int64_t i = 0; i < n; ++i)
        in[i] = (float)((i * 7919) % 2003) / 64.0f - 15.0f;
    int rc = nd_tensor_write(t[0], in, n * 4, err);
    for (int r = 0; r < rounds && !rc; ++r)
        for (int j = 0; j < 2 && !rc; ++j) {
            int v = (r + j) % 2; /* who goes first alternates */
            nd_launch_stats st;
            rc = nd_launch_entry(dev, e[v], t, 2, e[1]->scalar_values, e[1]->nscalar_values, &st, err) ||
                 nd_tensor_read(t[1], out[v], m * 4, err);
            time[v][r] = st.seconds;
        }
    if (!rc && memcmp(out[0], out[1], (size_t)m * 4) != 0)
        rc = nd_fail(err, "%s: the two kernels wrote different results", op);
    if (!rc) {
        for (int r = 0; r < rounds; ++r)
            ratio[r] = time[0][r] / time[1][r];
        double lo = ratio[0], hi = ratio[0];
        for (int r = 1; r < rounds; ++r) {
            lo = ratio[r] < lo ? ratio[r] : lo;
            hi = ratio[r] > hi ? ratio[r] : hi;
        }
        double mr = median(ratio, rounds), t0 = median(time[0], rounds), t1 = median(time[1], rounds);
        printf("%-11s %10.2f %10.2f %8.3f  [%.3f, %.3f]\n", op, t0 * 1e3, t1 * 1e3, mr, lo, hi);
    }
    free(in);
    free(out[0]);
    free(out[1]);
    nd_tensor_free(t[0]);
    nd_tensor_free(t[1]);
    return rc;
}

int main(int argc, char **argv)
{
    static const char *const ops[] = {"sum_rows", "sum_cols", "max_cols", "transpose", "permute201"};
    if (argc < 2) {
        fprintf(stderr, "usage: nd_fixed_scalars_bench LIB [rounds (default 9, at most %d)]\n", MAX_ROUNDS);
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 9;
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "nd_fixed_scalars_bench: rounds must be 1 to %d\n", MAX_ROUNDS);
        return 2;
    }
    nd_error err;
    nd_kernels *k = NULL;
    nd_device *dev = NULL;
    nd_device_config cfg;
    nd_device_config_init(&cfg);
    cfg.l1_bytes = (int64_t)96 << 20; /* a 64 MiB shard per core */
    if (nd_kernels_open(&k, &err) || nd_kernels_load(k, argv[1], &err) || nd_device_open(&cfg, &dev, &err)) {
        fprintf(stderr, "nd_fixed_scalars_bench: %s\n", err.msg);
        return 1;
    }
    printf("%d threads, %d rounds; times in ms (median), ratio = scalars at launch / fixed (median [min, max])\n",
           nd_device_threads(dev), rounds);
    printf("%-11s %10s %10s %8s  %s\n", "op", "launch", "fixed", "ratio", "spread");
    int rc = 0;
    for (size_t i = 0; i < sizeof ops / sizeof *ops && !rc; ++i)
        rc = bench_op(dev, k, ops[i], rounds, &err);
    if (rc)
        fprintf(stderr, "nd_fixed_scalars_bench: %s\n", err.msg);
    nd_device_close(dev);
    nd_kernels_close(k);
    return rc != 0;
}
