/* arena.c - first-fit allocation inside one core's L1 or one DRAM bank. */
#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

enum { ALIGN = ND_ENTRY_ALIGN };

/* Start of the gap before block i (i == n: the tail gap). */
static int64_t gap_start(const nd_arena *a, int64_t i)
{
    return i == 0 ? 0 : nd_entry_align_up(a->blocks[i - 1].off + a->blocks[i - 1].len);
}

static int64_t gap_end(const nd_arena *a, int64_t i) { return i == a->n ? a->size : a->blocks[i].off; }

#ifndef NDEBUG
/* Blocks sorted by offset, aligned, disjoint and inside the arena; n within cap. For assertions. */
static bool arena_sound(const nd_arena *a)
{
    if (a->n < 0 || a->n > a->cap || a->size < 0)
        return false;
    for (int64_t i = 0; i < a->n; ++i) {
        const nd_block *b = &a->blocks[i];
        if (b->off % ALIGN || b->len < 1 || b->off < gap_start(a, i) || b->off + b->len > a->size)
            return false;
    }
    return true;
}
#endif

int nd_arena_alloc(nd_arena *a, int64_t len, int64_t *off)
{
    if (len <= 0)
        len = 1;
    assert(arena_sound(a));
    for (int64_t i = 0; i <= a->n; ++i) {
        int64_t start = gap_start(a, i);
        if (gap_end(a, i) - start < len)
            continue;
        if (a->n == a->cap) {
            int64_t cap = a->cap ? 2 * a->cap : 8;
            nd_block *b = realloc(a->blocks, (size_t)cap * sizeof *b);
            if (!b)
                return -1;
            a->blocks = b;
            a->cap = cap;
        }
        memmove(&a->blocks[i + 1], &a->blocks[i], (size_t)(a->n - i) * sizeof *a->blocks);
        a->blocks[i] = (nd_block){start, len};
        ++a->n;
        *off = start;
        assert(start % ALIGN == 0 && start + len <= a->size && arena_sound(a));
        return 0;
    }
    return -1;
}

void nd_arena_free(nd_arena *a, int64_t off)
{
    int64_t lo = 0, hi = a->n;
    while (lo < hi) { /* binary search: blocks are sorted by offset */
        int64_t mid = (lo + hi) / 2;
        if (a->blocks[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    assert(lo < a->n && a->blocks[lo].off == off); /* only offsets nd_arena_alloc gave are freed */
    if (lo < a->n && a->blocks[lo].off == off) {
        memmove(&a->blocks[lo], &a->blocks[lo + 1], (size_t)(a->n - lo - 1) * sizeof *a->blocks);
        --a->n;
    }
    assert(arena_sound(a));
}

int64_t nd_arena_largest_gap(const nd_arena *a)
{
    int64_t best = 0;
    for (int64_t i = 0; i <= a->n; ++i) {
        int64_t g = gap_end(a, i) - gap_start(a, i);
        best = g > best ? g : best;
    }
    return best;
}

void nd_arena_release(nd_arena *a)
{
    free(a->blocks);
    memset(a, 0, sizeof *a);
}
