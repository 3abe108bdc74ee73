/*
 * test_bounded_closed.c - the closed forms of shards and data pages per core (nd_layout_core_shards,
 * nd_layout_data_prefix, nd_layout_data_pages) against a brute-force walk of every page, on random
 * small distributions whose sizes cross uneven edges, both strategies, full and squeezed layouts.
 * Usage: test_bounded_closed [cases [seed]]; the seed defaults to the time and is printed first.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nd_dist.h"
#include "testutil.h"

static int64_t passed;

/* Independent of the model: every page coordinate, its shard by this file's own strides, and the core
 * the strategy deals that shard to. data[s] counts pages of shard s, held[c] pages of core c. */
typedef struct brute {
    int64_t nshards, ncores, *data, *held, *shards;
} brute;

static void brute_walk(const nd_dist_spec *s, int64_t ncores, brute *b)
{
    int r = s->rank;
    int64_t T[ND_MAX_RANK], S[ND_MAX_RANK], g[ND_MAX_RANK], c[ND_MAX_RANK] = {0}, npages = 1;
    b->nshards = 1;
    b->ncores = ncores;
    for (int i = 0; i < r; ++i) {
        T[i] = (s->shape[i] + s->page[i] - 1) / s->page[i];
        S[i] = s->shard[i] / s->page[i];
        g[i] = (T[i] + S[i] - 1) / S[i];
        b->nshards *= g[i];
        npages *= T[i];
    }
    b->data = calloc((size_t)b->nshards, sizeof *b->data);
    b->held = calloc((size_t)ncores, sizeof *b->held);
    b->shards = calloc((size_t)ncores, sizeof *b->shards);
    int64_t per = (b->nshards + ncores - 1) / ncores;
    for (int64_t sh = 0; sh < b->nshards; ++sh)
        ++b->shards[s->strategy == ND_ROUND_ROBIN ? sh % ncores : sh / per];
    for (int64_t p = 0; p < npages; ++p) {
        int64_t sh = 0;
        for (int i = 0; i < r; ++i)
            sh = sh * g[i] + c[i] / S[i];
        ++b->data[sh];
        ++b->held[s->strategy == ND_ROUND_ROBIN ? sh % ncores : sh / per];
        for (int i = r - 1; i >= 0 && ++c[i] == T[i]; --i)
            c[i] = 0;
    }
}

static void brute_free(brute *b)
{
    free(b->data);
    free(b->held);
    free(b->shards);
}

static void check_layout(const char *which, const nd_layout *l, const brute *b)
{
    int64_t *got = malloc((size_t)l->ncores * sizeof *got), prefix = 0;
    CHECK(nd_layout_data_pages(l, got) == 0, "%s: nd_layout_data_pages failed", which);
    for (int64_t c = 0; c < b->ncores; ++c) {
        CHECK(got[c] == b->held[c], "%s: core %" PRId64 " holds %" PRId64 " data pages, brute force %" PRId64, which,
              c, got[c], b->held[c]);
        CHECK(nd_layout_core_shards(l, c) == b->shards[c], "%s: core %" PRId64 " holds %" PRId64
              " shards, brute force %" PRId64, which, c, nd_layout_core_shards(l, c), b->shards[c]);
    }
    for (int64_t n = 0; n <= b->nshards + 1; ++n) {
        CHECK(nd_layout_data_prefix(l, n) == prefix, "%s: shards [0,%" PRId64 ") hold %" PRId64
              " data pages, brute force %" PRId64, which, n, nd_layout_data_prefix(l, n), prefix);
        prefix += n < b->nshards ? b->data[n] : 0;
    }
    free(got);
    ++passed;
}

