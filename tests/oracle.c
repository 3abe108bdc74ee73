/* oracle.c - see oracle.h. Deliberately written element-first, without pages-as-units. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "testutil.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The page box the spec states, in elements. */
static void page_box(const nd_dist_spec *s, int64_t *page)
{
    int r = s->rank;
    for (int i = 0; i < r; ++i)
        page[i] = 1;
    if (s->page_kind == ND_PAGE_TILE) {
        page[r - 2] = s->tile_h;
        page[r - 1] = s->tile_w;
    } else if (s->page_kind == ND_PAGE_BOX) {
        memcpy(page, s->page, sizeof(int64_t) * (size_t)r);
    } else {
        page[r - 1] = s->interleaved ? s->shape[r - 1] : s->shard[r - 1];
    }
}

/* The core list: ranges in order; inside a range x fastest (row major) or y fastest (col major). */
static void core_list(oracle *o, const nd_dist_spec *s, int gx, int gy)
{
    nd_core_set set = s->cores;
    if (set.nranges == 0) {
        set.nranges = 1;
        set.ranges[0] = (nd_core_range){{0, 0}, {gx - 1, gy - 1}};
    }
    o->ncores = 0;
    o->cores = malloc(sizeof(nd_core) * (size_t)gx * (size_t)gy);
    for (int k = 0; k < set.nranges; ++k) {
        nd_core_range r = set.ranges[k];
        if (set.orientation == ND_ROW_MAJOR) {
            for (int y = r.lo.y; y <= r.hi.y; ++y)
                for (int x = r.lo.x; x <= r.hi.x; ++x)
                    o->cores[o->ncores++] = (nd_core){x, y};
        } else {
            for (int x = r.lo.x; x <= r.hi.x; ++x)
                for (int y = r.lo.y; y <= r.hi.y; ++y)
                    o->cores[o->ncores++] = (nd_core){x, y};
        }
    }
}

void oracle_init(oracle *o, const nd_dist_spec *s, int gx, int gy)
{
    memset(o, 0, sizeof *o);
    o->rank = s->rank;
    o->strategy = s->strategy;
    o->esize = nd_dtype_size(s->dtype);
    page_box(s, o->page);
    o->page_elems = o->pages_per_shard = o->nshards = 1;
    for (int i = 0; i < s->rank; ++i) {
        o->shape[i] = s->shape[i];
        o->shard[i] = s->interleaved ? o->page[i] : s->shard[i];
        o->grid[i] = cdiv(o->shape[i], o->shard[i]);
        o->nshards *= o->grid[i];
        o->page_elems *= o->page[i];
        o->pages_per_shard *= o->shard[i] / o->page[i];
    }
    core_list(o, s, gx, gy);
}

void oracle_free(oracle *o) { free(o->cores); }

int64_t oracle_elements(const oracle *o)
{
    int64_t n = 1;
    for (int i = 0; i < o->rank; ++i)
        n *= o->shape[i];
    return n;
}

int64_t oracle_shard(const oracle *o, const int64_t *x)
{
    int64_t id = 0;
    for (int i = 0; i < o->rank; ++i)
        id = id * o->grid[i] + x[i] / o->shard[i];
    return id;
}

int64_t oracle_shard_core(const oracle *o, int64_t shard)
{
    if (o->strategy == ND_ROUND_ROBIN)
        return shard % o->ncores;
    return shard / cdiv(o->nshards, o->ncores);
}

oracle_place oracle_element(const oracle *o, const int64_t *x)
{
    int64_t shard = oracle_shard(o, x), slot, page_in_shard = 0, in_page = 0;
    oracle_place p;
    p.core = oracle_shard_core(o, shard);
    slot = o->strategy == ND_ROUND_ROBIN ? shard / o->ncores : shard % cdiv(o->nshards, o->ncores);
    for (int i = 0; i < o->rank; ++i) {
        int64_t in_shard = x[i] % o->shard[i];
        page_in_shard = page_in_shard * (o->shard[i] / o->page[i]) + in_shard / o->page[i];
        in_page = in_page * o->page[i] + in_shard % o->page[i];
    }
    p.xy = o->cores[p.core];
    p.byte = ((slot * o->pages_per_shard + page_in_shard) * o->page_elems + in_page) * o->esize;
    return p;
}

/* ---------------------------------------------------------------- random cases */

static int append(char *buf, size_t len, int n, const char *flag, const int64_t *d, int rank)
{
    n += snprintf(buf + n, len - (size_t)n, " %s ", flag);
    for (int i = 0; i < rank; ++i)
        n += snprintf(buf + n, len - (size_t)n, i ? ",%lld" : "%lld", (long long)d[i]);
    return n;
}

static bool overlaps(const nd_core_set *set, nd_core_range r)
{
    for (int i = 0; i < set->nranges; ++i) {
        nd_core_range q = set->ranges[i];
        if (q.lo.x <= r.hi.x && r.lo.x <= q.hi.x && q.lo.y <= r.hi.y && r.lo.y <= q.hi.y)
            return true;
    }
    return false;
}

static void random_cores(uint64_t *rng, nd_core_set *set, int gx, int gy)
{
    set->nranges = 0;
    if (rng_range(rng, 0, 1) == 0)
        return; /* the whole grid */
    int want = (int)rng_range(rng, 1, 4);
    for (int tries = 0; tries < 20 && set->nranges < want; ++tries) {
        nd_core_range r;
        r.lo.x = (int32_t)rng_range(rng, 0, gx - 1);
        r.lo.y = (int32_t)rng_range(rng, 0, gy - 1);
        r.hi.x = (int32_t)rng_range(rng, r.lo.x, gx - 1);
        r.hi.y = (int32_t)rng_range(rng, r.lo.y, gy - 1);
        if (!overlaps(set, r))
            set->ranges[set->nranges++] = r;
    }
}

