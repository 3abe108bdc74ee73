/*
 * test_runtime_hostio.c - host write then read is bit-exact, and every element lands at the byte the
 * oracle computes, on random configurations in L1 and DRAM; padding bytes stay zero.
 * Usage: test_runtime_hostio [cases [seed]].
 */
#include <stdlib.h>
#include <string.h>

#include "nd_runtime.h"
#include "device_setup.h"
#include "oracle.h"
#include "testutil.h"

static int64_t passed;

/* Each element's bytes sit at the oracle's address; every other reserved byte is zero. */
static void check_placement(const nd_tensor *t, const oracle *o, const uint8_t *host)
{
    const nd_dist *d = nd_tensor_dist(t);
    const nda_tensor *v = nd_tensor_view(t);
    int64_t n = oracle_elements(o), x[ND_MAX_RANK] = {0}, bytes = d->bytes_per_core;
    uint8_t *covered = calloc((size_t)(o->ncores * bytes), 1);
    for (int64_t e = 0; e < n; ++e) {
        oracle_place p = oracle_element(o, x);
        CHECK(memcmp(v->base[p.core] + p.byte, host + e * o->esize, (size_t)o->esize) == 0,
              "element %" PRId64 " not at core %" PRId64 " byte %" PRId64, e, p.core, p.byte);
        memset(covered + p.core * bytes + p.byte, 1, (size_t)o->esize);
        for (int i = o->rank - 1; i >= 0 && ++x[i] == o->shape[i]; --i)
            x[i] = 0;
    }
    int64_t stray = 0;
    for (int64_t c = 0; c < o->ncores; ++c)
        for (int64_t b = 0; b < bytes; ++b)
            stray += !covered[c * bytes + b] && v->base[c][b] != 0;
    CHECK(stray == 0, "%" PRId64 " padding bytes are not zero", stray);
    free(covered);
    ++passed;
}

static void one_case(uint64_t *rng, char *desc)
{
    nd_dist_spec spec;
    nd_dist d;
    nd_error err;
    nd_tensor *t;
    oracle o;
    int gx, gy;
    oracle_random_spec(rng, 6, 5000, &spec, &gx, &gy, desc, 1024);
    if (nd_dist_make(&spec, gx, gy, &d, &err)) {
        CHECK(0, "nd_dist_make: %s", err.msg);
        return;
    }
    nd_device *dev = td_device_for(&d, gx, gy, 1);
    CHECK(nd_tensor_alloc(dev, &d, &t, &err) == 0, "alloc: %s", err.msg);
    oracle_init(&o, &spec, gx, gy);
    int64_t bytes = oracle_elements(&o) * o.esize;
    uint8_t *host = malloc((size_t)bytes), *back = malloc((size_t)bytes);
    for (int64_t i = 0; i < bytes; ++i)
        host[i] = (uint8_t)(rng_next(rng) | 1); /* never zero, so stray zeros and padding are told apart */
    CHECK(nd_tensor_write(t, host, bytes, &err) == 0, "write: %s", err.msg);
    check_placement(t, &o, host);
    memset(back, 0, (size_t)bytes);
    CHECK(nd_tensor_read(t, back, bytes, &err) == 0, "read: %s", err.msg);
    CHECK(memcmp(host, back, (size_t)bytes) == 0, "read back differs from what was written");
    free(host);
    free(back);
    oracle_free(&o);
    nd_tensor_free(t);
    nd_device_close(dev);
    ++passed;
}

int main(int argc, char **argv)
{
    test_run_cases(argc, argv, 400, 0x5eed0002, one_case);
    return test_finish(passed);
}
