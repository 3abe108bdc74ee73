/*
 * test_adversarial.c LIBRARY - the accepted half of the adversarial template corpus
 * (tests/adversarial/): every kernel of every op, generic and specialized, against a plain reference
 * written here from what each template says it computes, on each op's four targets (aligned, placed
 * apart, uneven tile pages, rank 3 with a DRAM operand). Inputs are small integers, so every result is
 * exact and compared bit for bit; the specialized kernel's per-core statistics must also be the generic
 * one's. The references never call the code under test: they walk row-major host arrays.
 */
#include <dlfcn.h>
#include <math.h>
#include <string.h>

#include "device_setup.h"
#include "nd_runtime.h"
#include "testutil.h"

static int64_t passed;

/* ---------------------------------------------------------------- references */

/* The element of the output being computed, for references that depend on where it lies. */
typedef struct elem_ctx {
    const nd_dist_spec *out;
    const int64_t *coord; /* in elements, at the output's rank */
} elem_ctx;

/* The id of the output page holding the element: row-major over the pages of each dim. */
static int64_t page_id_of(const elem_ctx *c)
{
    int64_t id = 0;
    for (int i = 0; i < c->out->rank; ++i) {
        int64_t pages = (c->out->shape[i] + c->out->page[i] - 1) / c->out->page[i];
        id = id * pages + c->coord[i] / c->out->page[i];
    }
    return id;
}

typedef double ref_fn(const double *v, const elem_ctx *c);

static double twice_a(const double *v, const elem_ctx *c) { return (void)c, 2 * v[0]; }
static double twice_b(const double *v, const elem_ctx *c) { return (void)c, 2 * v[1]; }
static double thrice_a(const double *v, const elem_ctx *c) { return (void)c, 3 * v[0]; }
static double thrice_b(const double *v, const elem_ctx *c) { return (void)c, 3 * v[1]; }
static double a_plus_1(const double *v, const elem_ctx *c) { return (void)c, v[0] + 1; }
static double a_minus_b(const double *v, const elem_ctx *c) { return (void)c, v[0] - v[1]; }
static double b_plus_5(const double *v, const elem_ctx *c) { return (void)c, v[1] + 5; }
static double a_plus_7(const double *v, const elem_ctx *c) { return (void)c, v[0] + 7; }
static double even_pages(const double *v, const elem_ctx *c) { return page_id_of(c) % 2 ? 0 : 2 * v[0]; }
static double sign_by_parity(const double *v, const elem_ctx *c) { return (void)c, ((int)v[0] & 1) ? -v[0] : v[0]; }
static double four_a(const double *v, const elem_ctx *c) { return (void)c, 4 * v[0]; }
static double a_minus_1(const double *v, const elem_ctx *c) { return (void)c, v[0] - 1; }
static double a_squared(const double *v, const elem_ctx *c) { return (void)c, v[0] * v[0]; }
static double a_plus_11(const double *v, const elem_ctx *c) { return (void)c, v[0] + 11; }
static double clamp_shift(const double *v, const elem_ctx *c)
{
    (void)c;
    double x = v[0] + 2;
    return (x < -4 ? -4 : x > 4 ? 4 : x) + 10;
}
static double twice_a_plus_1(const double *v, const elem_ctx *c) { return (void)c, 2 * v[0] + 1; }
static double five_a(const double *v, const elem_ctx *c) { return (void)c, 5 * v[0]; }

static const struct {
    const char *op, *template;
    ref_fn *fn;
} refs[] = {
    {"adv_pick_a", "param_binding.c", twice_a},
    {"adv_pick_b", "param_binding.c", twice_b},
    {"adv_src_a", "param_tensor.c", thrice_a},
    {"adv_src_b", "param_tensor.c", thrice_b},
    {"adv_branch0", "if_branch.c", a_plus_1},
    {"adv_branch1", "if_branch.c", a_minus_b},
    {"adv_shadow", "shadow_bound.c", b_plus_5},
    {"adv_core_alias", "core_alias.c", a_plus_7},
    {"adv_continue", "loop_continue.c", even_pages},
    {"adv_macro_continue", "macro_continue.c", twice_a},
    {"adv_inner_break", "inner_break.c", sign_by_parity},
    {"adv_nested", "nested_iter.c", four_a},
    {"adv_iter_in_loop", "iter_in_loop.c", thrice_a},
    {"adv_while", "while_pages.c", a_minus_1},
    {"adv_iter_input", "iter_input.c", a_squared},
    {"adv_lines", "line_numbers.c", a_plus_11},
    {"adv_statics", "collide_statics.c", clamp_shift},
    {"adv_typedef", "typedef_macro.c", twice_a_plus_1},
    {"adv_scale2", "hdr_macro_param.c", twice_a},
    {"adv_scale5", "hdr_macro_param.c", five_a},
    {"adv_mixed", "mixed_types.c", twice_a_plus_1},
    {"adv_one_type", "one_type.c", twice_a},
};
enum { NREFS = sizeof refs / sizeof *refs, MIN_TARGETS = 4 };

