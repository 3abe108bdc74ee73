/*
 * test_partial: kernels that fix part of the distribution and read the rest at run time (issue 17),
 * from tests/partial/partial.lua: fixed = "pattern" (the shape at run time) and fixed = "shard" (the
 * shape and the core list).
 *
 *  - every partial kernel, on random shapes sharing its pattern (rows past 256, uneven edge shards in
 *    every dim, shapes smaller than one shard), and for "shard" on random core grids (1 to 12 cores at
 *    a random place, either orientation; operands the kernel assumed alike share theirs): picked for
 *    the launch, it equals the generic kernel bit for bit and a plain reference written here, with
 *    identical per-core statistics;
 *  - the pick order for op add, which has a generic, an exact, two pattern and two shard kernels: the
 *    exact kernel at its own distributions, the pattern kernel at another shape, the shard kernel on
 *    other cores, the generic kernel when a fixed parameter (the shard shape, the page) differs; under
 *    nd_kernels_set_fixed the kernels fixing more are passed over; and what nd_kernel_pick reports.
 * Usage: test_partial LIB [cases [seed]]
 */
#include <math.h>

#include "device_setup.h"
#include "nd_runtime.h"
#include "testutil.h"

static nd_kernels *K;
static nd_device *dev;
static int64_t passed, skipped;

/* The plain reference of the spec's ops, over contiguous row-major arrays. */
static void reference(const char *op, const float *a, const float *b, float *out, const int64_t *shape, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
        n *= shape[i];
    for (int64_t e = 0; e < n; ++e) {
        if (strcmp(op, "add") == 0)
            out[e] = a[e] + b[e];
        else if (strcmp(op, "add3") == 0)
            out[e] = a[e] * 2.0f + b[e];
        else if (strcmp(op, "addrow") == 0)
            out[e] = a[e] - b[e % shape[rank - 1]];
        else
            out[e] = a[e];
    }
}

typedef struct launch {
    float *out;
    nda_stats *per_core;
    int64_t ncores;
    nd_kernel_pick pick;
} launch;

static int run(const char *op, nd_tensor **t, int n, nd_variant want, const float *const *in, int64_t out_elems,
               launch *r, nd_error *err)
{
    nd_launch_stats st;
    (void)in; /* inputs are written once, by the caller */
    float *zero = calloc((size_t)out_elems, sizeof *zero);
    int rc = nd_tensor_write(t[n - 1], zero, out_elems * 4, err);
    free(zero);
    if (rc || nd_run(&(nd_launch_desc){.device = dev, .kernels = K, .op = op, .tensors = t, .ntensors = n,
                                       .variant = want, .pick = &r->pick, .stats = &st}, err))
        return -1;
    r->ncores = st.ncores;
    r->per_core = malloc((size_t)st.ncores * sizeof *r->per_core);
    memcpy(r->per_core, st.per_core, (size_t)st.ncores * sizeof *r->per_core);
    r->out = malloc((size_t)out_elems * sizeof *r->out);
    return nd_tensor_read(t[n - 1], r->out, out_elems * 4, err);
}

/* A random core set within the device's 8x8 grid: one rectangle of 1 to 12 cores, either orientation. */
static nd_core_set random_cores(uint64_t *rng)
{
    nd_core_set c = {.nranges = 1, .orientation = rng_range(rng, 0, 1) ? ND_COL_MAJOR : ND_ROW_MAJOR};
    int x = (int)rng_range(rng, 0, 4), y = (int)rng_range(rng, 0, 5);
    c.ranges[0] = (nd_core_range){{x, y}, {x + (int)rng_range(rng, 0, 3), y + (int)rng_range(rng, 0, 2)}};
    return c;
}

/* Every operand of entry e at the shape its letters get (sizes[letter]), keeping the rest of its
 * target's distribution: the pattern; for a kernel leaving the grid free, on random cores, one draw per
 * class of operands the kernel assumed alike (nda_kernel_entry.shape_classes). */
