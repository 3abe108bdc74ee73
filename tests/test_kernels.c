/*
 * test_kernels.c LIBRARY - every specialized kernel of a generated library against its op's generic
 * kernel, on the target's own distributions: outputs bit-identical, per-core statistics identical,
 * and the generic output equal to a plain reference loop over contiguous arrays. Also checks that
 * the runtime picks each specialized kernel by its distributions, falls back to the generic one, and
 * explains a forced specialized launch that has no match.
 */
#include <dlfcn.h>
#include <math.h>
#include <string.h>

#include "nd_runtime.h"
#include "testutil.h"

static int64_t passed;

/* ---------------------------------------------------------------- references on contiguous arrays */

/* Each op's scalar function, written out here independently of the specs. */
static float f_relu(const float *v) { return v[0] > 0.0f ? v[0] : 0.0f; }
static float f_gelu(const float *v) { return 0.5f * v[0] * (1.0f + erff(v[0] * 0.70710678f)); }
static float f_exp(const float *v) { return expf(v[0]); }
static float f_log(const float *v) { return logf(v[0]); }
static float f_sqrt(const float *v) { return sqrtf(v[0]); }
static float f_neg(const float *v) { return -v[0]; }
static float f_abs(const float *v) { return fabsf(v[0]); }
static float f_sigmoid(const float *v) { return 1.0f / (1.0f + expf(-v[0])); }
static float f_tanh(const float *v) { return tanhf(v[0]); }
static float f_copy(const float *v) { return v[0]; }
static float f_add(const float *v) { return v[0] + v[1]; }
static float f_sub(const float *v) { return v[0] - v[1]; }
static float f_mul(const float *v) { return v[0] * v[1]; }
static float f_div(const float *v) { return v[0] / v[1]; }
static float f_max(const float *v) { return fmaxf(v[0], v[1]); }
static float f_min(const float *v) { return fminf(v[0], v[1]); }
static float f_mul_add(const float *v) { return v[0] * v[1] + v[2]; }
static float f_lerp(const float *v) { return v[0] + (v[1] - v[0]) * v[2]; }
static float f_clamp(const float *v) { return fminf(fmaxf(v[0], v[1]), v[2]); }

typedef float scalar_fn(const float *v);

static const struct {
    const char *op;
    scalar_fn *fn;
} references[] = {
    {"relu", f_relu}, {"gelu", f_gelu}, {"exp", f_exp}, {"log", f_log}, {"sqrt", f_sqrt}, {"neg", f_neg},
    {"abs", f_abs}, {"sigmoid", f_sigmoid}, {"tanh", f_tanh}, {"page_copy", f_copy}, {"add", f_add},
    {"sub", f_sub}, {"mul", f_mul}, {"div", f_div}, {"max", f_max}, {"min", f_min}, {"mul_add", f_mul_add},
    {"lerp", f_lerp}, {"clamp", f_clamp},
};

static scalar_fn *reference_of(const char *op)
{
    for (size_t i = 0; i < sizeof references / sizeof *references; ++i)
        if (strcmp(references[i].op, op) == 0)
            return references[i].fn;
    return NULL;
}

/* Plain loops: every output element from its inputs, found by numpy broadcasting in row-major arrays. */
static void reference(scalar_fn *fn, float *out, const float *const *in, const nd_dist *d, int nin)
{
    const nd_dist_spec *o = &d[nin].spec;
    int64_t n = 1, x[ND_MAX_RANK] = {0};
    for (int i = 0; i < o->rank; ++i)
        n *= o->shape[i];
    for (int64_t e = 0; e < n; ++e) {
        float v[8];
        for (int k = 0; k < nin; ++k) {
            const nd_dist_spec *s = &d[k].spec;
            int64_t idx = 0;
            for (int i = 0; i < s->rank; ++i)
                idx = idx * s->shape[i] + (s->shape[i] == 1 ? 0 : x[i + o->rank - s->rank]);
            v[k] = in[k][idx];
        }
        out[e] = fn(v);
        for (int i = o->rank - 1; i >= 0 && ++x[i] == o->shape[i]; --i)
            x[i] = 0;
    }
}

/* ---------------------------------------------------------------- one target */

typedef struct setup {
    nd_device *dev;
    nd_tensor *t[8];
    nd_dist d[8];
    int n;
    int64_t elems[8]; /* per operand */
} setup;

