/*
 * peer_blis.c - BLIS as the peer of contractions, through its typed API (general strides, so row-major
 * arrays go in as they are): bli_sgemm per batch, bli_sgemv for a matrix-vector product, on the
 * device's number of threads. Its kernels are the configuration BLIS picks for the CPU at run time.
 *
 * BLIS also defines the BLAS and CBLAS names (sgemm_, cblas_sgemm), as OpenBLAS does; linked beside
 * it, whichever library the linker lists first would answer both peers' calls (it did: the "OpenBLAS"
 * row ran BLIS). So BLIS is opened with dlopen, RTLD_LOCAL: its names stay out of the global scope,
 * and ndrun reaches it only through the bli_* functions looked up here.
 */
#include <blis.h>
#include <dlfcn.h>

#include "peer.h"

static struct {
    void *handle;
    __typeof__(bli_sgemm) *sgemm;
    __typeof__(bli_sgemv) *sgemv;
    __typeof__(bli_thread_set_num_threads) *set_threads;
    __typeof__(bli_arch_query_id) *arch_id;
    __typeof__(bli_arch_string) *arch_string;
} blis;

/* Opens BLIS once; false (with why) when it cannot be had here. */
static bool blis_load(nd_error *err)
{
    if (blis.handle)
        return true;
    void *h = dlopen(NDRUN_BLIS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return nd_failc(err, ND_ENOENT, "BLIS peer: %s", dlerror()), false;
    *(void **)&blis.sgemm = dlsym(h, "bli_sgemm");
    *(void **)&blis.sgemv = dlsym(h, "bli_sgemv");
    *(void **)&blis.set_threads = dlsym(h, "bli_thread_set_num_threads");
    *(void **)&blis.arch_id = dlsym(h, "bli_arch_query_id");
    *(void **)&blis.arch_string = dlsym(h, "bli_arch_string");
    if (!blis.sgemm || !blis.sgemv || !blis.set_threads || !blis.arch_id || !blis.arch_string) {
        dlclose(h);
        return nd_failc(err, ND_ENOENT, "BLIS peer: %s lacks a bli_* function ndrun calls", NDRUN_BLIS_LIBRARY), false;
    }
    blis.handle = h; /* kept open for the process's life: its threads and memory pools live on */
    return true;
}

static int blis_open(const peer_problem *p, void **state, char *what, size_t len, nd_error *err)
{
    if (p->kind != PEER_GEMM)
        return 0;
    if (!blis_load(err))
        return -1;
    *state = NULL;
    snprintf(what, len, "%s (%s)", p->gemv ? "bli_sgemv" : "bli_sgemm", blis.arch_string(blis.arch_id()));
    return 1;
}

static void blis_run(void *state, const peer_problem *p, const void *const *in, void *out)
{
    (void)state;
    float one = 1.0f, zero = 0.0f;
    float *a = (float *)in[0], *b = (float *)in[1], *c = out;
    blis.set_threads(p->threads);
    if (p->gemv) {
        blis.sgemv(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, p->m, p->k, &one, a, p->k, 1, b, 1, &zero, c, 1);
        return;
    }
    /* b's strides by row and column of the k x n operand: (n, 1) as stored, (1, k) when stored n x k */
    inc_t rsb = p->b_transposed ? 1 : p->n, csb = p->b_transposed ? p->k : 1;
    for (int64_t i = 0; i < p->batches; ++i)
        blis.sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, p->m, p->n, p->k, &one, a + i * p->m * p->k, p->k, 1,
                   b + i * p->k * p->n, rsb, csb, &zero, c + i * p->m * p->n, p->n, 1);
}

static void blis_close(void *state) { (void)state; }

const peer_lib nr_peer_blis = {"BLIS", blis_open, blis_run, blis_close};