static int ref_index(const char *op)
{
    for (int i = 0; i < NREFS; ++i)
        if (strcmp(refs[i].op, op) == 0)
            return i;
    return -1;
}

/* Elements as doubles, by dtype; bf16 by its bits (the top half of an f32), f16 by its definition. */
static double load(const uint8_t *p, int64_t i, nd_dtype t)
{
    switch (t) {
    case ND_F32: {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    case ND_BF16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case ND_F16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return test_f16_value(h);
    }
    case ND_I32: {
        int32_t v;
        memcpy(&v, p + 4 * i, 4);
        return v;
    }
    case ND_U8: return p[i];
    }
    return NAN;
}

/* Every value stored here is a small integer, exact in each dtype: bf16 keeps the top half. */
static void store(uint8_t *p, int64_t i, nd_dtype t, double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    switch (t) {
    case ND_F32: memcpy(p + 4 * i, &f, 4); return;
    case ND_BF16: {
        uint16_t h = (uint16_t)(u >> 16);
        memcpy(p + 2 * i, &h, 2);
        return;
    }
    case ND_F16: {
        uint16_t h = test_f16_nearest(v);
        memcpy(p + 2 * i, &h, 2);
        return;
    }
    case ND_I32: {
        int32_t x = (int32_t)v;
        memcpy(p + 4 * i, &x, 4);
        return;
    }
    case ND_U8: p[i] = (uint8_t)v; return;
    }
}

/* out[x] = fn(in[0][x], in[1][x], ...): every operand has the output's shape. */
static void reference(ref_fn *fn, uint8_t *out, uint8_t *const *in, const nd_dist *d, int nin)
{
    const nd_dist_spec *o = &d[nin].spec;
    int64_t n = 1, x[ND_MAX_RANK] = {0};
    for (int i = 0; i < o->rank; ++i)
        n *= o->shape[i];
    for (int64_t e = 0; e < n; ++e) {
        double v[8];
        for (int k = 0; k < nin; ++k)
            v[k] = load(in[k], e, d[k].spec.dtype);
        elem_ctx c = {o, x};
        store(out, e, o->dtype, fn(v, &c));
        for (int i = o->rank - 1; i >= 0 && ++x[i] == o->shape[i]; --i)
            x[i] = 0;
    }
}

/* Small integers: floating dtypes in [-8, 8], i32 in [-50, 50], u8 in [0, 100] (so that four u8 read as
 * an f32 word are never a NaN: the top byte keeps the exponent below all ones). */
static void fill(uint8_t *x, nd_dtype t, int64_t n)
{
    for (int64_t i = 0; i < n; ++i) {
        int64_t v = t == ND_I32 ? rng_range(&test_seed, -50, 50)
                  : t == ND_U8  ? rng_range(&test_seed, 0, 100)
                                : rng_range(&test_seed, -8, 8);
        store(x, i, t, (double)v);
    }
}

/* ---------------------------------------------------------------- one target */

typedef td_setup setup;

/* A device with every core and bank the target's operands name, and the operands on it. */
static int make_setup(const nda_kernel_entry *e, setup *s, nd_error *err)
{
    return td_setup_open(e->signatures, e->noperands, 2, s, err);
}

static void free_setup(setup *s) { td_setup_free(s); }

/* Runs the op as variant want on a zeroed output; returns the output and the per-core statistics. */
static uint8_t *run(nd_kernels *k, setup *s, const char *op, nd_variant want, nd_kernel_pick *pick, nda_stats **stats)
{
    nd_error err;
    nd_launch_stats ls;
    int64_t bytes = s->elems[s->n - 1] * s->d[s->n - 1].elem_bytes;
    uint8_t *zero = calloc((size_t)bytes, 1), *out = calloc((size_t)bytes, 1);
    CHECK(nd_tensor_write(s->t[s->n - 1], zero, bytes, &err) == 0, "%s", err.msg);
    memset(&ls, 0, sizeof ls);
    int rc = nd_run(&(nd_launch_desc){.device = s->dev, .kernels = k, .op = op, .tensors = s->t, .ntensors = s->n,
                                      .variant = want, .pick = pick, .stats = &ls}, &err);
    CHECK(rc == 0, "%s: %s", op, err.msg);
    *stats = calloc((size_t)(rc == 0 ? ls.ncores : 1), sizeof **stats);
    if (rc == 0) {
        CHECK(nd_tensor_read(s->t[s->n - 1], out, bytes, &err) == 0, "%s", err.msg);
        memcpy(*stats, ls.per_core, (size_t)ls.ncores * sizeof **stats);
    }
    free(zero);
    return out;
}

