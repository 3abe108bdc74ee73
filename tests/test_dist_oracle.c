/*
 * test_dist_oracle.c - the distribution model against the brute-force oracle on random cases.
 * Usage: test_dist_oracle [cases [seed]]. A failure prints the case's seed and its 'ndgen show' flags.
 */
#include <stdlib.h>
#include <string.h>

#include "nd_dist.h"
#include "oracle.h"
#include "testutil.h"

static int64_t passed;

/* Every element: the model's page placement plus the in-page offset equals the oracle's. */
static void check_elements(const nd_dist *d, const oracle *o)
{
    int r = d->spec.rank;
    int64_t x[ND_MAX_RANK] = {0}, c[ND_MAX_RANK];
    for (int64_t e = 0, n = oracle_elements(o); e < n; ++e) {
        int64_t in_page = 0;
        for (int i = 0; i < r; ++i) {
            c[i] = x[i] / d->spec.page[i];
            in_page = in_page * d->spec.page[i] + x[i] % d->spec.page[i];
        }
        oracle_place want = oracle_element(o, x);
        nd_loc loc = nd_layout_locate(&d->layout, c);
        nd_loc sq = nd_layout_locate_id(&d->squeezed, nd_dist_page_id(d, c));
        nd_core xy = nd_dist_core(d, loc.core);
        int64_t byte = loc.offset * d->page_bytes + in_page * d->elem_bytes;
        CHECK(loc.core == want.core && byte == want.byte, "element %" PRId64 ": model core %" PRId64
              " byte %" PRId64 ", oracle core %" PRId64 " byte %" PRId64, e, loc.core, byte, want.core, want.byte);
        CHECK(sq.core == loc.core && sq.offset == loc.offset, "element %" PRId64 ": squeezed (%" PRId64 ",%" PRId64
              ") vs full (%" PRId64 ",%" PRId64 ")", e, sq.core, sq.offset, loc.core, loc.offset);
        CHECK(xy.x == want.xy.x && xy.y == want.xy.y, "core %" PRId64 ": model (%d,%d), oracle (%d,%d)", loc.core,
              xy.x, xy.y, want.xy.x, want.xy.y);
        CHECK(nd_dist_core_index(d, xy) == loc.core, "core index of (%d,%d)", xy.x, xy.y);
        ++passed;
        for (int i = r - 1; i >= 0 && ++x[i] == d->spec.shape[i]; --i)
            x[i] = 0;
    }
}

/* Shards per core, the shard in each slot, and pages reserved, against the oracle's dealing. */
static void check_shards(const nd_dist *d, const oracle *o)
{
    const nd_layout *l = &d->layout;
    int64_t *count = calloc((size_t)o->ncores, sizeof *count);
    for (int64_t s = 0; s < o->nshards; ++s)
        ++count[oracle_shard_core(o, s)];
    CHECK(l->num_shards == o->nshards, "shards: model %" PRId64 ", oracle %" PRId64, l->num_shards, o->nshards);
    CHECK(d->pages_per_core == (o->nshards + o->ncores - 1) / o->ncores * o->pages_per_shard,
          "pages reserved per core: %" PRId64, d->pages_per_core);
    for (int64_t i = 0; i < o->ncores; ++i) {
        int64_t n = nd_layout_core_shards(l, i);
        CHECK(n == count[i] && nd_layout_core_shards(&d->squeezed, i) == n,
              "core %" PRId64 ": model holds %" PRId64 " shards, oracle %" PRId64, i, n, count[i]);
        for (int64_t k = 0; k < n; ++k) {
            int64_t s = nd_layout_core_shard(l, i, k);
            CHECK(s >= 0 && s < o->nshards && oracle_shard_core(o, s) == i, "core %" PRId64 " slot %" PRId64
                  ": shard %" PRId64 " belongs elsewhere", i, k, s);
        }
        ++passed;
    }
    free(count);
}

/* The iterator visits every page of the tensor exactly once, on its owner, in buffer order. */
static void check_iterator(const nd_dist *d, const nd_layout *l, const char *which)
{
    char *seen = calloc((size_t)l->num_pages, 1);
    int64_t visits = 0;
    for (int64_t core = 0; core < l->ncores; ++core) {
        int64_t last = -1;
        for (nd_page_iter it = nd_page_iter_begin(l, core); it.valid; nd_page_iter_next(&it)) {
            nd_loc loc = nd_layout_locate_id(l, it.page_id);
            CHECK(it.page_id >= 0 && it.page_id < l->num_pages, "%s: page %" PRId64 " out of range", which, it.page_id);
            if (it.page_id < 0 || it.page_id >= l->num_pages)
                break;
            CHECK(loc.core == core && loc.offset == it.offset && it.offset > last, "%s: core %" PRId64
                  " iterates page %" PRId64 " at offset %" PRId64 ", which lives on core %" PRId64 " offset %" PRId64,
                  which, core, it.page_id, it.offset, loc.core, loc.offset);
            CHECK(!seen[it.page_id], "%s: page %" PRId64 " visited twice", which, it.page_id);
            CHECK(nd_dist_is_local(d, it.page_id, core), "%s: page %" PRId64 " not local to its owner", which,
                  it.page_id);
            seen[it.page_id] = 1;
            last = it.offset;
            ++visits;
        }
    }
    CHECK(visits == l->num_pages, "%s: iterators visited %" PRId64 " of %" PRId64 " pages", which, visits,
          l->num_pages);
    free(seen);
    ++passed;
}

/* The signature names the placement: parsed back, it gives the same placement and the same text. */
static void check_signature(const nd_dist *d)
{
    char sig[4096], again[4096];
    nd_dist back;
    nd_error err;
    int gx, gy;
    nd_dist_signature(d, sig, sizeof sig);
    int rc = nd_dist_from_signature(sig, &back, &gx, &gy, &err);
    CHECK(rc == 0, "signature '%s' does not parse: %s", sig, err.msg);
    if (rc)
        return;
    nd_dist_signature(&back, again, sizeof again);
    CHECK(strcmp(sig, again) == 0 && nd_dist_same_placement(d, &back), "signature round trip: '%s' -> '%s'", sig,
          again);
    ++passed;
}

static void one_case(uint64_t *rng, char *desc)
{
    nd_dist_spec spec;
    nd_dist d;
    nd_error err;
    oracle o;
    int gx, gy;
    oracle_random_spec(rng, 6, 6000, &spec, &gx, &gy, desc, 1024);
    if (nd_dist_make(&spec, gx, gy, &d, &err)) {
        CHECK(0, "nd_dist_make refused a valid case: %s", err.msg);
        return;
    }
    oracle_init(&o, &spec, gx, gy);
    CHECK(d.layout.ncores == o.ncores, "cores: model %" PRId64 ", oracle %" PRId64, d.layout.ncores, o.ncores);
    check_elements(&d, &o);
    check_shards(&d, &o);
    check_iterator(&d, &d.layout, "full");
    check_iterator(&d, &d.squeezed, "squeezed");
    check_signature(&d);
    oracle_free(&o);
}

int main(int argc, char **argv)
{
    test_run_cases(argc, argv, 2000, 0x5eed0001, one_case);
    return test_finish(passed);
}
