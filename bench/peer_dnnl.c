/*
 * peer_dnnl.c - oneDNN as the peer of every family it has a primitive for, on the CPU engine, each
 * primitive made once per case (as a framework caches it) and run on the case's dense arrays:
 * eltwise for unary ops, binary (with broadcast) for binary ones, softmax over the last axis,
 * reduction, reorder for a permute (the output's strides permuted) and for a reshard's dense form (a
 * copy), matmul for contractions. Its threads are OpenMP's, set to the device's count before each run.
 */
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"

/* libgomp's (CMakeLists.txt links the runtime oneDNN uses, whatever compiler builds ndrun). */
void omp_set_num_threads(int num_threads);

typedef struct dnnl_peer {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t prim;
    dnnl_memory_t mem[3]; /* inputs, then the output (pointers set at each run) */
    int args[3];          /* their DNNL_ARG_* */
    int nmem;
} dnnl_peer;

/* A dense row-major f32 descriptor of dims, or with explicit strides. */
static dnnl_status_t dense(dnnl_memory_desc_t *md, int rank, const int64_t *dims)
{
    dnnl_dims_t d, s;
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; --i) {
        d[i] = dims[i];
        s[i] = stride;
        stride *= dims[i];
    }
    return dnnl_memory_desc_init_by_strides(md, rank, d, dnnl_f32, s);
}

static dnnl_alg_kind_t unary_alg(const char *op, float *alpha)
{
    static const struct {
        const char *op;
        dnnl_alg_kind_t alg;
        float alpha;
    } algs[] = {{"relu", dnnl_eltwise_relu, 0},   {"gelu", dnnl_eltwise_gelu_erf, 0}, {"exp", dnnl_eltwise_exp, 0},
                {"log", dnnl_eltwise_log, 0},     {"sqrt", dnnl_eltwise_sqrt, 0},     {"neg", dnnl_eltwise_linear, -1},
                {"abs", dnnl_eltwise_abs, 0},     {"sigmoid", dnnl_eltwise_logistic, 0},
                {"tanh", dnnl_eltwise_tanh, 0}};
    for (size_t i = 0; i < sizeof algs / sizeof *algs; ++i)
        if (strcmp(op, algs[i].op) == 0) {
            *alpha = algs[i].alpha;
            return algs[i].alg;
        }
    return dnnl_alg_kind_undef;
}

static dnnl_alg_kind_t binary_alg(const char *op)
{
    static const struct {
        const char *op;
        dnnl_alg_kind_t alg;
    } algs[] = {{"add", dnnl_binary_add}, {"sub", dnnl_binary_sub}, {"mul", dnnl_binary_mul},
                {"div", dnnl_binary_div}, {"max", dnnl_binary_max}, {"min", dnnl_binary_min}};
    for (size_t i = 0; i < sizeof algs / sizeof *algs; ++i)
        if (strcmp(op, algs[i].op) == 0)
            return algs[i].alg;
    return dnnl_alg_kind_undef;
}

static void dnnl_close(void *state)
{
    dnnl_peer *d = state;
    if (!d)
        return;
    for (int i = 0; i < d->nmem; ++i)
        if (d->mem[i])
            dnnl_memory_destroy(d->mem[i]);
    if (d->prim)
        dnnl_primitive_destroy(d->prim);
    if (d->stream)
        dnnl_stream_destroy(d->stream);
    if (d->engine)
        dnnl_engine_destroy(d->engine);
    free(d);
}

/* The primitive from an op descriptor (NULL for a reorder, made from md[0] to md[n - 1]) and its
 * memories, one per md, with their argument kinds; the implementation oneDNN chose is added to what
 * ("jit:avx512_core", or "ref" for its plain loops), so the table says which code ran. */
