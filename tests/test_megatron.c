/*
 * test_megatron.c - the Megatron MLP of specs/examples/megatron.lua, end to end on 8 virtual cores:
 * Z = relu(X @ W1) @ W2 with X replicated, W1 'x y -> x y*' and W2 'y z -> y* z', Z Partial, resolved
 * by one all_reduce. Both the specialized and the generic kernels must give the plain reference's
 * result exactly, and the traffic must be the plan's: the two contractions read only local pages, and
 * the all_reduce reads the 7 other parts of Z on each core.
 */
#include <string.h>

#include "nd_runtime.h"
#include "megatron_ref.h"
#include "testutil.h"

enum { B = MEG_B, X = MEG_X, Y = MEG_Y, Z = MEG_Z, CORES = 8 };

typedef struct model {
    nd_device *dev;
    nd_tensor *x, *w1, *y, *h, *w2, *z, *zr;
} model;

static int tensor(nd_device *dev, const char *shape, const char *einshard, const char *placements, nd_tensor **out,
                  nd_error *err)
{
    nd_dist_flags f = {.shape = shape, .grid = "8x1", .einshard = einshard, .placements = placements,
                       .mesh = placements ? "8" : NULL};
    nd_dist d;
    return nd_dist_from_flags(&f, &d, err) || nd_tensor_alloc(dev, &d, out, err);
}

static int build(model *m, nd_error *err)
{
    nd_device_config cfg;
    nd_device_config_init(&cfg);
    cfg.grid_x = CORES;
    cfg.grid_y = 1;
    cfg.threads = 2;
    memset(m, 0, sizeof *m);
    return nd_device_open(&cfg, &m->dev, err) || tensor(m->dev, "8,128", "... -> * ...", NULL, &m->x, err) ||
           tensor(m->dev, "128,256", "x y -> x y*", NULL, &m->w1, err) ||
           tensor(m->dev, "8,256", "b y -> b y*", NULL, &m->y, err) ||
           tensor(m->dev, "8,256", "b y -> b y*", NULL, &m->h, err) ||
           tensor(m->dev, "256,64", "y z -> y* z", NULL, &m->w2, err) ||
           tensor(m->dev, "8,64", NULL, "[Partial(sum)]", &m->z, err) ||
           tensor(m->dev, "8,64", "... -> * ...", NULL, &m->zr, err);
}

static void release(model *m)
{
    nd_tensor *all[] = {m->x, m->w1, m->y, m->h, m->w2, m->z, m->zr};
    for (size_t i = 0; i < sizeof all / sizeof *all; ++i)
        nd_tensor_free(all[i]);
    nd_device_close(m->dev);
}

/* Halves in [-1, 1]: every product and sum below is exact in f32, so results compare bit for bit. */
static void fill(float *v, int n)
{
    for (int i = 0; i < n; ++i)
        v[i] = (float)rng_range(&test_seed, -2, 2) / 2.0f;
}

/* One launch; returns the bytes its cores read from other cores. */
static int64_t launch(model *m, nd_kernels *k, const char *op, nd_tensor *a, nd_tensor *b, nd_tensor *out,
                      nd_variant want)
{
    nd_tensor *ts[3] = {a, b, out}; /* out NULL: a two-operand op, b its output */
    int n = out ? 3 : 2;
    nd_kernel_pick pick;
    nd_launch_stats st;
    nd_error err;
    int rc = nd_run(&(nd_launch_desc){.device = m->dev, .kernels = k, .op = op, .tensors = ts, .ntensors = n,
                                      .variant = want, .pick = &pick, .stats = &st}, &err);
    CHECK(rc == 0, "%s: %s", op, err.msg);
    CHECK(rc != 0 || pick.specialized == (want == ND_VARIANT_SPECIALIZED), "%s: picked %s", op, pick.symbol);
    return rc ? -1 : st.total.remote_bytes_read;
}