static int make_setup(const nda_kernel_entry *e, setup *s, nd_error *err)
{
    nd_device_config cfg;
    int64_t per_core = 0;
    nd_device_config_init(&cfg);
    cfg.grid_x = cfg.grid_y = cfg.dram_banks = 1;
    cfg.threads = 2;
    memset(s, 0, sizeof *s);
    s->n = e->noperands;
    for (int i = 0; i < s->n; ++i) {
        int gx, gy;
        if (nd_dist_from_signature(e->signatures[i], &s->d[i], &gx, &gy, err))
            return -1;
        if (s->d[i].spec.buffer == ND_DRAM)
            cfg.dram_banks = gx > cfg.dram_banks ? gx : cfg.dram_banks;
        else
            cfg.grid_x = gx > cfg.grid_x ? gx : cfg.grid_x, cfg.grid_y = gy > cfg.grid_y ? gy : cfg.grid_y;
        per_core += s->d[i].bytes_per_core + 64;
    }
    cfg.l1_bytes = cfg.dram_bank_bytes = per_core + 4096;
    if (nd_device_open(&cfg, &s->dev, err))
        return -1;
    for (int i = 0; i < s->n; ++i)
        if (nd_tensor_alloc(s->dev, &s->d[i], &s->t[i], err))
            return -1;
    for (int k = 0; k < s->n; ++k) {
        s->elems[k] = 1;
        for (int i = 0; i < s->d[k].spec.rank; ++i)
            s->elems[k] *= s->d[k].spec.shape[i];
    }
    return 0;
}

static void free_setup(setup *s)
{
    for (int i = 0; i < s->n; ++i)
        nd_tensor_free(s->t[i]);
    nd_device_close(s->dev);
}

/* Runs op with variant want; returns the output (last operand) gathered, and the per-core stats. */
static float *run(const nd_kernels *k, setup *s, const char *op, nd_variant want, nd_kernel_pick *pick,
                  nda_stats **stats)
{
    nd_error err;
    nd_launch_stats ls;
    int64_t n = s->elems[s->n - 1];
    float *zero = calloc((size_t)n, sizeof *zero), *out = malloc((size_t)n * sizeof *out);
    nd_tensor_write(s->t[s->n - 1], zero, n * 4, &err);
    int rc = nd_run(s->dev, k, op, s->t, s->n, NULL, 0, want, pick, &ls, &err);
    CHECK(rc == 0, "%s: %s", op, err.msg);
    nd_tensor_read(s->t[s->n - 1], out, n * 4, &err);
    *stats = malloc((size_t)ls.ncores * sizeof **stats);
    memcpy(*stats, ls.per_core, (size_t)ls.ncores * sizeof **stats);
    free(zero);
    return out;
}

static void check_target(const nd_kernels *k, const nda_kernel_entry *e)
{
    setup s;
    nd_error err;
    test_case = e->symbol;
    if (make_setup(e, &s, &err)) {
        CHECK(0, "%s: cannot set up its target: %s", e->symbol, err.msg);
        return;
    }
    const float *in[8];
    for (int i = 0; i + 1 < s.n; ++i) { /* small multiples of 1/4: exact in f32, and no overflow in exp */
        float *x = malloc((size_t)s.elems[i] * sizeof *x);
        for (int64_t j = 0; j < s.elems[i]; ++j)
            x[j] = (float)rng_range(&test_seed, -32, 32) / 4.0f;
        nd_tensor_write(s.t[i], x, s.elems[i] * 4, &err);
        in[i] = x;
    }
    nd_kernel_pick pg, ps, pa;
    nda_stats *sg, *ss, *sa;
    float *g = run(k, &s, e->op, ND_VARIANT_GENERIC, &pg, &sg);
    float *sp = run(k, &s, e->op, ND_VARIANT_SPECIALIZED, &ps, &ss);
    float *au = run(k, &s, e->op, ND_VARIANT_AUTO, &pa, &sa);
    CHECK(!pg.specialized && ps.specialized && strcmp(ps.symbol, e->symbol) == 0 && strcmp(pa.symbol, e->symbol) == 0,
          "picked %s (generic), %s (specialized), %s (auto)", pg.symbol, ps.symbol, pa.symbol);
    int64_t nout = s.elems[s.n - 1];
    CHECK(memcmp(g, sp, (size_t)nout * 4) == 0, "specialized output differs from generic");
    int64_t ncores = (int64_t)nd_device_get_config(s.dev).grid_x * nd_device_get_config(s.dev).grid_y;
    CHECK(memcmp(sg, ss, (size_t)ncores * sizeof *sg) == 0, "per-core statistics differ");
    scalar_fn *ref = reference_of(e->op);
    CHECK(ref != NULL, "no reference for op '%s': add one to tests/test_kernels.c", e->op);
    if (ref) {
        float *want = malloc((size_t)nout * sizeof *want);
        reference(ref, want, in, s.d, s.n - 1);
        int64_t at = 0;
        while (at < nout && memcmp(&want[at], &g[at], 4) == 0)
            ++at;
        CHECK(at == nout, "generic output differs from the reference at element %" PRId64 ": %a, want %a", at,
              at < nout ? (double)g[at] : 0.0, at < nout ? (double)want[at] : 0.0);
        free(want);
    }
    for (int i = 0; i + 1 < s.n; ++i)
        free((void *)in[i]);
    free(g), free(sp), free(au), free(sg), free(ss), free(sa);
    free_setup(&s);
    ++passed;
}