static void random_shape(uint64_t *rng, nd_dist_spec *s, int64_t max_elems)
{
    int64_t vol = 1;
    for (int i = 0; i < s->rank; ++i) {
        int64_t unit = s->interleaved ? (s->page_kind == ND_PAGE_BOX ? s->page[i] : 1) : s->shard[i];
        if (s->page_kind == ND_PAGE_TILE && i >= s->rank - 2)
            unit = i == s->rank - 2 ? s->tile_h : s->tile_w;
        s->shape[i] = rng_range(rng, 1, unit * 3 + 2); /* often uneven, sometimes smaller than a shard */
        vol *= s->shape[i];
    }
    while (vol > max_elems) { /* shrink the largest dim until the case is small enough */
        int big = 0;
        for (int i = 1; i < s->rank; ++i)
            big = s->shape[i] > s->shape[big] ? i : big;
        vol = vol / s->shape[big] * ((s->shape[big] + 1) / 2);
        s->shape[big] = (s->shape[big] + 1) / 2;
    }
}

/* Page kind, page box and shard, in elements; shard is a whole number of pages in every dim. */
static void random_pages(uint64_t *rng, nd_dist_spec *s)
{
    int r = s->rank;
    int kind = (int)rng_range(rng, 0, r >= 2 ? 2 : 1);
    s->page_kind = kind == 0 ? ND_PAGE_ROW : kind == 1 ? ND_PAGE_BOX : ND_PAGE_TILE;
    s->interleaved = rng_range(rng, 0, 5) == 0;
    if (s->page_kind == ND_PAGE_TILE) {
        s->tile_h = rng_range(rng, 0, 1) ? 32 : 16;
        s->tile_w = rng_range(rng, 0, 1) ? 32 : 16;
    }
    s->page_rank = s->shard_rank = r;
    for (int i = 0; i < r; ++i) {
        int64_t p = 1;
        if (s->page_kind == ND_PAGE_BOX)
            p = rng_range(rng, 1, 3);
        else if (s->page_kind == ND_PAGE_TILE && i >= r - 2)
            p = i == r - 2 ? s->tile_h : s->tile_w;
        else if (s->page_kind == ND_PAGE_ROW && i == r - 1)
            p = rng_range(rng, 1, 6);
        s->page[i] = p;
        s->shard[i] = p * (s->page_kind == ND_PAGE_ROW && i == r - 1 ? 1 : rng_range(rng, 1, 3));
    }
}

void oracle_random_spec(uint64_t *rng, int max_rank, int64_t max_elems, nd_dist_spec *s, int *gx, int *gy,
                        char *desc, size_t len)
{
    nd_dist_spec_init(s);
    s->rank = (int)rng_range(rng, 1, max_rank);
    s->dtype = (nd_dtype)rng_range(rng, 0, 3);
    random_pages(rng, s);
    random_shape(rng, s, max_elems);
    s->strategy = rng_range(rng, 0, 1) ? ND_CONTIGUOUS : ND_ROUND_ROBIN;
    s->cores.orientation = rng_range(rng, 0, 1) ? ND_COL_MAJOR : ND_ROW_MAJOR;
    s->buffer = rng_range(rng, 0, 4) == 0 ? ND_DRAM : ND_L1;
    *gx = (int)rng_range(rng, 1, s->buffer == ND_DRAM ? 12 : 8);
    *gy = s->buffer == ND_DRAM ? 1 : (int)rng_range(rng, 1, 8);
    random_cores(rng, &s->cores, *gx, *gy);

    int n = append(desc, len, 0, "--shape", s->shape, s->rank);
    if (!s->interleaved)
        n = append(desc, len, n, "--shard", s->shard, s->rank);
    else
        n += snprintf(desc + n, len - (size_t)n, " --interleaved");
    if (s->page_kind == ND_PAGE_BOX)
        n = append(desc, len, n, "--page", s->page, s->rank);
    if (s->page_kind == ND_PAGE_TILE)
        n += snprintf(desc + n, len - (size_t)n, " --tile %dx%d", s->tile_h, s->tile_w);
    n += snprintf(desc + n, len - (size_t)n, " --dtype %s --strategy %s --orientation %s",
                  nd_dtype_name(s->dtype), nd_strategy_name(s->strategy),
                  s->cores.orientation == ND_ROW_MAJOR ? "row" : "col");
    if (s->buffer == ND_DRAM)
        n += snprintf(desc + n, len - (size_t)n, " --buffer dram --banks %d", *gx);
    else
        n += snprintf(desc + n, len - (size_t)n, " --grid %dx%d", *gx, *gy);
    if (s->cores.nranges)
        n += snprintf(desc + n, len - (size_t)n, " --cores '");
    for (int i = 0; i < s->cores.nranges; ++i) {
        nd_core_range r = s->cores.ranges[i];
        n += snprintf(desc + n, len - (size_t)n, "%s(%d,%d)-(%d,%d)", i ? "; " : "", r.lo.x, r.lo.y, r.hi.x, r.hi.y);
    }
    if (s->cores.nranges)
        snprintf(desc + n, len - (size_t)n, "'");
}