/* Shapes of 1..23 elements over pages of 1..3 and shards of 1..4 pages: most dims end unevenly. */
static void random_spec(uint64_t *rng, nd_dist_spec *s, int *gx, int *gy)
{
    nd_dist_spec_init(s);
    s->rank = s->shard_rank = s->page_rank = (int)rng_range(rng, 1, 4);
    s->page_kind = ND_PAGE_BOX;
    s->dtype = ND_U8;
    s->strategy = rng_range(rng, 0, 1) ? ND_CONTIGUOUS : ND_ROUND_ROBIN;
    for (int i = 0; i < s->rank; ++i) {
        s->page[i] = rng_range(rng, 1, 3);
        s->shape[i] = rng_range(rng, 1, s->rank > 2 ? 12 : 23);
        s->shard[i] = s->page[i] * rng_range(rng, 1, 4);
    }
    *gx = (int)rng_range(rng, 1, 9);
    *gy = (int)rng_range(rng, 1, rng_range(rng, 0, 1) ? 2 : 7);
}

static void one_case(uint64_t *rng, char *desc)
{
    nd_dist_spec s;
    nd_dist d;
    nd_error err;
    int gx, gy, n = 0;
    random_spec(rng, &s, &gx, &gy);
    n += snprintf(desc + n, 1024 - (size_t)n, "ndgen show --grid %dx%d --strategy %s --shape", gx, gy,
                  nd_strategy_name(s.strategy));
    for (int i = 0; i < s.rank; ++i)
        n += snprintf(desc + n, 1024 - (size_t)n, "%s%" PRId64, i ? "," : " ", s.shape[i]);
    for (int i = 0; i < s.rank; ++i)
        n += snprintf(desc + n, 1024 - (size_t)n, "%s%" PRId64, i ? "," : " --shard ", s.shard[i]);
    for (int i = 0; i < s.rank; ++i)
        n += snprintf(desc + n, 1024 - (size_t)n, "%s%" PRId64, i ? "," : " --page ", s.page[i]);
    if (nd_dist_make(&s, gx, gy, &d, &err)) {
        CHECK(0, "nd_dist_make: %s", err.msg);
        return;
    }
    brute b;
    brute_walk(&d.spec, d.layout.ncores, &b);
    check_layout("full", &d.layout, &b);
    check_layout("squeezed", &d.squeezed, &b);
    brute_free(&b);
}

/* 10^18 one-page shards on 2^20 cores: the closed forms answer at once, and with no padding every
 * core's data pages equal its shards. */
static void huge_case(void)
{
    nd_layout l = {.rank = 2, .pages = {1000000000, 1000000000}, .shard = {1, 1}, .ncores = 1 << 20};
    int64_t *got = malloc(sizeof *got << 20);
    const int64_t q = 1000000000000000000 / (1 << 20), rem = 1000000000000000000 % (1 << 20);
    for (int k = 0; k < 2; ++k) {
        l.strategy = k ? ND_CONTIGUOUS : ND_ROUND_ROBIN;
        l.num_shards = l.num_pages = 1000000000000000000;
        l.grid[0] = l.grid[1] = l.grid_stride[0] = l.page_stride[0] = 1000000000;
        l.grid_stride[1] = l.page_stride[1] = l.shard_stride[0] = l.shard_stride[1] = l.shard_pages = 1;
        l.shards_per_core = q + (rem != 0);
        CHECK(nd_layout_data_pages(&l, got) == 0, "huge: nd_layout_data_pages failed");
        for (int64_t c = 0; c < l.ncores; c += 4093)
            CHECK(got[c] == nd_layout_core_shards(&l, c), "huge %s: core %" PRId64 ": %" PRId64 " data pages, %" PRId64
                  " shards", nd_strategy_name(l.strategy), c, got[c], nd_layout_core_shards(&l, c));
        CHECK(nd_layout_core_shards(&l, 0) == (k ? q + 1 : q + (rem > 0)), "huge: core 0 shards");
        ++passed;
    }
    free(got);
}

int main(int argc, char **argv)
{
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : (uint64_t)time(NULL);
    int cases = argc > 1 ? atoi(argv[1]) : 3000;
    printf("seed %" PRIu64 " (rerun: test_bounded_closed %d %" PRIu64 ")\n", seed, cases, seed);
    char count[16], seed_text[24];
    snprintf(count, sizeof count, "%d", cases);
    snprintf(seed_text, sizeof seed_text, "%" PRIu64, seed);
    char *args[] = {argv[0], count, seed_text, NULL};
    test_run_cases(3, args, cases, seed, one_case);
    test_case = NULL;
    huge_case();
    return test_finish(passed);
}