/* A distribution no target has: auto falls back to generic; forcing specialized explains. */
static void check_fallback(const nd_kernels *k, const nda_kernel_entry *e)
{
    setup s;
    nd_error err;
    nd_kernel_pick p;
    test_case = "fallback";
    if (make_setup(e, &s, &err))
        return;
    nd_dist_spec spec = s.d[0].spec; /* the first input, dealt by the other strategy: no target has it */
    spec.strategy = spec.strategy == ND_ROUND_ROBIN ? ND_CONTIGUOUS : ND_ROUND_ROBIN;
    nd_device_config cfg = nd_device_get_config(s.dev);
    nd_dist other;
    nd_tensor_free(s.t[0]); /* make room; free_setup frees its replacement */
    s.t[0] = NULL;
    int rc = spec.buffer == ND_DRAM ? nd_dist_make(&spec, cfg.dram_banks, 1, &other, &err)
                                    : nd_dist_make(&spec, cfg.grid_x, cfg.grid_y, &other, &err);
    if (rc == 0)
        rc = nd_tensor_alloc(s.dev, &other, &s.t[0], &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc) {
        s.t[0] = NULL;
        free_setup(&s);
        return;
    }
    CHECK(nd_kernels_pick(k, e->op, s.t, s.n, ND_VARIANT_AUTO, &p, &err) == 0 && !p.specialized,
          "auto did not fall back to the generic kernel");
    rc = nd_kernels_pick(k, e->op, s.t, s.n, ND_VARIANT_SPECIALIZED, &p, &err);
    CHECK(rc == -1 && strstr(err.msg, "no specialized kernel for these distributions: operand"), "got: %s",
          rc ? err.msg : p.symbol);
    rc = nd_kernels_pick(k, "no_such_op", s.t, s.n, ND_VARIANT_AUTO, &p, &err);
    CHECK(rc == -1 && strstr(err.msg, "no loaded kernel library provides it"), "unknown op: %s", err.msg);
    rc = nd_kernels_pick(k, e->op, s.t, s.n - 1, ND_VARIANT_AUTO, &p, &err);
    CHECK(rc == -1 && strstr(err.msg, "operands, but the launch gives"), "operand count: %s", err.msg);
    free_setup(&s);
    ++passed;
}

int main(int argc, char **argv)
{
    nd_kernels *k;
    nd_error err;
    if (argc < 2 || nd_kernels_open(&k, &err) || nd_kernels_load(k, argv[1], &err)) {
        fprintf(stderr, "usage: test_kernels LIBRARY: %s\n", argc < 2 ? "no library" : err.msg);
        return 1;
    }
    /* Enumerate the targets from the library's own registry, independently of the runtime's picking. */
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    const nda_kernel_library *lib = h ? dlsym(h, "nda_kernel_registry") : NULL;
    CHECK(lib != NULL, "%s: no registry", argv[1]);
    int specialized = 0;
    const nda_kernel_entry *any = NULL;
    test_seed = 0x5eed0004;
    for (int g = 0; lib && g < lib->ngroups; ++g)
        for (int i = 0; i < lib->groups[g]->nentries; ++i) {
            const nda_kernel_entry *e = &lib->groups[g]->entries[i];
            if (!e->signatures)
                continue;
            check_target(k, e);
            any = any ? any : e;
            ++specialized;
        }
    CHECK(specialized > 0, "the library has no specialized kernels");
    if (any)
        check_fallback(k, any);
    printf("%d specialized kernels checked against their generic kernels\n", specialized);
    if (h)
        dlclose(h);
    nd_kernels_close(k);
    return test_finish(passed);
}