static int make_dists(const nda_kernel_entry *e, const int64_t *sizes, uint64_t *rng, nd_dist *d, nd_error *err)
{
    bool grid_free = ndreg_fixed_free(ndreg_fixed_parse(e->fixed)) & NDA_FREE_GRID;
    nd_core_set cores[8];
    for (int i = 0; i < e->noperands; ++i) {
        int gx, gy;
        if (nd_dist_from_signature(e->signatures[i], &d[i], &gx, &gy, err))
            return -1;
        nd_dist_spec s = d[i].spec;
        const char *ix = e->indices[i];
        bool dots = strcmp(ix, "...") == 0;
        for (int j = 0; j < s.rank; ++j)
            s.shape[j] = sizes[dots ? 'a' + j : (unsigned char)ix[j]];
        cores[i] = e->shape_classes[i] == i ? random_cores(rng) : cores[e->shape_classes[i]];
        if (grid_free)
            s.cores = cores[i];
        if (nd_dist_make(&s, grid_free ? 8 : gx, grid_free ? 8 : gy, &d[i], err))
            return -1;
    }
    return 0;
}

static void one_entry_case(const nda_kernel_entry *e, uint64_t *rng, char *desc)
{
    int64_t sizes[256] = {0};
    int rank = (int)strlen(e->indices[e->noperands - 1]);
    nd_dist out;
    int ogx, ogy;
    nd_error oerr;
    if (strcmp(e->indices[e->noperands - 1], "...") == 0) /* the rank the target gives it */
        rank = nd_dist_from_signature(e->signatures[e->noperands - 1], &out, &ogx, &ogy, &oerr) ? 3 : out.spec.rank;
    for (int c = 0; c < 256; ++c) /* rows past 256 elements, edges uneven, shapes below one shard */
        sizes[c] = rng_range(rng, 1, rng_range(rng, 0, 3) ? (rank > 2 ? 150 : 600) : 40);
    if (rank > 2)
        sizes['i'] = sizes['a'] = rng_range(rng, 1, 5);
    nd_dist d[8];
    nd_error err;
    if (make_dists(e, sizes, rng, d, &err)) { /* a shape the pattern cannot place (a page wider than it) */
        ++skipped;
        return;
    }
    int n = e->noperands;
    nd_tensor *t[8] = {0};
    float *in[8] = {0};
    int64_t elems[8];
    size_t len = strlen(desc);
    snprintf(desc + len, 1024 - len, "%s %s:", e->op, e->symbol);
    for (int i = 0; i < n; ++i) {
        len = strlen(desc);
        snprintf(desc + len, 1024 - len, " %s", nd_shape_text((char[96]){0}, 96, d[i].spec.shape, d[i].spec.rank));
        elems[i] = 1;
        for (int j = 0; j < d[i].spec.rank; ++j)
            elems[i] *= d[i].spec.shape[j];
        int rc = nd_tensor_alloc(dev, &d[i], &t[i], &err);
        CHECK(rc == 0 || err.code == ND_ENOMEM, "alloc: %s", err.msg);
        if (rc) {
            skipped += err.code == ND_ENOMEM; /* does not fit in a core's L1 */
            goto done;
        }
        in[i] = malloc((size_t)elems[i] * sizeof *in[i]);
        for (int64_t k = 0; k < elems[i]; ++k)
            in[i][k] = (float)rng_range(rng, -1000, 1000) / 64.0f;
        if (i + 1 < n) {
            rc = nd_tensor_write(t[i], in[i], elems[i] * 4, &err);
            CHECK(rc == 0, "write: %s", err.msg);
        }
    }
    launch g = {0}, p = {0};
    int rg = run(e->op, t, n, ND_VARIANT_GENERIC, (const float *const *)in, elems[n - 1], &g, &err);
    CHECK(rg == 0, "generic: %s", err.msg);
    /* at most e's set: random cores may be a pattern kernel's own, which would then be taken first */
    int rp = rg || nd_kernels_set_fixed(K, e->fixed, &err)
                 ? -1 : run(e->op, t, n, ND_VARIANT_AUTO, (const float *const *)in, elems[n - 1], &p, &err);
    nd_kernels_set_fixed(K, "all", &err);
    CHECK(rg || rp == 0, "auto: %s", err.msg);
    if (!rg && !rp) {
        CHECK(p.pick.entry == e, "picked %s (fixed %s), want %s", p.pick.symbol, p.pick.fixed, e->symbol);
        CHECK(strcmp(p.pick.fixed, e->fixed) == 0 && strcmp(g.pick.fixed, "none") == 0, "fixed %s and %s",
              p.pick.fixed, g.pick.fixed);
        float *ref = malloc((size_t)elems[n - 1] * sizeof *ref);
        reference(e->op, in[0], n > 2 ? in[1] : NULL, ref, d[n - 1].spec.shape, d[n - 1].spec.rank);
        int64_t bad = -1;
        for (int64_t k = 0; k < elems[n - 1] && bad < 0; ++k)
            if (memcmp(&g.out[k], &p.out[k], 4) || memcmp(&ref[k], &p.out[k], 4))
                bad = k;
        CHECK(bad < 0, "element %lld: pattern %g, generic %g, reference %g", (long long)bad, (double)p.out[bad],
              (double)g.out[bad], (double)ref[bad]);
        CHECK(g.ncores == p.ncores && memcmp(g.per_core, p.per_core, (size_t)g.ncores * sizeof *g.per_core) == 0,
              "per-core statistics differ");
        passed += bad < 0;
        free(ref);
    }
    free(g.out), free(g.per_core), free(p.out), free(p.per_core);
done:
    for (int i = 0; i < n; ++i) {
        nd_tensor_free(t[i]);
        free(in[i]);
    }
}

