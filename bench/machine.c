/*
 * machine.c - what the machine can do, measured in the same run as the kernels and on the same
 * threads: STREAM-style copy and add over arrays of the case's size, memcpy, the f32 multiply-add
 * peak from registers, and OpenBLAS sgemm when ndrun was built with it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ndrun.h"

#ifdef NDRUN_HAVE_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int num_threads);
#endif

double nr_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


/* Static split, one piece per thread, as STREAM's OpenMP loops do. */
static void stream_piece(void *ctx, int64_t p)
{
    stream_job *j = ctx;
    int64_t lo = j->n * p / j->pieces, hi = j->n * (p + 1) / j->pieces;
    float *restrict a = j->a, *restrict b = j->b, *restrict c = j->c;
    switch (j->kind) {
    case 0:
        for (int64_t i = lo; i < hi; ++i) {
            a[i] = 1.0f;
            b[i] = 2.0f;
            c[i] = 0.0f;
        }
        break;
    case 1:
        for (int64_t i = lo; i < hi; ++i)
            c[i] = a[i];
        break;
    case 2:
        for (int64_t i = lo; i < hi; ++i)
            c[i] = a[i] + b[i];
        break;
    default:
        memcpy(c + lo, a + lo, (size_t)(hi - lo) * sizeof *c);
        break;
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median seconds of one kernel over rounds, under the settings' repeat rules. */
static double median_of(nd_device *dev, stream_job *j, int kind, const nr_settings *s)
{
    double t[1000], start = nr_now();
    int n = 0;
    j->kind = kind;
    nd_device_parallel(dev, j->pieces, stream_piece, j); /* warm up */
    while (n < 1000 && (n < s->min_repeats || nr_now() - start < s->min_seconds / 4)) {
        double t0 = nr_now();
        nd_device_parallel(dev, j->pieces, stream_piece, j);
        t[n++] = nr_now() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

typedef float v16 __attribute__((vector_size(64)));

/* Sixteen independent multiply-add chains per thread, long enough to hide the latency; each
 * multiply-add fused into one instruction, as the hardware's peak counts it. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=fast")))
#endif
static void fma_piece(void *ctx, int64_t p)
{
    float *sink = ctx;
    v16 acc[16], x = {0}, y = {0};
    for (int i = 0; i < 16; ++i) {
        x[i] = 0.999f;
        y[i] = 0.001f;
    }
    for (int i = 0; i < 16; ++i)
        acc[i] = x * (float)(i + 1);
    for (int it = 0; it < 1 << 16; ++it)
        for (int i = 0; i < 16; ++i)
            acc[i] = acc[i] * x + y;
    float total = 0;
    for (int i = 0; i < 16; ++i)
        total += acc[i][0];
    sink[p] = total;
}

static double peak_gflops(nd_device *dev)
{
    int threads = nd_device_threads(dev);
    float *sink = calloc((size_t)threads, sizeof *sink);
    double best = 0;
    for (int r = 0; r < 3 && sink; ++r) {
        double t0 = nr_now();
        nd_device_parallel(dev, threads, fma_piece, sink);
        double gf = 2.0 * 16 * 16 * (double)(1 << 16) * threads / (nr_now() - t0) / 1e9;
        best = gf > best ? gf : best;
    }
    free(sink);
    return best;
}

int nr_stream_open(nd_device *dev, int64_t bytes, stream_job *j)
{
    memset(j, 0, sizeof *j);
    j->n = (bytes + 3) / 4 < 1024 ? 1024 : (bytes + 3) / 4;
    j->pieces = nd_device_threads(dev);
    j->a = aligned_alloc(64, (size_t)(j->n * 4 + 63) / 64 * 64);
    j->b = aligned_alloc(64, (size_t)(j->n * 4 + 63) / 64 * 64);
    j->c = aligned_alloc(64, (size_t)(j->n * 4 + 63) / 64 * 64);
    if (!j->a || !j->b || !j->c) {
        nr_stream_close(j);
        return -1;
    }
    j->kind = 0;
    nd_device_parallel(dev, j->pieces, stream_piece, j); /* first touch by the threads that use it */
    return 0;
}

void nr_stream_close(stream_job *j)
{
    free(j->a);
    free(j->b);
    free(j->c);
    j->a = j->b = j->c = NULL;
}

double nr_stream_once(nd_device *dev, stream_job *j, int kind)
{
    j->kind = kind;
    double t0 = nr_now();
    nd_device_parallel(dev, j->pieces, stream_piece, j);
    return nr_now() - t0;
}

double nr_stream_bytes(const stream_job *j, int kind) { return (kind == NR_STREAM_ADD ? 3.0 : 2.0) * (double)j->n * 4; }

void nr_measure_machine(nd_device *dev, int64_t bytes, const nr_settings *s, nr_machine *m)
{
    stream_job j;
    memset(m, 0, sizeof *m);
    if (nr_stream_open(dev, bytes, &j) == 0) {
        m->copy_gbs = nr_stream_bytes(&j, NR_STREAM_COPY) / median_of(dev, &j, NR_STREAM_COPY, s) / 1e9;
        m->add_gbs = nr_stream_bytes(&j, NR_STREAM_ADD) / median_of(dev, &j, NR_STREAM_ADD, s) / 1e9;
        m->memcpy_gbs = nr_stream_bytes(&j, NR_STREAM_MEMCPY) / median_of(dev, &j, NR_STREAM_MEMCPY, s) / 1e9;
        nr_stream_close(&j);
    }
    m->peak_gflops = peak_gflops(dev);
}

bool nr_have_openblas(void)
{
#ifdef NDRUN_HAVE_OPENBLAS
    return true;
#else
    return false;
#endif
}

void nr_sgemm(int threads, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c)
{
#ifdef NDRUN_HAVE_OPENBLAS
    openblas_set_num_threads(threads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)k, b, (int)n, 0.0f,
                c, (int)n);
#else
    (void)threads, (void)m, (void)n, (void)k, (void)a, (void)b, (void)c;
#endif
}
