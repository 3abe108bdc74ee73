/*
 * test_dist_seed.c - fixed cases with hand-computed answers: the three pictures of the ND-sharding
 * seed document, the squeezing example of the reference, and cases for bugs tt-metal users hit.
 */
#include <string.h>

#include "nd_dist.h"
#include "testutil.h"

static int64_t passed;

static nd_dist make(const char *shape, const char *shard, int gx, int gy)
{
    nd_dist_spec s;
    nd_dist d;
    nd_error err;
    nd_dist_spec_init(&s);
    if (nd_parse_dims("shape", shape, s.shape, &s.rank, &err) ||
        nd_parse_dims("shard", shard, s.shard, &s.shard_rank, &err) || nd_dist_make(&s, gx, gy, &d, &err)) {
        fprintf(stderr, "cannot make %s / %s: %s\n", shape, shard, err.msg);
        exit(1);
    }
    return d;
}

static void expect_shards_per_core(const char *what, const nd_dist *d, const int64_t *want, int n)
{
    CHECK(d->layout.ncores == n, "%s: %" PRId64 " cores", what, d->layout.ncores);
    for (int i = 0; i < n; ++i)
        CHECK(nd_layout_core_shards(&d->layout, i) == want[i], "%s: core %d holds %" PRId64 " shards, want %" PRId64,
              what, i, nd_layout_core_shards(&d->layout, i), want[i]);
    ++passed;
}

static void seed_pictures(void)
{
    nd_dist a = make("3,7,5", "2,2,2", 2, 3);
    const int64_t a_want[] = {4, 4, 4, 4, 4, 4};
    expect_shards_per_core("[3,7,5]/[2,2,2]", &a, a_want, 6);
    /* grid 2x4x3 = 24 shards; pages are rows of 2 elements, 63 of them. */
    CHECK(a.layout.num_shards == 24 && a.layout.num_pages == 63, "shards %" PRId64 " pages %" PRId64,
          a.layout.num_shards, a.layout.num_pages);
    /* Page 62 is page coordinate (2,6,2): shard (1,3,2) = 23 -> core 5, slot 3, first page: offset 12. */
    nd_loc last = nd_layout_locate_id(&a.layout, 62);
    CHECK(last.core == 5 && last.offset == 12, "page 62 at (%" PRId64 ",%" PRId64 ")", last.core, last.offset);
    /* Page 3 is (0,1,0): shard 0, second page of the shard. */
    nd_loc p3 = nd_layout_locate_id(&a.layout, 3);
    CHECK(p3.core == 0 && p3.offset == 1, "page 3 at (%" PRId64 ",%" PRId64 ")", p3.core, p3.offset);
    /* Core order on a 2x3 grid, row major: x fastest. */
    nd_core c2 = nd_dist_core(&a, 2);
    CHECK(c2.x == 0 && c2.y == 1, "core 2 is (%d,%d)", c2.x, c2.y);

    nd_dist b = make("10,10,10", "1,10,10", 2, 3);
    const int64_t b_want[] = {2, 2, 2, 2, 1, 1};
    expect_shards_per_core("[10,10,10]/[1,10,10]", &b, b_want, 6);

    nd_dist c = make("10,10,10", "10,1,1", 2, 3);
    const int64_t c_want[] = {17, 17, 17, 17, 16, 16};
    expect_shards_per_core("[10,10,10]/[10,1,1]", &c, c_want, 6);
    /* Each shard is a stick over all channels: pages (1,1,1), shard of 10 pages. */
    CHECK(c.layout.shard_pages == 10 && c.pages_per_core == 170, "shard pages %" PRId64 ", reserved %" PRId64,
          c.layout.shard_pages, c.pages_per_core);
}

/* The reference's example: pages {4,4,6} in shards {1,2,2} squeeze to {16,6} in {2,2}. */
static void squeeze_example(void)
{
    nd_dist_spec s;
    nd_dist d;
    nd_error err;
    nd_dist_spec_init(&s);
    s.rank = s.shard_rank = s.page_rank = 3;
    s.page_kind = ND_PAGE_BOX;
    memcpy(s.shape, (int64_t[]){4, 4, 6}, sizeof(int64_t) * 3);
    memcpy(s.shard, (int64_t[]){1, 2, 2}, sizeof(int64_t) * 3);
    memcpy(s.page, (int64_t[]){1, 1, 1}, sizeof(int64_t) * 3);
    CHECK(nd_dist_make(&s, 2, 2, &d, &err) == 0, "%s", err.msg);
    CHECK(d.squeezed.rank == 2 && d.squeezed.pages[0] == 16 && d.squeezed.pages[1] == 6 &&
              d.squeezed.shard[0] == 2 && d.squeezed.shard[1] == 2,
          "squeezed to rank %d: %" PRId64 ",%" PRId64 " / %" PRId64 ",%" PRId64, d.squeezed.rank, d.squeezed.pages[0],
          d.squeezed.pages[1], d.squeezed.shard[0], d.squeezed.shard[1]);
    ++passed;
}

/* tt-metal users hit a shard-by-coordinate lookup that always returned shard 0, and a shard-page
 * iterator that dropped trailing uneven shards. */
static void known_bugs(void)
{
    nd_dist d = make("5,7", "2,3", 3, 1); /* uneven on both dims: shard grid 3x3 */
    for (int64_t s = 0; s < d.layout.num_shards; ++s) {
        int64_t origin[ND_MAX_RANK], page[ND_MAX_RANK] = {0}; /* dims past the rank stay 0 */
        nd_dist_shard_origin(&d, s, origin);
        for (int i = 0; i < 2; ++i)
            page[i] = origin[i]; /* page box is (1,3): column index in pages */
        nd_loc loc = nd_layout_locate(&d.layout, page);
        CHECK(loc.core == s % 3 && loc.offset == s / 3 * d.layout.shard_pages,
              "shard %" PRId64 " origin at core %" PRId64 " offset %" PRId64, s, loc.core, loc.offset);
    }
    /* shard 8 is the trailing corner: rows 4..4, page column 2; it must be iterated. */
    int64_t pages = 0;
    bool saw_corner = false;
    for (nd_page_iter it = nd_page_iter_begin(&d.layout, 2); it.valid; nd_page_iter_next(&it)) {
        ++pages;
        saw_corner |= it.page_id == 4 * 3 + 2;
    }
    CHECK(saw_corner && pages == nd_dist_shard_real_pages(&d, 2) + nd_dist_shard_real_pages(&d, 5) +
                                     nd_dist_shard_real_pages(&d, 8),
          "core 2 iterated %" PRId64 " pages", pages);
    ++passed;
}

int main(void)
{
    seed_pictures();
    squeeze_example();
    known_bugs();
    return test_finish(passed);
}
