/*
 * peer_blas.c - OpenBLAS as the peer of contractions: sgemm per batch (b transposed where its reduced
 * letters come last, as attention scores hold it), sgemv for a matrix-vector product. Its kernels are
 * the ones it picks for the CPU, or those ndrun set for it (machine.c); the table names which.
 */
#include <cblas.h>
#include <dlfcn.h>
#include <string.h>

#include "peer.h"

void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);

/* Whether the CBLAS calls below reach OpenBLAS: other libraries (BLIS, a reference BLAS) define the
 * same names, and the first one loaded would answer them under OpenBLAS's name. */
static int blas_is_openblas(nd_error *err)
{
    Dl_info info;
    if (!dladdr((void *)cblas_sgemm, &info) || !info.dli_fname)
        return nd_failc(err, ND_ENOENT, "OpenBLAS peer: cannot tell which library cblas_sgemm is in");
    if (!strstr(info.dli_fname, "openblas"))
        return nd_failc(err, ND_EINVAL, "OpenBLAS peer: cblas_sgemm is %s's, not OpenBLAS's: another BLAS was loaded "
                        "first, and its row would carry the wrong name", info.dli_fname);
    return 0;
}

static int blas_open(const peer_problem *p, void **state, char *what, size_t len, nd_error *err)
{
    if (p->kind != PEER_GEMM)
        return 0;
    if (blas_is_openblas(err))
        return -1;
    *state = NULL;
    const char *core = openblas_get_corename();
    snprintf(what, len, "%s (%s)", p->gemv ? "sgemv" : "sgemm", core ? core : "?");
    return 1;
}

static void blas_run(void *state, const peer_problem *p, const void *const *in, void *out)
{
    (void)state;
    const float *a = in[0], *b = in[1];
    float *c = out;
    openblas_set_num_threads(p->threads);
    if (p->gemv) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)p->m, (int)p->k, 1.0f, a, (int)p->k, b, 1, 0.0f, c, 1);
        return;
    }
    for (int64_t i = 0; i < p->batches; ++i)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, p->b_transposed ? CblasTrans : CblasNoTrans, (int)p->m, (int)p->n,
                    (int)p->k, 1.0f, a + i * p->m * p->k, (int)p->k, b + i * p->k * p->n,
                    p->b_transposed ? (int)p->k : (int)p->n, 0.0f, c + i * p->m * p->n, (int)p->n);
}

static void blas_close(void *state) { (void)state; }

const peer_lib nr_peer_openblas = {"OpenBLAS", blas_open, blas_run, blas_close};
