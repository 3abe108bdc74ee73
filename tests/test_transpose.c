/*
 * test_transpose.c - the permute template's in-register tile transpose (templates/transpose.h) against
 * a plain element loop: for elements of 1, 2, 4 and 8 bytes, with plain and non-temporal stores, source
 * columns at any byte offset and drow at random distances, at column offsets `at` of 0 and some tiles
 * in. Every byte around the tile's destination must stay as it was. Compiled with the kernels' flags, so
 * it runs the lane counts the kernels run (target.h); prints its seed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "transpose.h"

static int64_t passed;
static uint64_t seed;

enum { PAD = 64, MAXT = 64 }; /* MAXT: the most elements in a tile's side (1-byte elements) */

/* One tile of elements of e bytes: columns from a random source, drow into a destination with
 * row_bytes between drow, at column at; checked against the element loop on a copy. */
static void check_tile(size_t e, bool stream, int64_t at, size_t src_skew)
{
    const int t = (int)(64 / e);
    const size_t row_bytes = (size_t)(at + t) * e + (size_t)rng_range(&seed, 0, 3) * 64 + 2 * PAD;
    const size_t dst_len = (size_t)t * row_bytes + PAD;
    uint8_t *src = malloc((size_t)MAXT * 64 * 2 + PAD);
    uint8_t *got = aligned_alloc(64, dst_len + 64 - dst_len % 64), *want = malloc(dst_len);
    for (size_t i = 0; i < (size_t)MAXT * 64 * 2 + PAD; ++i)
        src[i] = (uint8_t)rng_next(&seed);
    for (size_t i = 0; i < dst_len; ++i)
        got[i] = want[i] = (uint8_t)rng_next(&seed);
    const void *cols[MAXT];
    void *drow[MAXT], *wrow[MAXT];
    for (int j = 0; j < t; ++j) /* column j: t elements somewhere in src, apart by a random gap */
        cols[j] = src + src_skew + (size_t)j * 64 * 2 + (size_t)rng_range(&seed, 0, 1) * 64;
    for (int b = 0; b < t; ++b) { /* drow 64-byte aligned (streaming needs it at at), PAD after the start */
        drow[b] = got + PAD + (size_t)b * row_bytes;
        wrow[b] = want + PAD + (size_t)b * row_bytes;
    }
    for (int b = 0; b < t; ++b)
        for (int j = 0; j < t; ++j)
            memcpy((uint8_t *)wrow[b] + (size_t)(at + j) * e, (const uint8_t *)cols[j] + (size_t)b * e, e);
    tr_tile(drow, at, cols, e, stream);
    CHECK(memcmp(got, want, dst_len) == 0,
          "tr_tile: %zu-byte elements, %s stores, at %lld, source skew %zu: differs from the element loop", e,
          stream ? "non-temporal" : "plain", (long long)at, src_skew);
    passed++;
    free(src);
    free(got);
    free(want);
}

int main(int argc, char **argv)
{
    seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
    printf("test_transpose: seed %llu (rerun with: test_transpose %llu); %d-byte vectors (%s)\n",
           (unsigned long long)seed, (unsigned long long)seed, ND_VBYTES, ND_ISA);
    static const size_t sizes[] = {1, 2, 4, 8};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; ++k)
        for (int stream = 0; stream <= 1; ++stream)
            for (int rep = 0; rep < 8; ++rep) {
                const int t = (int)(64 / sizes[k]);
                const int64_t at = rng_range(&seed, 0, 3) * t; /* whole lines in, as the template's j0 */
                const size_t skew = (size_t)rng_range(&seed, 0, 63); /* the source need not be aligned */
                check_tile(sizes[k], stream, at, skew);
            }
    return test_finish(passed);
}
