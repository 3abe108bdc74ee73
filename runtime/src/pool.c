/*
 * pool.c - a fixed set of worker threads that run one indexed job at a time.
 *
 * Items are claimed with an atomic counter, a few consecutive items per claim (about eight claims
 * per thread per job), so any number of virtual cores run on any number of threads with little
 * contention, and a thread walks neighbouring cores, whose data usually neighbour too. Which thread runs an item never changes what the item computes: kernels write only the
 * pages their own core owns, so results do not depend on the thread count.
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "runtime_internal.h"

struct nd_pool {
    int nthreads; /* including the caller */
    pthread_t *workers;
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    uint64_t generation; /* bumped per job, under mu */
    int busy;            /* workers still in the current job, under mu */
    bool quit;
    /* the current job */
    void (*fn)(void *, int64_t);
    void *ctx;
    int64_t n, grain;
    atomic_int_fast64_t next;
};

/* Runs items until none is left. Kernels may write with non-temporal (streaming) stores, which x86
 * orders only by a fence, not by the mutex that ends a job: each thread fences after its share, so a
 * job's stores are visible to whatever runs after it, and kernels need no fence of their own per core. */
static void drain(nd_pool *p)
{
    for (int64_t i; (i = atomic_fetch_add_explicit(&p->next, p->grain, memory_order_relaxed)) < p->n;)
        for (int64_t end = i + p->grain < p->n ? i + p->grain : p->n; i < end; ++i)
            p->fn(p->ctx, i);
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

static void *worker_main(void *arg)
{
    nd_pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->generation == seen)
            pthread_cond_wait(&p->start, &p->mu);
        if (p->quit)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        drain(p);
        pthread_mutex_lock(&p->mu);
        assert(p->busy > 0);
        if (--p->busy == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void stop_workers(nd_pool *p, int started)
{
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < started; ++i)
        pthread_join(p->workers[i], NULL);
}

int nd_pool_create(int threads, nd_pool **out, nd_error *err)
{
    if (threads < 1)
        return nd_fail(err, "threads %d: need at least one thread", threads);
    nd_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->workers = calloc((size_t)threads, sizeof *p->workers))) {
        free(p);
        return nd_failc(err, ND_ENOMEM, "threads %d: out of memory for the thread pool", threads);
    }
    p->nthreads = threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int i = 0; i < threads - 1; ++i)
        if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) {
            stop_workers(p, i);
            p->nthreads = 0;
            nd_pool_destroy(p);
            return nd_failc(err, ND_ESYS, "threads %d: could not start thread %d", threads, i + 1);
        }
    *out = p;
    return 0;
}

void nd_pool_destroy(nd_pool *p)
{
    if (!p)
        return;
    if (p->nthreads > 0)
        stop_workers(p, p->nthreads - 1);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    free(p->workers);
    free(p);
}

int nd_pool_threads(const nd_pool *p) { return p->nthreads; }

void nd_pool_run(nd_pool *p, int64_t n, void (*fn)(void *ctx, int64_t i), void *ctx)
{
    assert(n >= 0 && p->nthreads >= 1);
    pthread_mutex_lock(&p->mu);
    assert(p->busy == 0); /* one job at a time: the last one has finished */
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->grain = n / (8 * (int64_t)p->nthreads);
    p->grain = p->grain < 1 ? 1 : p->grain;
    atomic_store(&p->next, 0);
    p->busy = p->nthreads - 1;
    ++p->generation;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    drain(p);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    assert(atomic_load(&p->next) >= p->n); /* every item was claimed */
    pthread_mutex_unlock(&p->mu);
}
