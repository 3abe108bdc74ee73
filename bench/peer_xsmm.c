/*
 * peer_xsmm.c - LIBXSMM as the peer of small matrix products, what it is made for: a JIT-generated
 * kernel per shape (libxsmm_smmdispatch, alpha 1, beta 0), dispatched once per case and called per batch
 * and per block of rows, the pieces dealt to the device's threads (LIBXSMM leaves threading to its
 * caller). Row-major c = a b is column-major c^T = b^T a^T, so b goes first. Products of a dimension
 * past XSMM_MAX, b stored transposed and matrix-vector products have no LIBXSMM peer.
 */
#include <libxsmm.h>
#include <stdlib.h>

#include "peer.h"

enum { XSMM_MAX = 256 };

typedef struct xsmm_peer {
    libxsmm_smmfunction full, tail; /* rows blocks of `rows` rows, and the last block's */
    int64_t rows, parts;            /* rows per piece; pieces per batch */
    const float *a, *b;
    float *c;
    const peer_problem *p;
} xsmm_peer;

static libxsmm_smmfunction dispatch(const peer_problem *p, int64_t rows)
{
    const libxsmm_blasint m = (libxsmm_blasint)p->n, n = (libxsmm_blasint)rows, k = (libxsmm_blasint)p->k;
    const libxsmm_blasint lda = m, ldb = k, ldc = m;
    const float alpha = 1.0f, beta = 0.0f;
    const int flags = LIBXSMM_GEMM_FLAG_NONE, prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
    return libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, &prefetch);
}

static int xsmm_open(const peer_problem *p, void **state, char *what, size_t len, nd_error *err)
{
    if (p->kind != PEER_GEMM || p->gemv || p->b_transposed || p->m > XSMM_MAX || p->n > XSMM_MAX || p->k > XSMM_MAX)
        return 0;
    xsmm_peer *x = calloc(1, sizeof *x);
    if (!x)
        return nd_failc(err, ND_ENOMEM, "out of host memory");
    libxsmm_init();
    x->parts = p->batches >= p->threads ? 1 : (p->threads + p->batches - 1) / p->batches;
    x->rows = (p->m + x->parts - 1) / x->parts;
    x->full = dispatch(p, x->rows);
    x->tail = dispatch(p, p->m - x->rows * ((p->m - 1) / x->rows));
    if (!x->full || !x->tail) { /* no JIT kernel for the shape here: no LIBXSMM peer */
        free(x);
        return 0;
    }
    snprintf(what, len, "smmdispatch (%s)", libxsmm_get_target_arch());
    *state = x;
    return 1;
}

/* Piece q: batch q / parts, its rows block q % parts. */
static void xsmm_piece(void *ctx, int64_t q)
{
    const xsmm_peer *x = ctx;
    const peer_problem *p = x->p;
    int64_t batch = q / x->parts, r0 = q % x->parts * x->rows, r1 = r0 + x->rows < p->m ? r0 + x->rows : p->m;
    if (r0 >= r1)
        return;
    const float *a = x->a + (batch * p->m + r0) * p->k, *b = x->b + batch * p->k * p->n;
    float *c = x->c + (batch * p->m + r0) * p->n;
    (r1 - r0 == x->rows ? x->full : x->tail)(b, a, c);
}

static void xsmm_run(void *state, const peer_problem *p, const void *const *in, void *out)
{
    xsmm_peer *x = state;
    x->a = in[0], x->b = in[1], x->c = out, x->p = p;
    nd_device_parallel(p->dev, p->batches * x->parts, xsmm_piece, x);
}

static void xsmm_close(void *state) { free(state); }

const peer_lib nr_peer_xsmm = {"LIBXSMM", xsmm_open, xsmm_run, xsmm_close};