/* The first element where got differs from want, or -1. */
static int64_t first_difference(const uint8_t *got, const uint8_t *want, int64_t n, int64_t eb)
{
    for (int64_t i = 0; i < n; ++i)
        if (memcmp(got + i * eb, want + i * eb, (size_t)eb) != 0)
            return i;
    return -1;
}

static void check_target(nd_kernels *k, const nda_kernel_entry *e, int r)
{
    setup s;
    nd_error err;
    char what[256];
    snprintf(what, sizeof what, "%s (template %s)", e->symbol, refs[r].template);
    test_case = what;
    if (make_setup(e, &s, &err)) {
        CHECK(0, "cannot set up the target: %s", err.msg);
        return;
    }
    uint8_t *in[8];
    for (int i = 0; i + 1 < s.n; ++i) {
        int64_t bytes = s.elems[i] * s.d[i].elem_bytes;
        in[i] = malloc((size_t)bytes);
        fill(in[i], s.d[i].spec.dtype, s.elems[i]);
        CHECK(nd_tensor_write(s.t[i], in[i], bytes, &err) == 0, "%s", err.msg);
    }
    const nd_dist *o = &s.d[s.n - 1];
    uint8_t *want = calloc((size_t)(s.elems[s.n - 1] * o->elem_bytes), 1);
    reference(refs[r].fn, want, in, s.d, s.n - 1);
    nd_kernel_pick pg, ps;
    nda_stats *sg, *ss;
    uint8_t *g = run(k, &s, e->op, ND_VARIANT_GENERIC, &pg, &sg);
    uint8_t *sp = run(k, &s, e->op, ND_VARIANT_SPECIALIZED, &ps, &ss);
    CHECK(!pg.specialized && ps.specialized && strcmp(ps.symbol, e->symbol) == 0, "picked %s and %s", pg.symbol,
          ps.symbol);
    const uint8_t *outs[2] = {g, sp};
    for (int v = 0; v < 2; ++v) {
        int64_t at = first_difference(outs[v], want, s.elems[s.n - 1], o->elem_bytes);
        CHECK(at < 0, "%s kernel %s: element %" PRId64 " is %g, the reference says %g", v ? "specialized" : "generic",
              v ? ps.symbol : pg.symbol, at, at < 0 ? 0.0 : load(outs[v], at, o->spec.dtype),
              at < 0 ? 0.0 : load(want, at, o->spec.dtype));
    }
    nd_device_config cfg = nd_device_get_config(s.dev);
    int64_t ncores = (int64_t)cfg.grid_x * cfg.grid_y;
    for (int64_t c = 0; c < ncores; ++c)
        CHECK(memcmp(&sg[c], &ss[c], sizeof *sg) == 0,
              "core %" PRId64 ": statistics differ: generic read %" PRId64 "+%" PRId64 " pages and wrote %" PRId64
              ", specialized %" PRId64 "+%" PRId64 " and %" PRId64, c, sg[c].local_pages_read, sg[c].remote_pages_read,
              sg[c].pages_written, ss[c].local_pages_read, ss[c].remote_pages_read, ss[c].pages_written);
    for (int i = 0; i + 1 < s.n; ++i)
        free(in[i]);
    void *owned[] = {want, g, sp, sg, ss};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; ++i)
        free(owned[i]);
    free_setup(&s);
    test_case = NULL;
    ++passed;
}

int main(int argc, char **argv)
{
    nd_kernels *k;
    nd_error err;
    if (argc < 2 || nd_kernels_open(&k, &err) || nd_kernels_load(k, argv[1], &err)) {
        fprintf(stderr, "usage: test_adversarial LIBRARY: %s\n", argc < 2 ? "no library" : err.msg);
        return 1;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    const nda_kernel_library *lib = h ? dlsym(h, "nda_kernel_registry") : NULL;
    CHECK(lib != NULL, "%s: no registry", argv[1]);
    int targets[NREFS] = {0}, generic[NREFS] = {0};
    test_seed = 0xad5e0001;
    for (int g = 0; lib && g < lib->ngroups; ++g)
        for (int i = 0; i < lib->groups[g]->nentries; ++i) {
            const nda_kernel_entry *e = &lib->groups[g]->entries[i];
            int r = ref_index(e->op);
            CHECK(r >= 0, "op %s has no reference in test_adversarial.c", e->op);
            if (r < 0)
                continue;
            if (!e->signatures) {
                ++generic[r];
                continue;
            }
            check_target(k, e, r);
            ++targets[r];
        }
    /* Every reference is exercised: each of its ops (one per dtype combination) on at least 4 targets. */
    for (int r = 0; r < NREFS; ++r)
        CHECK(generic[r] > 0 && targets[r] >= MIN_TARGETS * generic[r],
              "op %s: %d generic kernels and %d targets in the library; want %d targets each", refs[r].op, generic[r],
              targets[r], MIN_TARGETS);
    if (h)
        dlclose(h);
    nd_kernels_close(k);
    return test_finish(passed);
}
