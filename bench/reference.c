/*
 * reference.c - every op as plain loops over contiguous row-major arrays, split over the device's
 * threads: what a programmer writes without any distribution. It is the third way ndrun compare runs
 * an op, checking both kernels and showing what the hardware gives a plain loop.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ndrun.h"

enum { CHUNK = 4096 }; /* elements per piece of work handed to a thread */

static float bf16_load(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t bf16_store(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if (isnan(f))
        return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); /* nearest, ties to even */
}

float nr_load_f32(const void *p, int64_t i, nd_dtype t)
{
    return t == ND_BF16 ? bf16_load(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void store(void *p, int64_t i, nd_dtype t, float v)
{
    if (t == ND_BF16)
        ((uint16_t *)p)[i] = bf16_store(v);
    else
        ((float *)p)[i] = v;
}

/* ---------------------------------------------------------------- elementwise */

typedef void loop_fn(float *o, const float *a, const float *b, const float *c, int64_t n);

/* One loop per op and arity, with nothing in it but the expression, so the compiler vectorizes it. */
#define NR_LOOP(name, expr)                                                                   \
    static void loop_##name(float *o, const float *a, const float *b, const float *c, int64_t n) \
    {                                                                                         \
        (void)b, (void)c;                                                                     \
        for (int64_t i = 0; i < n; ++i)                                                       \
            o[i] = (expr);                                                                    \
    }
#define X a[i]
#define Y b[i]
#define Z c[i]
NR_LOOP(relu, X > 0.0f ? X : 0.0f)
NR_LOOP(gelu, 0.5f * X * (1.0f + erff(X * 0.70710678f)))
NR_LOOP(exp, expf(X))
NR_LOOP(log, logf(X))
NR_LOOP(sqrt, sqrtf(X))
NR_LOOP(neg, -X)
NR_LOOP(abs, fabsf(X))
NR_LOOP(sigmoid, 1.0f / (1.0f + expf(-X)))
NR_LOOP(tanh, tanhf(X))
NR_LOOP(add, X + Y)
NR_LOOP(sub, X - Y)
NR_LOOP(mul, X * Y)
NR_LOOP(div, X / Y)
NR_LOOP(max, fmaxf(X, Y))
NR_LOOP(min, fminf(X, Y))
NR_LOOP(mul_add, X * Y + Z)
NR_LOOP(lerp, X + (Y - X) * Z)
NR_LOOP(clamp, fminf(fmaxf(X, Y), Z))
#undef X
#undef Y
#undef Z
#undef NR_LOOP

static const struct {
    const char *op;
    loop_fn *fn;
} loops[] = {
    {"relu", loop_relu}, {"gelu", loop_gelu}, {"exp", loop_exp}, {"log", loop_log}, {"sqrt", loop_sqrt},
    {"neg", loop_neg}, {"abs", loop_abs}, {"sigmoid", loop_sigmoid}, {"tanh", loop_tanh}, {"add", loop_add},
    {"sub", loop_sub}, {"mul", loop_mul}, {"div", loop_div}, {"max", loop_max}, {"min", loop_min},
    {"mul_add", loop_mul_add}, {"lerp", loop_lerp}, {"clamp", loop_clamp},
};

static loop_fn *loop_of(const char *op)
{
    for (size_t i = 0; i < sizeof loops / sizeof *loops; ++i)
        if (strcmp(loops[i].op, op) == 0)
            return loops[i].fn;
    return NULL;
}

typedef struct job {
    const nr_setup *su;
    void *out;
    loop_fn *fn;
    int64_t n;               /* work items */
    int64_t m, k, cols;      /* matmul sizes; rows of softmax */
    int64_t extent[ND_MAX_RANK];
} job;

/* Input k's element for output element x (numpy broadcasting from the right). */
static int64_t broadcast_index(const nd_dist_spec *in, const nd_dist_spec *out, const int64_t *x)
{
    int64_t idx = 0;
    for (int i = 0; i < in->rank; ++i)
        idx = idx * in->shape[i] + (in->shape[i] == 1 ? 0 : x[i + out->rank - in->rank]);
    return idx;
}

static void eltwise_chunk(void *ctx, int64_t piece)
{
    const job *j = ctx;
    const nr_setup *su = j->su;
    int nin = su->n - 1;
    const nd_dist_spec *o = &su->dist[nin].spec;
    int64_t lo = piece * CHUNK, n = su->elems[nin] - lo < CHUNK ? su->elems[nin] - lo : CHUNK;
    bool plain = o->dtype == ND_F32;
    for (int k = 0; k < nin; ++k)
        plain = plain && su->elems[k] == su->elems[nin];
    if (plain) { /* the loop a programmer writes: straight over the arrays */
        const float *in[3] = {NULL, NULL, NULL};
        for (int k = 0; k < nin; ++k)
            in[k] = (const float *)su->host[k] + lo;
        j->fn((float *)j->out + lo, in[0], in[1], in[2], n);
        return;
    }
    float buf[3][CHUNK] = {{0}}, res[CHUNK];
    int64_t x[ND_MAX_RANK];
    for (int64_t e = 0; e < n; ++e) { /* broadcasting or bf16: gather into f32, then the same loop */
        int64_t rest = lo + e;
        for (int i = o->rank - 1; i >= 0; --i) {
            x[i] = rest % o->shape[i];
            rest /= o->shape[i];
        }
        for (int k = 0; k < nin; ++k)
            buf[k][e] = nr_load_f32(su->host[k], broadcast_index(&su->dist[k].spec, o, x), su->dist[k].spec.dtype);
    }
    j->fn(res, buf[0], nin > 1 ? buf[1] : NULL, nin > 2 ? buf[2] : NULL, n);
    for (int64_t e = 0; e < n; ++e)
        store(j->out, lo + e, o->dtype, res[e]);
}

static void copy_chunk(void *ctx, int64_t piece)
{
    const job *j = ctx;
    int64_t bytes = nr_bytes(j->su, 1), lo = piece * CHUNK * 64, n = bytes - lo < CHUNK * 64 ? bytes - lo : CHUNK * 64;
    memcpy((uint8_t *)j->out + lo, (const uint8_t *)j->su->host[0] + lo, (size_t)n);
}

/* ---------------------------------------------------------------- matmul and other contractions */

/* out[i,:] = sum_k a[i,k] * b[k,:], one row of out per item: the textbook i-k-j loop. */
static void matmul_row(void *ctx, int64_t i)
{
    const job *j = ctx;
    const float *a = (const float *)j->su->host[0] + i * j->k, *b = j->su->host[1];
    float *o = (float *)j->out + i * j->cols;
    memset(o, 0, (size_t)j->cols * sizeof *o);
    for (int64_t kk = 0; kk < j->k; ++kk) {
        float av = a[kk];
        const float *brow = b + kk * j->cols;
        for (int64_t c = 0; c < j->cols; ++c)
            o[c] += av * brow[c];
    }
}

/* Any contraction, one output element per item: sum over every value of the reduced letters. */
static void einsum_elem(void *ctx, int64_t o)
{
    const job *j = ctx;
    const nr_setup *su = j->su;
    const char *const *ix = su->entry->indices;
    int64_t size[128] = {0}, val[128] = {0};
    char red[16];
    int nred = 0;
    for (int k = 0; k < 2; ++k)
        for (int i = 0; ix[k][i]; ++i) {
            unsigned char c = (unsigned char)ix[k][i];
            size[c] = su->dist[k].spec.shape[i];
            if (!strchr(ix[2], c) && !memchr(red, c, (size_t)nred))
                red[nred++] = (char)c;
        }
    int64_t rest = o, combos = 1;
    for (int i = (int)strlen(ix[2]) - 1; i >= 0; --i) {
        unsigned char c = (unsigned char)ix[2][i];
        val[c] = rest % size[c];
        rest /= size[c];
    }
    for (int k = 0; k < nred; ++k)
        combos *= size[(unsigned char)red[k]];
    float acc = 0.0f;
    for (int64_t r = 0; r < combos; ++r) {
        int64_t left = r, xa = 0, xb = 0;
        for (int k = nred - 1; k >= 0; --k) {
            val[(unsigned char)red[k]] = left % size[(unsigned char)red[k]];
            left /= size[(unsigned char)red[k]];
        }
        for (int i = 0; ix[0][i]; ++i)
            xa = xa * size[(unsigned char)ix[0][i]] + val[(unsigned char)ix[0][i]];
        for (int i = 0; ix[1][i]; ++i)
            xb = xb * size[(unsigned char)ix[1][i]] + val[(unsigned char)ix[1][i]];
        acc += nr_load_f32(su->host[0], xa, su->dist[0].spec.dtype) * nr_load_f32(su->host[1], xb, su->dist[1].spec.dtype);
    }
    store(j->out, o, su->dist[2].spec.dtype, acc);
}

/* ---------------------------------------------------------------- permute, reductions, softmax */

/* out[x] = in[y] with y[perm[i]] = x[i]: walks out in order, stepping the source offset by strides. */
static void permute_chunk(void *ctx, int64_t piece)
{
    const job *j = ctx;
    const nr_setup *su = j->su;
    const nd_dist_spec *in = &su->dist[0].spec, *out = &su->dist[1].spec;
    const int r = out->rank;
    int64_t eb = su->dist[1].elem_bytes, lo = piece * CHUNK, hi = lo + CHUNK < su->elems[1] ? lo + CHUNK : su->elems[1];
    int64_t instride[ND_MAX_RANK], step[ND_MAX_RANK], x[ND_MAX_RANK], src = 0, rest = lo;
    for (int i = in->rank - 1, s = 1; i >= 0; --i) {
        instride[i] = s;
        s *= (int)in->shape[i];
    }
    for (int i = r - 1; i >= 0; --i) { /* the chunk's first element, once */
        step[i] = instride[(int)su->scalars[i]];
        x[i] = rest % out->shape[i];
        rest /= out->shape[i];
        src += x[i] * step[i];
    }
    uint8_t *dst = (uint8_t *)j->out + lo * eb;
    const uint8_t *from = su->host[0];
    for (int64_t e = lo; e < hi; ++e, dst += eb) {
        if (eb == 4)
            memcpy(dst, from + src * 4, 4);
        else
            memcpy(dst, from + src * eb, (size_t)eb);
        for (int i = r - 1; i >= 0; --i) { /* the next output coordinate */
            src += step[i];
            if (++x[i] < out->shape[i])
                break;
            src -= step[i] * out->shape[i];
            x[i] = 0;
        }
    }
}

/* One output element per item: fold every input element that maps to it, in row-major order. */
static void reduce_elem(void *ctx, int64_t o)
{
    const job *j = ctx;
    const nr_setup *su = j->su;
    const nd_dist_spec *in = &su->dist[0].spec;
    bool red[ND_MAX_RANK] = {false}, max = strcmp(su->entry->op, "reduce_max") == 0;
    for (int i = 0; i < su->nscalars; ++i)
        red[(int)su->scalars[i]] = true;
    int64_t x[ND_MAX_RANK], rest = o, combos = 1;
    for (int i = in->rank - 1; i >= 0; --i) { /* kept coordinates from o; reduced ones start at 0 */
        x[i] = red[i] ? 0 : rest % in->shape[i];
        rest /= red[i] ? 1 : in->shape[i];
        combos *= red[i] ? in->shape[i] : 1;
    }
    float acc = max ? -INFINITY : 0.0f;
    for (int64_t r = 0; r < combos; ++r) {
        int64_t idx = 0;
        for (int i = 0; i < in->rank; ++i)
            idx = idx * in->shape[i] + x[i];
        float v = nr_load_f32(su->host[0], idx, in->dtype);
        acc = max ? fmaxf(acc, v) : acc + v;
        for (int i = in->rank - 1; i >= 0; --i) { /* next combination of the reduced coordinates */
            if (!red[i])
                continue;
            if (++x[i] < in->shape[i])
                break;
            x[i] = 0;
        }
    }
    if (strcmp(su->entry->op, "reduce_mean") == 0)
        acc /= (float)combos;
    store(j->out, o, su->dist[1].spec.dtype, acc);
}

static void softmax_row(void *ctx, int64_t row)
{
    const job *j = ctx;
    const nr_setup *su = j->su;
    nd_dtype t = su->dist[0].spec.dtype;
    int64_t w = j->cols, base = row * w;
    float max = -INFINITY, sum = 0.0f;
    for (int64_t e = 0; e < w; ++e)
        max = fmaxf(max, nr_load_f32(su->host[0], base + e, t));
    for (int64_t e = 0; e < w; ++e)
        sum += expf(nr_load_f32(su->host[0], base + e, t) - max);
    for (int64_t e = 0; e < w; ++e)
        store(j->out, base + e, su->dist[1].spec.dtype, expf(nr_load_f32(su->host[0], base + e, t) - max) / sum);
}

/* ---------------------------------------------------------------- dispatch */

int nr_reference(nd_device *dev, const nr_setup *su, void *out, nd_error *err)
{
    const char *op = su->entry->op;
    const nd_dist_spec *o = &su->dist[su->n - 1].spec;
    job j = {.su = su, .out = out};
    int64_t nout = su->elems[su->n - 1];
    if (strcmp(op, "permute") == 0) {
        nd_device_parallel(dev, (nout + CHUNK - 1) / CHUNK, permute_chunk, &j);
    } else if (nr_moves_data(op)) {
        nd_device_parallel(dev, (nr_bytes(su, 1) + CHUNK * 64 - 1) / (CHUNK * 64), copy_chunk, &j);
    } else if ((j.fn = loop_of(op))) {
        nd_device_parallel(dev, (nout + CHUNK - 1) / CHUNK, eltwise_chunk, &j);
    } else if (strcmp(op, "matmul") == 0 && o->dtype == ND_F32) {
        j.k = su->dist[0].spec.shape[1];
        j.cols = o->shape[1];
        nd_device_parallel(dev, o->shape[0], matmul_row, &j);
    } else if (nr_is_contraction(su->entry)) {
        nd_device_parallel(dev, nout, einsum_elem, &j);
    } else if (strncmp(op, "reduce_", 7) == 0) {
        nd_device_parallel(dev, nout, reduce_elem, &j);
    } else if (strcmp(op, "softmax") == 0) {
        j.cols = o->shape[o->rank - 1];
        nd_device_parallel(dev, nout / j.cols, softmax_row, &j);
    } else {
        return nd_failc(err, ND_ENOENT, "op '%s': ndrun has no plain reference for it", op);
    }
    return 0;
}