static dnnl_status_t make(dnnl_peer *d, const void *op_desc, const dnnl_memory_desc_t *md, const int *args, int n,
                          char *what, size_t len)
{
    dnnl_primitive_desc_t pd = NULL;
    const char *impl = NULL;
    dnnl_status_t st = op_desc ? dnnl_primitive_desc_create(&pd, op_desc, NULL, d->engine, NULL)
                               : dnnl_reorder_primitive_desc_create(&pd, &md[0], d->engine, &md[n - 1], d->engine, NULL);
    if (st == dnnl_success && dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
        snprintf(what + strlen(what), len - strlen(what), " (%s)", impl);
    if (st == dnnl_success)
        st = dnnl_primitive_create(&d->prim, pd);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    for (int i = 0; i < n && st == dnnl_success; ++i, ++d->nmem) {
        d->args[i] = args[i];
        st = dnnl_memory_create(&d->mem[i], &md[i], d->engine, DNNL_MEMORY_NONE);
    }
    return st;
}

/* The primitive for p; dnnl_unimplemented when oneDNN has none for it. */
static dnnl_status_t build(dnnl_peer *d, const peer_problem *p, char *what, size_t len)
{
    dnnl_memory_desc_t md[3];
    dnnl_status_t st;
    int r = p->rank;
    switch (p->kind) {
    case PEER_UNARY: {
        float alpha = 0;
        dnnl_alg_kind_t alg = unary_alg(p->op, &alpha);
        dnnl_eltwise_desc_t desc;
        if (alg == dnnl_alg_kind_undef)
            return dnnl_unimplemented;
        snprintf(what, len, "eltwise");
        if ((st = dense(&md[0], r, p->a)) || (st = dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference, alg,
                                                                                   &md[0], alpha, 0.0f)))
            return st;
        md[1] = md[0];
        return make(d, &desc, md, (const int[]){DNNL_ARG_SRC, DNNL_ARG_DST}, 2, what, len);
    }
    case PEER_BINARY: {
        dnnl_binary_desc_t desc;
        dnnl_alg_kind_t alg = binary_alg(p->op);
        if (alg == dnnl_alg_kind_undef)
            return dnnl_unimplemented;
        snprintf(what, len, "binary");
        if ((st = dense(&md[0], r, p->a)) || (st = dense(&md[1], r, p->b)) || (st = dense(&md[2], r, p->a)) ||
            (st = dnnl_binary_desc_init(&desc, alg, &md[0], &md[1], &md[2])))
            return st;
        return make(d, &desc, md, (const int[]){DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, 3, what, len);
    }
    case PEER_SOFTMAX: {
        dnnl_softmax_v2_desc_t desc;
        snprintf(what, len, "softmax");
        if ((st = dense(&md[0], r, p->a)) || (st = dnnl_softmax_v2_forward_desc_init(
                                                   &desc, dnnl_forward_inference, dnnl_softmax_accurate, &md[0], &md[0],
                                                   r - 1)))
            return st;
        md[1] = md[0];
        return make(d, &desc, md, (const int[]){DNNL_ARG_SRC, DNNL_ARG_DST}, 2, what, len);
    }
    case PEER_REDUCE: {
        dnnl_reduction_desc_t desc;
        dnnl_alg_kind_t alg = !strcmp(p->op, "reduce_max")    ? dnnl_reduction_max
                              : !strcmp(p->op, "reduce_mean") ? dnnl_reduction_mean
                                                              : dnnl_reduction_sum;
        snprintf(what, len, "reduction");
        bool reduces = false; /* oneDNN refuses a reduction whose source and destination have the same dims */
        for (int i = 0; i < r; ++i)
            reduces |= p->a[i] != p->out[i];
        if (!reduces) /* every reduced dim has one index: a copy, which the case has no oneDNN peer for */
            return dnnl_unimplemented;
        if ((st = dense(&md[0], r, p->a)) || (st = dense(&md[1], r, p->out)) ||
            (st = dnnl_reduction_desc_init(&desc, alg, &md[0], &md[1], 0.0f, 0.0f)))
            return st;
        return make(d, &desc, md, (const int[]){DNNL_ARG_SRC, DNNL_ARG_DST}, 2, what, len);
    }
    case PEER_PERMUTE: { /* the input's dims, written with the output's strides: out axis i is input axis perm[i] */
        dnnl_dims_t dims, strides;
        int64_t stride = 1;
        for (int i = r - 1; i >= 0; --i) {
            dims[p->perm[i]] = p->a[p->perm[i]];
            strides[p->perm[i]] = stride;
            stride *= p->out[i];
        }
        snprintf(what, len, "reorder");
        if ((st = dense(&md[0], r, p->a)) || (st = dnnl_memory_desc_init_by_strides(&md[1], r, dims, dnnl_f32, strides)))
            return st;
        return make(d, NULL, md, (const int[]){DNNL_ARG_FROM, DNNL_ARG_TO}, 2, what, len);
    }
    case PEER_COPY:
        snprintf(what, len, "reorder");
        if ((st = dense(&md[0], 1, &p->elems)))
            return st;
        md[1] = md[0];
        return make(d, NULL, md, (const int[]){DNNL_ARG_FROM, DNNL_ARG_TO}, 2, what, len);
    case PEER_GEMM: {
        dnnl_matmul_desc_t desc;
        dnnl_dims_t ad = {p->batches, p->m, p->k}, bd = {p->batches, p->k, p->n}, od = {p->batches, p->m, p->n};
        dnnl_dims_t as = {p->m * p->k, p->k, 1}, os = {p->m * p->n, p->n, 1};
        dnnl_dims_t bs = {p->k * p->n, p->b_transposed ? 1 : p->n, p->b_transposed ? p->k : 1};
        snprintf(what, len, "matmul");
        if ((st = dnnl_memory_desc_init_by_strides(&md[0], 3, ad, dnnl_f32, as)) ||
            (st = dnnl_memory_desc_init_by_strides(&md[1], 3, bd, dnnl_f32, bs)) ||
            (st = dnnl_memory_desc_init_by_strides(&md[2], 3, od, dnnl_f32, os)) ||
            (st = dnnl_matmul_desc_init(&desc, &md[0], &md[1], NULL, &md[2])))
            return st;
        return make(d, &desc, md, (const int[]){DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, 3, what, len);
    }
    }
    return dnnl_unimplemented;
}

static int dnnl_open(const peer_problem *p, void **state, char *what, size_t len, nd_error *err)
{
    dnnl_peer *d = calloc(1, sizeof *d);
    dnnl_status_t st;
    if (!d)
        return nd_failc(err, ND_ENOMEM, "out of host memory");
    omp_set_num_threads(p->threads);
    if ((st = dnnl_engine_create(&d->engine, dnnl_cpu, 0)) == dnnl_success &&
        (st = dnnl_stream_create(&d->stream, d->engine, dnnl_stream_default_flags)) == dnnl_success)
        st = build(d, p, what, len);
    if (st == dnnl_success) {
        *state = d;
        return 1;
    }
    dnnl_close(d);
    if (st == dnnl_unimplemented) /* no primitive for this shape or op: no oneDNN peer for the case */
        return 0;
    return nd_failc(err, ND_EINVAL, "oneDNN %s for op '%s': status %d", what, p->op, (int)st);
}

static void dnnl_run(void *state, const peer_problem *p, const void *const *in, void *out)
{
    dnnl_peer *d = state;
    dnnl_exec_arg_t args[3];
    for (int i = 0; i < d->nmem; ++i) {
        dnnl_memory_set_data_handle(d->mem[i], i + 1 < d->nmem ? (void *)in[i] : out);
        args[i] = (dnnl_exec_arg_t){d->args[i], d->mem[i]};
    }
    omp_set_num_threads(p->threads);
    dnnl_primitive_execute(d->prim, d->stream, d->nmem, args);
    dnnl_stream_wait(d->stream);
}

const peer_lib nr_peer_dnnl = {"oneDNN", dnnl_open, dnnl_run, dnnl_close};
