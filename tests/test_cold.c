/*
 * test_cold.c - what ndrun evicts before a timed run (bench/cold.c) is what the run touches:
 * - a tensor's spans hold the byte of every element of every copy, as the independent placement oracle
 *   (oracle.c) puts it, are disjoint and lie within the cores' reservations, on random distributions in
 *   L1 and DRAM, some with two copies;
 * - the pieces' shares of a set of spans (random, unaligned, some adjacent) cover every byte exactly
 *   once and nothing else, for 1 to 7 pieces;
 * - eviction over the device's threads leaves the data as it was.
 * Usage: test_cold [cases [seed]].
 */
#include <stdlib.h>
#include <string.h>

#include "ndrun.h"
#include "device_setup.h"
#include "oracle.h"
#include "testutil.h"

static int64_t passed;

static bool within(const nr_spans *s, const uint8_t *p, int64_t bytes)
{
    for (int i = 0; i < s->n; ++i)
        if (p >= s->v[i].p && p + bytes <= s->v[i].p + s->v[i].bytes)
            return true;
    return false;
}

static int by_address(const void *a, const void *b)
{
    const nr_span *x = a, *y = b;
    return (x->p > y->p) - (x->p < y->p);
}

/* One random distribution: every element of every copy inside the spans, the spans disjoint. */
static void tensor_case(uint64_t *rng, char *desc)
{
    nd_dist_spec spec;
    nd_dist d;
    nd_error err;
    nd_tensor *t;
    oracle o;
    int gx, gy;
    oracle_random_spec(rng, 5, 4000, &spec, &gx, &gy, desc, 1024);
    oracle_init(&o, &spec, gx, gy);
    bool groups = spec.buffer == ND_L1 && !spec.interleaved && spec.cores.nranges == 0; /* copies allowed */
    int copies = groups && rng_range(rng, 0, 2) == 0 ? 2 : 1;
    spec.replicas = copies; /* copy r on list entries [r n, (r+1) n), placed as copy 0 */
    if (nd_dist_make(&spec, copies * gx, gy, &d, &err)) {
        CHECK(0, "nd_dist_make: %s", err.msg);
        oracle_free(&o);
        return;
    }
    nd_device *dev = td_device_for(&d, copies * gx, gy, 2);
    CHECK(nd_tensor_alloc(dev, &d, &t, &err) == 0, "alloc: %s", err.msg);
    nr_spans s = {0};
    CHECK(nr_spans_tensor(&s, t) == 0, "out of memory");
    const nda_tensor *v = nd_tensor_view(t);
    int64_t n = oracle_elements(&o), x[ND_MAX_RANK] = {0}, missed = 0;
    for (int64_t e = 0; e < n; ++e) {
        oracle_place p = oracle_element(&o, x);
        for (int r = 0; r < copies; ++r)
            missed += !within(&s, v->all_base[r * o.ncores + p.core] + p.byte, o.esize);
        for (int i = o.rank - 1; i >= 0 && ++x[i] == o.shape[i]; --i)
            x[i] = 0;
    }
    CHECK(missed == 0, "%lld element copies outside the spans", (long long)missed);
    qsort(s.v, (size_t)s.n, sizeof *s.v, by_address);
    int64_t sum = 0;
    for (int i = 0; i < s.n; ++i) {
        CHECK(i == 0 || s.v[i - 1].p + s.v[i - 1].bytes <= s.v[i].p, "spans %d and %d overlap", i - 1, i);
        sum += s.v[i].bytes;
    }
    CHECK(sum == s.bytes, "the spans hold %lld bytes, their total says %lld", (long long)sum, (long long)s.bytes);
    int64_t inside = 0; /* bytes of the spans within some core's reservation of some copy */
    for (int i = 0; i < s.n; ++i)
        for (int64_t c = 0; c < copies * o.ncores; ++c) {
            const uint8_t *lo = v->all_base[c], *hi = lo + d.bytes_per_core;
            const uint8_t *end = s.v[i].p + s.v[i].bytes;
            const uint8_t *a = s.v[i].p > lo ? s.v[i].p : lo, *b = end < hi ? end : hi;
            inside += b > a ? b - a : 0;
        }
    CHECK(inside == s.bytes, "%lld of the %lld spanned bytes lie outside the cores' reservations",
          (long long)(s.bytes - inside), (long long)s.bytes);
    CHECK(s.bytes <= copies * o.ncores * d.bytes_per_core, "%lld bytes spanned, more than the %lld reserved",
          (long long)s.bytes, (long long)(copies * o.ncores * d.bytes_per_core));
    /* evicting changes no byte */
    int64_t bytes = n * o.esize;
    uint8_t *host = malloc((size_t)bytes), *back = malloc((size_t)bytes);
    for (int64_t i = 0; i < bytes; ++i)
        host[i] = (uint8_t)rng_next(rng);
    CHECK(nd_tensor_write(t, host, bytes, &err) == 0, "write: %s", err.msg);
    nr_spans_evict(dev, &s, NULL);
    CHECK(nd_tensor_read(t, back, bytes, &err) == 0 && memcmp(host, back, (size_t)bytes) == 0,
          "the data changed when evicted");
    free(host);
    free(back);
    nr_spans_free(&s);
    oracle_free(&o);
    nd_tensor_free(t);
    nd_device_close(dev);
    ++passed;
}