static const nda_kernel_entry *current;
static void entry_case(uint64_t *rng, char *desc) { one_entry_case(current, rng, desc); }

/* A launch of op add with every operand alike: shape, shard, and cores (0,0)-(gx-1,gy-1). */
typedef struct add_case {
    int64_t r, c, sr, sc;
    int gx, gy;
    const char *max_fixed; /* nd_kernels_set_fixed */
    nd_variant want;
    const char *fixed, *symbol; /* expected: what the kernel fixed, and its symbol ("generic": any generic) */
    const char *why;
} add_case;

/* The pick for op add: what the kernel fixed and its symbol, or NULL and err when none is taken. */
static const char *pick_add(const add_case *a, const char **symbol, nd_error *err)
{
    nd_dist_spec s;
    nd_dist_spec_init(&s);
    s.rank = s.shard_rank = 2;
    s.shape[0] = a->r, s.shape[1] = a->c, s.shard[0] = a->sr, s.shard[1] = a->sc;
    s.cores.nranges = 1;
    s.cores.ranges[0] = (nd_core_range){{0, 0}, {a->gx - 1, a->gy - 1}};
    nd_dist d;
    nd_tensor *t[3] = {0};
    static nd_kernel_pick pick;
    const char *fixed = NULL;
    int rc = nd_dist_make(&s, 8, 8, &d, err) || nd_kernels_set_fixed(K, a->max_fixed, err);
    CHECK(rc == 0, "%s", err->msg);
    for (int i = 0; i < 3 && !rc; ++i)
        rc = nd_tensor_alloc(dev, &d, &t[i], err);
    if (!rc && !nd_kernels_pick(K, "add", t, 3, a->want, &pick, err)) {
        fixed = pick.fixed;
        *symbol = pick.symbol;
    }
    for (int i = 0; i < 3; ++i)
        nd_tensor_free(t[i]);
    nd_kernels_set_fixed(K, "all", err);
    return fixed;
}

/* Op add's kernels (partial.lua): t0 exact, t1 pattern and t3 shard of one layout (rows of 64, 64x64
 * shards, round robin), t2 pattern and t4 shard with operand a placed otherwise; and the generic one. */