static void forward(model *m, nd_kernels *k, nd_variant want, const float *expect)
{
    static float got[B * Z];
    nd_error err;
    test_case = want == ND_VARIANT_SPECIALIZED ? "specialized" : "generic";
    int64_t r1 = launch(m, k, "matmul", m->x, m->w1, m->y, want);
    int64_t r2 = launch(m, k, "relu", m->y, m->h, NULL, want);
    int64_t r3 = launch(m, k, "matmul", m->h, m->w2, m->z, want);
    int64_t r4 = launch(m, k, "all_reduce", m->z, m->zr, NULL, want);
    CHECK(r1 == 0 && r2 == 0 && r3 == 0, "remote bytes %lld, %lld, %lld: the contractions and relu must read only "
          "local pages", (long long)r1, (long long)r2, (long long)r3);
    CHECK(r4 == (int64_t)CORES * (CORES - 1) * B * Z * 4, "all_reduce read %lld remote bytes; each core should read "
          "the 7 other parts of Z", (long long)r4);
    int rc = nd_tensor_read(m->z, got, sizeof got, &err);
    CHECK_ERROR(rc, err, ND_EREFUSED, "tensor read: the tensor is Partial"); /* reading the Partial Z whole */
    CHECK(nd_tensor_read(m->zr, got, sizeof got, &err) == 0, "%s", err.msg);
    int at = 0;
    while (at < B * Z && got[at] == expect[at])
        ++at;
    CHECK(at == B * Z, "Z differs from the reference at %d: %g, want %g", at, (double)got[at], (double)expect[at]);
}

int main(int argc, char **argv)
{
    static float x[B * X], w1[X * Y], w2[Y * Z], z[B * Z];
    model m;
    nd_kernels *k = NULL;
    nd_error err;
    test_seed = 20261121;
    if (argc != 2) {
        fprintf(stderr, "usage: test_megatron LIBRARY\n");
        return 2;
    }
    if (build(&m, &err) || nd_kernels_open(&k, &err) || nd_kernels_load(k, argv[1], &err)) {
        fprintf(stderr, "test_megatron: %s\n", err.msg);
        return 1;
    }
    fill(x, B * X);
    fill(w1, X * Y);
    fill(w2, Y * Z);
    megatron_reference(x, w1, w2, z);
    CHECK(nd_tensor_write(m.x, x, sizeof x, &err) == 0 && nd_tensor_write(m.w1, w1, sizeof w1, &err) == 0 &&
              nd_tensor_write(m.w2, w2, sizeof w2, &err) == 0, "%s", err.msg);
    forward(&m, k, ND_VARIANT_SPECIALIZED, z);
    forward(&m, k, ND_VARIANT_GENERIC, z);
    /* relu on the Partial Z would be wrong: the runtime refuses it */
    nd_tensor *bad[2] = {m.z, m.z};
    test_case = "relu of a Partial tensor";
    int rc = nd_run(&(nd_launch_desc){.device = m.dev, .kernels = k, .op = "relu", .tensors = bad, .ntensors = 2},
                    &err);
    CHECK_ERROR(rc, err, ND_EREFUSED, "is Partial, 8 parts pending a sum");
    /* matmul may leave a pending sum in its output, never a pending max: adding partial products and
     * then taking their max would be a wrong answer */
    nd_tensor *zmax = NULL;
    test_case = "matmul into a Partial(max) output";
    CHECK(tensor(m.dev, "8,64", NULL, "[Partial(max)]", &zmax, &err) == 0, "%s", err.msg);
    rc = nd_run(&(nd_launch_desc){.device = m.dev, .kernels = k, .op = "matmul",
                                  .tensors = (nd_tensor *[]){m.h, m.w2, zmax}, .ntensors = 3}, &err);
    CHECK_ERROR(rc, err, ND_EREFUSED, "op 'matmul': operand 'out' is Partial(max), but the op takes Partial operands "
                                      "only pending sum");
    test_case = "all_reduce (sum only here) of a Partial(max)";
    rc = nd_run(&(nd_launch_desc){.device = m.dev, .kernels = k, .op = "all_reduce",
                                  .tensors = (nd_tensor *[]){zmax, m.zr}, .ntensors = 2}, &err);
    CHECK_ERROR(rc, err, ND_EREFUSED, "operand 'in' is Partial(max), but the op takes Partial operands only pending "
                                      "sum");
    nd_tensor_free(zmax);
    nd_kernels_close(k);
    release(&m);
    return test_finish(5);
}