typedef struct cover {
    const uint8_t *base;
    uint8_t *count; /* per byte of base's buffer */
    int64_t ranges, size;
    bool outside;
} cover;

static void mark(const uint8_t *lo, const uint8_t *hi, void *ctx)
{
    cover *c = ctx;
    c->ranges++;
    if (lo < c->base || hi > c->base + c->size || lo >= hi) {
        c->outside = true;
        return;
    }
    for (const uint8_t *p = lo; p < hi; ++p)
        c->count[p - c->base]++;
}

/* Two random sets of spans over one buffer; the pieces' shares against a byte map of the spans. */
static void share_case(uint64_t *rng, char *desc)
{
    enum { SIZE = 1 << 16 };
    uint8_t *buf = malloc(SIZE), *want = calloc(SIZE, 1), *got = calloc(SIZE, 1);
    nr_spans set[2] = {{0}};
    int64_t at = rng_range(rng, 0, 100);
    for (int k = 0; k < 2; ++k) {
        int n = (int)rng_range(rng, 0, 40);
        for (int i = 0; i < n && at < SIZE / 2 * (k + 1); ++i) {
            int64_t len = rng_range(rng, 1, 700);
            len = at + len > SIZE ? SIZE - at : len;
            CHECK(nr_spans_add(&set[k], buf + at, len) == 0, "out of memory");
            memset(want + at, 1, (size_t)len);
            at += len + (rng_range(rng, 0, 2) ? rng_range(rng, 0, 300) : 0); /* a third adjacent */
        }
    }
    int pieces = (int)rng_range(rng, 1, 7);
    snprintf(desc, 1024, "%d and %d spans of %lld and %lld bytes, %d pieces", set[0].n, set[1].n,
             (long long)set[0].bytes, (long long)set[1].bytes, pieces);
    cover c = {buf, got, 0, SIZE, false};
    const nr_spans *sets[] = {&set[0], rng_range(rng, 0, 3) ? &set[1] : NULL};
    if (!sets[1])
        memset(want + (set[1].n ? set[1].v[0].p - buf : SIZE), 0,
               (size_t)(set[1].n ? SIZE - (set[1].v[0].p - buf) : 0));
    for (int p = 0; p < pieces; ++p)
        nr_spans_share(sets, 2, pieces, p, mark, &c);
    CHECK(!c.outside, "a share reaches outside the buffer or is empty");
    int64_t bad = 0;
    for (int64_t i = 0; i < SIZE; ++i)
        bad += got[i] != want[i];
    CHECK(bad == 0, "%lld bytes covered other than once where spanned, never elsewhere", (long long)bad);
    nr_spans_free(&set[0]);
    nr_spans_free(&set[1]);
    free(buf);
    free(want);
    free(got);
    ++passed;
}

static void one_case(uint64_t *rng, char *desc)
{
    share_case(rng, desc);
    tensor_case(rng, desc);
}

int main(int argc, char **argv)
{
    test_run_cases(argc, argv, 300, 0x5eed00c0, one_case);
    return test_finish(passed);
}
