/*
 * test_kernels.c LIBRARY - every specialized kernel of a generated library against its op's generic
 * kernel, on the target's own distributions: outputs bit-identical, per-core statistics identical,
 * and the generic output equal to a plain reference loop over contiguous arrays. Also checks that
 * the runtime picks each specialized kernel by its distributions, falls back to the generic one, and
 * explains a forced specialized launch that has no match.
 *
 * test_kernels LIBRARY --random SECONDS [--seed N] --jit NDGEN SPEC_DIR TEMPLATE_DIR INCLUDE_DIR CFLAGS LDFLAGS
 * instead draws random cases for SECONDS and specializes each on demand (differential.c).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device_setup.h"
#include "kernels_check.h"
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
    {"abs", f_abs}, {"sigmoid", f_sigmoid}, {"tanh", f_tanh}, {"add", f_add},
    {"sub", f_sub}, {"mul", f_mul}, {"div", f_div}, {"max", f_max}, {"min", f_min}, {"mul_add", f_mul_add},
    {"lerp", f_lerp}, {"clamp", f_clamp},
};

/* Data movement: the output's elements are the input's, moved. */
/* Ops whose output is their input's value. For collectives the input is a Partial tensor's value:
 * the sum of its parts, which check_target adds on the host. */
static const char *const movement[] = {"page_copy", "reshard", "all_gather", "all_reduce", "reduce_scatter"};

static bool reference_of(const char *op, scalar_fn **fn)
{
    *fn = NULL;
    for (size_t i = 0; i < sizeof movement / sizeof *movement; ++i)
        if (strcmp(movement[i], op) == 0)
            return true;
    for (size_t i = 0; i < sizeof references / sizeof *references; ++i)
        if (strcmp(references[i].op, op) == 0) {
            *fn = references[i].fn;
            return true;
        }
    return false;
}

/* bf16 by its own route: the nearer of the two bf16 values around f, ties to the even one. */
static uint16_t ref_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f))
        return (uint16_t)((u >> 16) | 0x40);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1); /* truncated, and one step away from 0 */
    uint32_t lu = (uint32_t)lo << 16, hu = (uint32_t)hi << 16;
    float lf, hf;
    memcpy(&lf, &lu, 4);
    memcpy(&hf, &hu, 4);
    double dl = fabs((double)f - (double)lf), dh = isinf(hf) ? INFINITY : fabs((double)hf - (double)f);
    if (lu == u || dl < dh)
        return lo;
    return dh < dl ? hi : (lo & 1) ? hi : lo;
}

/* A floating element as f32 and v stored in one: f32 as it is, bf16 (above) and f16 (testutil.c) each
 * by its own route. */
