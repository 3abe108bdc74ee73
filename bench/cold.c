/*
 * cold.c - the memory a timed run touches, as address spans, and its eviction from the caches, so that
 * every run starts cold at a cost in proportion to what it touches (nr_cold in machine.c decides when).
 */
#include <stdlib.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "ndrun.h"

int nr_spans_add(nr_spans *s, const void *p, int64_t bytes)
{
    if (!p || bytes <= 0)
        return 0;
    s->bytes += bytes;
    if (s->n && s->v[s->n - 1].p + s->v[s->n - 1].bytes == (const uint8_t *)p) { /* adjacent: one span */
        s->v[s->n - 1].bytes += bytes;
        return 0;
    }
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        nr_span *v = realloc(s->v, (size_t)cap * sizeof *v);
        if (!v) {
            s->bytes -= bytes;
            return -1;
        }
        s->v = v, s->cap = cap;
    }
    s->v[s->n++] = (nr_span){p, bytes};
    return 0;
}

/* Every copy's buffer on every core (or DRAM bank) of its list: the slots of its shards, edge padding
 * included, as nd_layout places them (slot k of core i at base + k * shard_pages pages). */
int nr_spans_tensor(nr_spans *s, const nd_tensor *t)
{
    const nda_tensor *v = nd_tensor_view(t);
    const nd_layout *l = v->layout;
    int rc = 0;
    for (int64_t r = 0; r < v->replicas && !rc; ++r)
        for (int64_t i = 0; i < l->ncores && !rc; ++i)
            rc = nr_spans_add(s, v->all_base[r * l->ncores + i],
                              nd_layout_core_shards(l, i) * l->shard_pages * v->page_bytes);
    return rc;
}

void nr_spans_free(nr_spans *s)
{
    free(s->v);
    *s = (nr_spans){0};
}

void nr_spans_share(const nr_spans *const *set, int nsets, int64_t pieces, int64_t p,
                    void (*fn)(const uint8_t *lo, const uint8_t *hi, void *ctx), void *ctx)
{
    int64_t total = 0, at = 0;
    for (int k = 0; k < nsets; ++k)
        total += set[k] ? set[k]->bytes : 0;
    const int64_t lo = total * p / pieces, hi = total * (p + 1) / pieces;
    for (int k = 0; k < nsets; ++k)
        for (int i = 0; set[k] && i < set[k]->n && at < hi; at += set[k]->v[i++].bytes) {
            const nr_span *sp = &set[k]->v[i];
            int64_t a = lo > at ? lo - at : 0, b = hi < at + sp->bytes ? hi - at : sp->bytes;
            if (a < b)
                fn(sp->p + a, sp->p + b, ctx);
        }
}

typedef struct evict_job {
    const nr_spans *set[2];
    int64_t pieces;
} evict_job;

/* Every line holding a byte of [lo, hi) written back and invalidated: clflushopt where the target has it
 * (weakly ordered, so the lines go out together), clflush elsewhere on x86. */
static void evict_range(const uint8_t *lo, const uint8_t *hi, void *ctx)
{
    (void)ctx;
#if defined(__SSE2__)
    for (uintptr_t a = (uintptr_t)lo & ~(uintptr_t)63; a < (uintptr_t)hi; a += 64)
#if defined(__CLFLUSHOPT__)
        _mm_clflushopt((void *)a);
#else
        _mm_clflush((const void *)a);
#endif
#else
    (void)lo, (void)hi;
#endif
}

static void evict_piece(void *ctx, int64_t p)
{
    const evict_job *j = ctx;
    nr_spans_share(j->set, 2, j->pieces, p, evict_range, NULL);
#if defined(__SSE2__)
    _mm_sfence(); /* the evictions are done before the piece returns */
#endif
}

bool nr_spans_evict(nd_device *dev, const nr_spans *a, const nr_spans *b)
{
#if defined(__SSE2__)
    evict_job j = {{a, b == a ? NULL : b}, nd_device_threads(dev)};
    nd_device_parallel(dev, j.pieces, evict_piece, &j);
    return true;
#else
    (void)dev, (void)a, (void)b;
    return false;
#endif
}
