/*
 * peer_blis.c - BLIS as the peer of contractions, through its typed API (general strides, so row-major
 * arrays go in as they are): bli_sgemm per batch, bli_sgemv for a matrix-vector product, on the
 * device's number of threads. Its kernels are the configuration BLIS picks for the CPU at run time.
 */
#include <blis.h>

#include "peer.h"

static int blis_open(const peer_problem *p, void **state, char *what, size_t len, nd_error *err)
{
    (void)err;
    if (p->kind != PEER_GEMM)
        return 0;
    *state = NULL;
    snprintf(what, len, "%s (%s)", p->gemv ? "bli_sgemv" : "bli_sgemm", bli_arch_string(bli_arch_query_id()));
    return 1;
}

static void blis_run(void *state, const peer_problem *p, const void *const *in, void *out)
{
    (void)state;
    float one = 1.0f, zero = 0.0f;
    float *a = (float *)in[0], *b = (float *)in[1], *c = out;
    bli_thread_set_num_threads(p->threads);
    if (p->gemv) {
        bli_sgemv(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, p->m, p->k, &one, a, p->k, 1, b, 1, &zero, c, 1);
        return;
    }
    /* b's strides by row and column of the k x n operand: (n, 1) as stored, (1, k) when stored n x k */
    inc_t rsb = p->b_transposed ? 1 : p->n, csb = p->b_transposed ? p->k : 1;
    for (int64_t i = 0; i < p->batches; ++i)
        bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, p->m, p->n, p->k, &one, a + i * p->m * p->k, p->k, 1,
                  b + i * p->k * p->n, rsb, csb, &zero, c + i * p->m * p->n, p->n, 1);
}

static void blis_close(void *state) { (void)state; }

const peer_lib nr_peer_blis = {"BLIS", blis_open, blis_run, blis_close};