static float load_value(const void *p, int64_t i, nd_dtype t)
{
    if (t == ND_F32)
        return ((const float *)p)[i];
    if (t == ND_F16)
        return (float)test_f16_value(((const uint16_t *)p)[i]);
    uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void store_value(void *p, int64_t i, nd_dtype t, float v)
{
    if (t == ND_F32)
        ((float *)p)[i] = v;
    else if (t == ND_F16)
        ((uint16_t *)p)[i] = test_f16_nearest(v);
    else
        ((uint16_t *)p)[i] = ref_to_bf16(v);
}

/* Plain loops: every output element from its inputs, found by numpy broadcasting in row-major arrays.
 * Math is done in f32; a data-movement op (fn NULL) copies the element's bytes. */
static void reference(scalar_fn *fn, void *out, const void *const *in, const nd_dist *d, int nin)
{
    const nd_dist_spec *o = &d[nin].spec;
    int64_t n = 1, x[ND_MAX_RANK] = {0}, eb = d[nin].elem_bytes;
    for (int i = 0; i < o->rank; ++i)
        n *= o->shape[i];
    for (int64_t e = 0; e < n; ++e) {
        float v[8];
        for (int k = 0; k < nin; ++k) {
            const nd_dist_spec *s = &d[k].spec;
            int64_t idx = 0;
            for (int i = 0; i < s->rank; ++i)
                idx = idx * s->shape[i] + (s->shape[i] == 1 ? 0 : x[i + o->rank - s->rank]);
            if (fn)
                v[k] = load_value(in[k], idx, s->dtype);
            else
                memcpy((uint8_t *)out + e * eb, (const uint8_t *)in[k] + idx * eb, (size_t)eb);
        }
        if (fn)
            store_value(out, e, o->dtype, fn(v));
        for (int i = o->rank - 1; i >= 0 && ++x[i] == o->shape[i]; --i)
            x[i] = 0;
    }
}

/* out[x] = in[y] with y[perm[i]] = x[i], over row-major arrays. */
static void reference_permute(void *out, const void *in, const nd_dist *d, const int *perm)
{
    const nd_dist_spec *o = &d[1].spec, *s = &d[0].spec;
    int64_t n = 1, x[ND_MAX_RANK] = {0}, eb = d[1].elem_bytes;
    for (int i = 0; i < o->rank; ++i)
        n *= o->shape[i];
    for (int64_t e = 0; e < n; ++e) {
        int64_t y[ND_MAX_RANK], idx = 0;
        for (int i = 0; i < o->rank; ++i)
            y[perm[i]] = x[i];
        for (int i = 0; i < s->rank; ++i)
            idx = idx * s->shape[i] + y[i];
        memcpy((uint8_t *)out + e * eb, (const uint8_t *)in + idx * eb, (size_t)eb);
        for (int i = o->rank - 1; i >= 0 && ++x[i] == o->shape[i]; --i)
            x[i] = 0;
    }
}

/* Reductions, by their own loops: every input element folded into its output element. */
static void reference_reduce(const char *op, void *out, const void *in, const nd_dist *d, const bool *red)
{
    const nd_dist_spec *o = &d[1].spec, *s = &d[0].spec;
    int64_t nin = 1, nout = 1, count = 1, x[ND_MAX_RANK] = {0};
    for (int i = 0; i < s->rank; ++i) {
        nin *= s->shape[i];
        count *= red[i] ? s->shape[i] : 1;
    }
    for (int i = 0; i < o->rank; ++i)
        nout *= o->shape[i];
    float *acc = malloc((size_t)nout * sizeof *acc);
    bool max = strcmp(op, "reduce_max") == 0;
    for (int64_t j = 0; j < nout; ++j)
        acc[j] = max ? -INFINITY : 0.0f;
    for (int64_t e = 0; e < nin; ++e) {
        int64_t j = 0;
        for (int i = 0; i < s->rank; ++i) /* kept axes, in order; with keepdims a reduced axis adds 0 */
            if (!red[i] || o->rank == s->rank)
                j = j * (red[i] ? 1 : s->shape[i]) + (red[i] ? 0 : x[i]);
        float v = load_value(in, e, s->dtype);
        acc[j] = !max ? acc[j] + v : isnan(v) || v > acc[j] ? v : acc[j]; /* a max is NaN if any value is */
        for (int i = s->rank - 1; i >= 0 && ++x[i] == s->shape[i]; --i)
            x[i] = 0;
    }
    for (int64_t j = 0; j < nout; ++j)
        store_value(out, j, o->dtype, strcmp(op, "reduce_mean") == 0 ? acc[j] / (float)count : acc[j]);
    free(acc);
}

/* Softmax along the last axis by its own loops: the max, exps by libm, their sum and the quotients in
 * double, so the reference's own error is the exps' (at most 1 ULP). */
static void reference_softmax(void *out, const void *in, const nd_dist *d)
{
    const nd_dist_spec *s = &d[0].spec;
    int64_t w = s->shape[s->rank - 1], rows = 1;
    for (int i = 0; i + 1 < s->rank; ++i)
        rows *= s->shape[i];
    for (int64_t row = 0; row < rows; ++row) {
        float max = -INFINITY;
        double sum = 0;
        for (int64_t e = 0; e < w; ++e)
            max = fmaxf(max, load_value(in, row * w + e, s->dtype));
        for (int64_t e = 0; e < w; ++e)
            sum += expf(load_value(in, row * w + e, s->dtype) - max);
        for (int64_t e = 0; e < w; ++e)
            store_value(out, row * w + e, d[1].spec.dtype,
                        (float)(expf(load_value(in, row * w + e, s->dtype) - max) / sum));
    }
}

/* A contraction by plain loops: each output element sums a*b over every value of the reduced letters. */
static void reference_einsum(const nda_kernel_entry *e, void *out, const void *const *in, const nd_dist *d)
{
    const char *ia = e->indices[0], *ib = e->indices[1], *io = e->indices[2];
    int64_t size[128] = {0}, val[128] = {0}, nout = 1;
    char red[16];
    int nred = 0;
    for (int k = 0; k < 2; ++k)
        for (int i = 0; e->indices[k][i]; ++i) {
            unsigned char c = (unsigned char)e->indices[k][i];
            size[c] = d[k].spec.shape[i];
            if (!strchr(io, c) && !memchr(red, c, (size_t)nred))
                red[nred++] = (char)c;
        }
    for (int i = 0; io[i]; ++i)
        nout *= d[2].spec.shape[i];
    for (int64_t o = 0; o < nout; ++o) {
        int64_t rest = o;
        for (int i = (int)strlen(io) - 1; i >= 0; --i) { /* the output element's letters */
            val[(unsigned char)io[i]] = rest % size[(unsigned char)io[i]];
            rest /= size[(unsigned char)io[i]];
        }
        int64_t combos = 1;
        for (int k = 0; k < nred; ++k)
            combos *= size[(unsigned char)red[k]];
        float acc = 0.0f;
        for (int64_t r = 0; r < combos; ++r) {
            int64_t left = r, xa = 0, xb = 0;
            for (int k = nred - 1; k >= 0; --k) {
                val[(unsigned char)red[k]] = left % size[(unsigned char)red[k]];
                left /= size[(unsigned char)red[k]];
            }
            for (int i = 0; ia[i]; ++i)
                xa = xa * size[(unsigned char)ia[i]] + val[(unsigned char)ia[i]];
            for (int i = 0; ib[i]; ++i)
                xb = xb * size[(unsigned char)ib[i]] + val[(unsigned char)ib[i]];
            acc += load_value(in[0], xa, d[0].spec.dtype) * load_value(in[1], xb, d[1].spec.dtype);
        }
        store_value(out, o, d[2].spec.dtype, acc);
    }
}

/* Ops whose templates use vector math (templates/eltwise_rows.h: libmvec's expf, tanhf, logf and the templates'
 * own vmath_erff, a few ULP from libm's; tests/test_vmath.c bounds them). Their outputs are held to the reference within 8 ULP
 * for f32, and gelu also within 1e-6 absolute, in either dtype (0.5 x (1 + erf) loses erf's relative
 * accuracy where erf is near -1); softmax within 10 ULP (its exp's 4, the same 4 again in the sum of the
 * exps, the roundings of the sum, of its reciprocal and of the product); bf16 and f16 outputs within one step (f32 results a few
 * ULP apart may round to neighbours). Every other op, and generic against specialized always, bit for
 * bit. */
static bool within_vmath(const char *op, nd_dtype t, const uint8_t *got, const uint8_t *want, int64_t i)
{
    static const char *const ops[] = {"gelu", "exp", "log", "sigmoid", "tanh", "softmax"};
    bool vm = false;
    for (size_t k = 0; k < sizeof ops / sizeof *ops; ++k)
        vm = vm || strcmp(op, ops[k]) == 0;
    if (!vm || !nd_dtype_floating(t))
        return false;
    float g = load_value(got, i, t), w = load_value(want, i, t);
    if ((isnan(g) && isnan(w)) || g == w)
        return true;
    if (!isfinite(g) || !isfinite(w))
        return false;
    double d = fabs((double)g - (double)w);
    if (strcmp(op, "gelu") == 0 && d <= 1e-6)
        return true;
    if (t != ND_F32) { /* bf16 or f16 */
        uint16_t a, b;
        memcpy(&a, got + 2 * i, 2);
        memcpy(&b, want + 2 * i, 2);
        return (a ^ b) < 0x8000 && (a > b ? a - b : b - a) <= 1; /* same sign, one step apart */
    }
    double ulp = w == 0 ? ldexp(1.0, -149) : ldexp(1.0, ilogbf(w) - 23);
    return d <= (strcmp(op, "softmax") == 0 ? 10 : 8) * ulp;
}

static bool is_contraction(const nda_kernel_entry *e)
{
    return e->noperands == 3 && !strstr(e->indices[0], "...");
}

/* Reduced axes taking in's shape to out's, with or without keepdims; false if none. */
static bool find_axes(const nd_dist_spec *in, const nd_dist_spec *out, bool *red, double *scalars, int *n)
{
    for (unsigned mask = 1; mask < (1u << in->rank); ++mask) {
        int64_t kept[ND_MAX_RANK], keep[ND_MAX_RANK];
        int nk = 0;
        for (int i = 0; i < in->rank; ++i) {
            keep[i] = mask >> i & 1 ? 1 : in->shape[i];
            if (!(mask >> i & 1))
                kept[nk++] = in->shape[i];
        }
        bool fits = (out->rank == nk && memcmp(out->shape, kept, (size_t)nk * 8) == 0) ||
                    (out->rank == in->rank && memcmp(out->shape, keep, (size_t)in->rank * 8) == 0);
        if (!fits)
            continue;
        *n = 0;
        for (int i = 0; i < in->rank; ++i) {
            red[i] = mask >> i & 1;
            if (red[i])
                scalars[(*n)++] = i;
        }
        return true;
    }
    return false;
}

/* A permutation taking in's shape to out's, preferring one that moves something; false if none. */
static bool find_perm(const nd_dist_spec *in, const nd_dist_spec *out, int *perm)
{
    int r = in->rank, p[ND_MAX_RANK], best[ND_MAX_RANK];
    bool found = false;
    if (out->rank != r)
        return false;
    for (int i = 0; i < r; ++i)
        p[i] = i;
    for (;;) { /* every permutation in lexicographic order */
        bool fits = true, moves = false;
        for (int i = 0; i < r; ++i) {
            fits = fits && out->shape[i] == in->shape[p[i]];
            moves = moves || p[i] != i;
        }
        if (fits && (!found || moves)) {
            memcpy(best, p, sizeof p);
            found = true;
            if (moves)
                break;
        }
        int i = r - 2;
        while (i >= 0 && p[i] > p[i + 1])
            --i;
        if (i < 0)
            break;
        int j = r - 1;
        while (p[j] < p[i])
            --j;
        int t = p[i];
        p[i] = p[j];
        p[j] = t;
        for (int a = i + 1, b = r - 1; a < b; ++a, --b) {
            t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
    }
    memcpy(perm, best, sizeof best);
    return found;
}

/* ---------------------------------------------------------------- one target */

typedef td_setup setup;

static int make_setup(const nda_kernel_entry *e, const char *const *sigs, setup *s, nd_error *err)
{
    return td_setup_open(sigs, e->noperands, 2, s, err);
}

static void free_setup(setup *s) { td_setup_free(s); }

/* acc[j] combined with element j of part by reduce op r (first: acc = part), in f32, as DTensor
 * defines each op: written out here, independently of the collective under test. */
static void add_part(float *acc, const uint8_t *part, nd_dtype t, int64_t n, bool first, nd_reduce r)
{
    for (int64_t j = 0; j < n; ++j) {
        const float f = load_value(part, j, t);
        if (first)
            acc[j] = f;
        else if (r == ND_REDUCE_MAX) /* NaN when any part is NaN */
            acc[j] = isnan(acc[j]) || isnan(f) ? NAN : f > acc[j] ? f : acc[j];
        else if (r == ND_REDUCE_MIN)
            acc[j] = isnan(acc[j]) || isnan(f) ? NAN : f < acc[j] ? f : acc[j];
        else if (r == ND_REDUCE_PRODUCT)
            acc[j] = acc[j] * f;
        else
            acc[j] = acc[j] + f;
    }
}

/* The combined value into out; avg divides the sum by the number of parts. */
static void store_sum(uint8_t *out, const float *acc, nd_dtype t, int64_t n, nd_reduce r, int parts)
{
    for (int64_t j = 0; j < n; ++j) {
        store_value(out, j, t, r == ND_REDUCE_AVG ? acc[j] / (float)parts : acc[j]);
    }
}

/* The value of tensor t: the tensor itself, or its parts combined by its reduce op when it is Partial. */
static void read_value(nd_tensor *t, uint8_t *out, int64_t elems)
{
    const nd_dist *d = nd_tensor_dist(t);
    nd_error err;
    int64_t bytes = elems * d->elem_bytes;
    if (d->spec.parts == 1) {
        CHECK(nd_tensor_read(t, out, bytes, &err) == 0, "%s", err.msg);
        return;
    }
    float *acc = malloc((size_t)elems * sizeof *acc);
    for (int q = 0; q < d->spec.parts; ++q) {
        CHECK(nd_tensor_read_part(t, q, out, bytes, &err) == 0, "%s", err.msg);
        add_part(acc, out, d->spec.dtype, elems, q == 0, d->spec.reduce);
    }
    store_sum(out, acc, d->spec.dtype, elems, d->spec.reduce, d->spec.parts);
    free(acc);
}

/* Runs op with variant want; returns the output (last operand) gathered, and the per-core stats. */
static uint8_t *run(nd_kernels *k, setup *s, const char *op, const double *scalars, int nscalars,
                    nd_variant want, nd_kernel_pick *pick, nda_stats **stats)
{
    nd_error err;
    nd_launch_stats ls;
    int64_t n = s->elems[s->n - 1] * s->d[s->n - 1].elem_bytes;
    uint8_t *zero = calloc((size_t)n, 1), *out = malloc((size_t)n);
    nd_tensor_write(s->t[s->n - 1], zero, n, &err);
    int rc = nd_run(&(nd_launch_desc){.device = s->dev, .kernels = k, .op = op, .tensors = s->t, .ntensors = s->n,
                                      .scalars = scalars, .nscalars = nscalars, .variant = want, .pick = pick,
                                      .stats = &ls}, &err);
    CHECK(rc == 0, "%s: %s", op, err.msg);
    read_value(s->t[s->n - 1], out, s->elems[s->n - 1]);
    *stats = malloc((size_t)ls.ncores * sizeof **stats);
    memcpy(*stats, ls.per_core, (size_t)ls.ncores * sizeof **stats);
    free(zero);
    return out;
}

/* Random elements: floats are multiples of 1/4 in [-8, 8], exact in every floating dtype. */
static void random_fill(uint8_t *x, const nd_dist *d, int64_t elems)
{
    for (int64_t j = 0; j < elems; ++j) {
        float f = (float)rng_range(&test_seed, -32, 32) / 4.0f;
        uint32_t u = (uint32_t)rng_next(&test_seed);
        if (nd_dtype_floating(d->spec.dtype)) {
            store_value(x, j, d->spec.dtype, f); /* exact: quarters need few mantissa bits */
        } else {
            memcpy(x + j * d->elem_bytes, &u, (size_t)d->elem_bytes);
        }
    }
}

/* Writes random data to input t and returns its value: for a Partial input, every part gets its own
 * data and the value is their sum (exact: few quarters add up exactly in f32 and in bf16). With nan, the
 * middle element of the last part is NaN, which a max or min must pass on. */
static uint8_t *random_input(nd_tensor *t, int64_t elems, bool nan)
{
    const nd_dist *d = nd_tensor_dist(t);
    nd_error err;
    int64_t bytes = elems * d->elem_bytes;
    uint8_t *x = malloc((size_t)bytes);
    float *acc = d->spec.parts > 1 ? malloc((size_t)elems * sizeof *acc) : NULL;
    for (int q = 0; q < d->spec.parts; ++q) {
        random_fill(x, d, elems);
        if (nan && q == d->spec.parts - 1 && elems > 0 && nd_dtype_floating(d->spec.dtype))
            store_value(x, elems / 2, d->spec.dtype, NAN);
        int rc = d->spec.parts > 1 ? nd_tensor_write_part(t, q, x, bytes, &err) : nd_tensor_write(t, x, bytes, &err);
        CHECK(rc == 0, "%s", err.msg);
        if (acc)
            add_part(acc, x, d->spec.dtype, elems, q == 0, d->spec.reduce);
    }
    if (acc)
        store_sum(x, acc, d->spec.dtype, elems, d->spec.reduce, d->spec.parts);
    free(acc);
    return x;
}

/* One target, given by its operands' signatures: the specialized kernel (prebuilt, or on demand
 * when e is the op's generic entry and the JIT is on) against the generic one against the reference. */
void check_case(nd_kernels *k, const nda_kernel_entry *e, const char *const *sigs)
{
    setup s;
    nd_error err;
    if (make_setup(e, sigs, &s, &err)) {
        CHECK(0, "%s: cannot set up its target: %s", e->symbol, err.msg);
        return;
    }
    const void *in[8];
    for (int i = 0; i + 1 < s.n; ++i) { /* a NaN in a Partial max or min (reduce_max's own NaN: test_reduce;
                                            the property libraries' reduce_max passes NaN over, as fmaxf) */
        const nd_reduce r = s.d[i].spec.reduce;
        in[i] = random_input(s.t[i], s.elems[i], s.d[i].spec.parts > 1 && (r == ND_REDUCE_MAX || r == ND_REDUCE_MIN));
    }
    int perm[ND_MAX_RANK];
    bool red[ND_MAX_RANK] = {false};
    double scalars[ND_MAX_RANK];
    int nscalars = 0;
    if (e->scalars && strncmp(e->scalars, "perm", 4) == 0) {
        CHECK(find_perm(&s.d[0].spec, &s.d[1].spec, perm), "no permutation takes the input's shape to the output's");
        for (nscalars = 0; nscalars < s.d[0].spec.rank; ++nscalars)
            scalars[nscalars] = perm[nscalars];
    } else if (e->scalars) {
        CHECK(find_axes(&s.d[0].spec, &s.d[1].spec, red, scalars, &nscalars), "no axes reduce the input to the output");
    }
    nd_kernel_pick pg, ps, pa;
    nda_stats *sg, *ss, *sa;
    uint8_t *g = run(k, &s, e->op, scalars, nscalars, ND_VARIANT_GENERIC, &pg, &sg);
    uint8_t *sp = run(k, &s, e->op, scalars, nscalars, ND_VARIANT_SPECIALIZED, &ps, &ss);
    uint8_t *au = run(k, &s, e->op, scalars, nscalars, ND_VARIANT_AUTO, &pa, &sa);
    const char *want_symbol = e->signatures ? e->symbol : ps.symbol; /* on demand: the JIT's kernel */
    CHECK(!pg.specialized && ps.specialized && strcmp(ps.symbol, want_symbol) == 0 &&
          strcmp(pa.symbol, want_symbol) == 0, "picked %s (generic), %s (specialized), %s (auto)", pg.symbol,
          ps.symbol, pa.symbol);
    int64_t nout = s.elems[s.n - 1], eb = s.d[s.n - 1].elem_bytes;
    CHECK(memcmp(g, sp, (size_t)(nout * eb)) == 0, "specialized output differs from generic");
    int64_t ncores = (int64_t)nd_device_get_config(s.dev).grid_x * nd_device_get_config(s.dev).grid_y;
    CHECK(memcmp(sg, ss, (size_t)ncores * sizeof *sg) == 0, "per-core statistics differ");
    /* Traffic: no core looks input pages up more than 3 times per row of every input page (every part of a
       Partial input) and per output element and input: walking output rows, a kernel looks an input page up
       once per row it crosses (tiles against rows: 32 per tile); gathering or broadcasting, once per element.
       A kernel whose lookups grow with its work instead of its data fails here: a row statistic recomputed
       per element (softmax over a split axis once read 193 pages per element). ndrun's reads column holds
       the bench's cases to 3 lookups per page of input. Contractions and reductions are left out: a
       contraction packs whole panels of the compile target's width per class (lanes past a class's own
       columns too), and an output element of a reduction reads each of its reduced elements, from as many
       pages when output pages are narrow; this bound models neither. test_contract and the bench's rows
       (1.0 to 2.0 per page) hold them. */
    int64_t bound = (s.n - 1) * nout;
    for (int i = 0; i + 1 < s.n; ++i) {
        int64_t rows = 1;
        for (int a = 0; a + 1 < s.d[i].spec.rank; ++a)
            rows *= s.d[i].spec.page[a];
        bound += s.d[i].layout.num_pages * s.d[i].spec.parts * rows;
    }
    const bool reduces = e->scalars && strncmp(e->scalars, "axes", 4) == 0;
    for (int64_t c = 0; c < ncores && !is_contraction(e) && !reduces; ++c) {
        const int64_t reads = ss[c].local_pages_read + ss[c].remote_pages_read;
        CHECK(reads <= 3 * bound,
              "core %" PRId64 " looked input pages up %" PRId64 " times, more than 3 times the %" PRId64
              " page rows and output elements per input", c, reads, bound);
    }
    scalar_fn *ref = NULL;
    bool known = e->scalars || strcmp(e->op, "softmax") == 0 || is_contraction(e) || reference_of(e->op, &ref);
    CHECK(known, "no reference for op '%s': add one to tests/test_kernels.c", e->op);
    if (known) {
        uint8_t *want = malloc((size_t)(nout * eb));
        if (e->scalars && strncmp(e->scalars, "perm", 4) == 0)
            reference_permute(want, in[0], s.d, perm);
        else if (e->scalars)
            reference_reduce(e->op, want, in[0], s.d, red);
        else if (strcmp(e->op, "softmax") == 0)
            reference_softmax(want, in[0], s.d);
        else if (is_contraction(e))
            reference_einsum(e, want, in, s.d);
        else
            reference(ref, want, in, s.d, s.n - 1);
        int64_t at = 0;
        while (at < nout && (memcmp(want + at * eb, g + at * eb, (size_t)eb) == 0 ||
                             within_vmath(e->op, s.d[s.n - 1].spec.dtype, g, want, at)))
            ++at;
        uint32_t got = 0, exp = 0;
        if (at < nout) {
            memcpy(&got, g + at * eb, (size_t)eb);
            memcpy(&exp, want + at * eb, (size_t)eb);
        }
        CHECK(at == nout, "generic output differs from the reference at element %" PRId64 ": bits %#x, want %#x",
              at, got, exp);
        free(want);
    }
    for (int i = 0; i + 1 < s.n; ++i)
        free((void *)in[i]);
    void *owned[] = {g, sp, au, sg, ss, sa};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; ++i)
        free(owned[i]);
    free_setup(&s);
    ++passed;
}

static void check_target(nd_kernels *k, const nda_kernel_entry *e)
{
    test_case = e->symbol;
    check_case(k, e, e->signatures);
}

/* A distribution no target has: auto falls back to generic; forcing specialized explains. */
static void check_fallback(nd_kernels *k, const nda_kernel_entry *e)
{
    setup s;
    nd_error err;
    nd_kernel_pick p;
    test_case = "fallback";
    if (make_setup(e, e->signatures, &s, &err))
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
    CHECK_ERROR(rc, err, ND_ENOENT, "no specialized kernel for these distributions: operand");
    rc = nd_kernels_pick(k, "no_such_op", s.t, s.n, ND_VARIANT_AUTO, &p, &err);
    CHECK_ERROR(rc, err, ND_ENOENT, "no loaded kernel library provides it");
    rc = nd_kernels_pick(k, e->op, s.t, s.n - 1, ND_VARIANT_AUTO, &p, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "operands, but the launch gives");
    free_setup(&s);
    ++passed;
}

/* --random SECONDS [--seed N] --jit NDGEN SPEC_DIR TEMPLATE_DIR INCLUDE_DIR CFLAGS LDFLAGS */
static int random_main(nd_kernels *k, int argc, char **argv)
{
    double seconds = atof(argv[3]);
    struct timespec now;
    timespec_get(&now, TIME_UTC);
    uint64_t seed = (uint64_t)now.tv_sec * 1000000007u ^ (uint64_t)now.tv_nsec;
    int i = 4;
    if (i + 1 < argc && strcmp(argv[i], "--seed") == 0) {
        seed = strtoull(argv[i + 1], NULL, 0);
        i += 2;
    }
    if (i + 7 != argc || strcmp(argv[i], "--jit") != 0) {
        fprintf(stderr, "usage: test_kernels LIBRARY --random SECONDS [--seed N] --jit NDGEN SPEC_DIR TEMPLATE_DIR "
                        "INCLUDE_DIR CFLAGS LDFLAGS\n");
        return 1;
    }
    nd_error err;
    if (td_set_jit(k, argv + i + 1, &err)) {
        fprintf(stderr, "test_kernels: %s\n", err.msg);
        return 1;
    }
    int drawn = differential_main(k, seconds, seed);
    CHECK(drawn > 0, "no random case was drawn in %g s", seconds);
    nd_kernels_close(k);
    return test_finish(passed);
}

int main(int argc, char **argv)
{
    nd_kernels *k;
    nd_error err;
    if (argc < 2 || nd_kernels_open(&k, &err) || nd_kernels_load(k, argv[1], &err)) {
        fprintf(stderr, "usage: test_kernels LIBRARY: %s\n", argc < 2 ? "no library" : err.msg);
        return 1;
    }
    if (argc > 3 && strcmp(argv[2], "--random") == 0)
        return random_main(k, argc, argv);
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