static void pick_order(void)
{
    static const add_case cases[] = {
        {300, 200, 64, 64, 2, 2, "all", ND_VARIANT_AUTO, "all", "nd_add__f32__t0", "t0's own distributions"},
        {300, 200, 64, 64, 2, 2, "all", ND_VARIANT_GENERIC, "none", "generic", "the generic kernel asked for"},
        {513, 130, 64, 64, 2, 2, "all", ND_VARIANT_AUTO, "pattern", "nd_add__f32__t1", "another size"},
        {513, 130, 64, 64, 2, 2, "all", ND_VARIANT_SPECIALIZED, "pattern", "nd_add__f32__t1", "another size"},
        {7, 3, 64, 64, 2, 2, "all", ND_VARIANT_AUTO, "pattern", "nd_add__f32__t1", "smaller than one shard"},
        {300, 200, 64, 64, 3, 2, "all", ND_VARIANT_AUTO, "shard", "nd_add__f32__t3", "other cores: t1 differs"},
        {513, 130, 64, 64, 1, 1, "all", ND_VARIANT_AUTO, "shard", "nd_add__f32__t3", "another size on one core"},
        {300, 200, 32, 64, 2, 2, "all", ND_VARIANT_AUTO, "none", "generic", "the shard shape is fixed"},
        {300, 200, 64, 128, 2, 2, "all", ND_VARIANT_AUTO, "none", "generic", "so is the page (a shard row)"},
        {300, 200, 64, 64, 2, 2, "pattern", ND_VARIANT_AUTO, "pattern", "nd_add__f32__t1", "exact passed over"},
        {300, 200, 64, 64, 2, 2, "shard", ND_VARIANT_AUTO, "shard", "nd_add__f32__t3", "pattern passed over"},
        {300, 200, 64, 64, 3, 2, "pattern", ND_VARIANT_AUTO, "shard", "nd_add__f32__t3", "fixing less is taken"},
        {300, 200, 32, 64, 2, 2, "shard", ND_VARIANT_SPECIALIZED, NULL, NULL, "no kernel, and no JIT"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
        const add_case *a = &cases[i];
        const char *sym = NULL;
        nd_error err = {0};
        const char *f = pick_add(a, &sym, &err);
        bool ok = !a->fixed ? !f && err.code == ND_ENOENT
                  : f && strcmp(f, a->fixed) == 0 &&
                        (strcmp(a->symbol, "generic") == 0 ? strstr(sym, "generic") != NULL : strcmp(sym, a->symbol) == 0);
        CHECK(ok, "pick %lldx%lld shard %lldx%lld on %dx%d, at most %s (%s): got %s %s (%s), want %s %s",
              (long long)a->r, (long long)a->c, (long long)a->sr, (long long)a->sc, a->gx, a->gy, a->max_fixed, a->why,
              f ? f : "none", f ? sym : "", f ? "" : err.msg, a->fixed ? a->fixed : "an error", a->symbol ? a->symbol : "");
        passed += ok;
    }
    nd_error err;
    CHECK(nd_kernels_set_fixed(K, "shape,grid", &err) == -1 && err.code == ND_EINVAL, "an unknown set is refused");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_partial LIB [cases [seed]]\n");
        return 2;
    }
    if (td_open_library("test_partial", argv[1], 2, &K, &dev))
        return 1;
    pick_order();
    int per_set[NDA_FIXED_COUNT] = {0};
    for (int i = 0; i < nd_kernels_count(K); ++i) {
        current = nd_kernels_entry(K, i);
        int set = ndreg_fixed_parse(current->fixed);
        if (set <= NDA_FIXED_ALL)
            continue;
        ++per_set[set];
        char *sub[] = {argv[0], argc > 2 ? argv[2] : "25", argc > 3 ? argv[3] : "1700"};
        test_run_cases(3, sub, 0, 0, entry_case);
    }
    for (int set = NDA_FIXED_ALL + 1; set < NDA_FIXED_COUNT; ++set) {
        CHECK(per_set[set] >= 5, "the library has %d kernels of set %s, want at least 5", per_set[set],
              ndreg_fixed_name(set));
        printf("test_partial: %d kernels fixing \"%s\"\n", per_set[set], ndreg_fixed_name(set));
    }
    printf("test_partial: %lld shapes skipped (not placeable)\n", (long long)skipped);
    nd_device_close(dev);
    nd_kernels_close(K);
    return test_finish(passed);
}
