/* hostio.c - scatter a contiguous row-major array into a distributed tensor, and gather it back. */
#include <assert.h>
#include <string.h>

#include "runtime_internal.h"

/*
 * Copies one page between the host array and its slot. Inside a page, elements are row-major over
 * the page box; the part of an edge page outside the tensor is padding, written as zero.
 */
static void copy_page(const nd_dist *d, int64_t page_id, uint8_t *host, uint8_t *slot, bool to_device)
{
    const nd_dist_spec *s = &d->spec;
    int r = s->rank, last = r - 1;
    int64_t coord[ND_MAX_RANK], e0[ND_MAX_RANK], ext[ND_MAX_RANK], hs[ND_MAX_RANK], ps[ND_MAX_RANK];
    int64_t h = 1, p = 1;
    bool edge = false;
    nd_dist_page_coord(d, page_id, coord);
    for (int i = last; i >= 0; --i) {
        hs[i] = h;
        ps[i] = p;
        h *= s->shape[i];
        p *= s->page[i];
        e0[i] = coord[i] * s->page[i];
        ext[i] = s->shape[i] - e0[i] < s->page[i] ? s->shape[i] - e0[i] : s->page[i];
        edge |= ext[i] < s->page[i];
    }
    if (edge && to_device)
        memset(slot, 0, (size_t)d->page_bytes);
    int64_t row[ND_MAX_RANK] = {0}, eb = d->elem_bytes, run = ext[last] * eb;
    for (;;) {
        int64_t ho = 0, po = 0;
        for (int i = 0; i < r; ++i) {
            ho += (e0[i] + row[i]) * hs[i];
            po += row[i] * ps[i];
        }
        if (to_device)
            memcpy(slot + po * eb, host + ho * eb, (size_t)run);
        else
            memcpy(host + ho * eb, slot + po * eb, (size_t)run);
        int i = last - 1; /* next row: odometer over the outer dims of the page */
        while (i >= 0 && ++row[i] == ext[i])
            row[i--] = 0;
        if (i < 0)
            break;
    }
}

/*
 * Over several processes, each host call is collective: it begins and ends with the device's fence, so
 * it sees every process's earlier writes, and no process writes a page another is still reading.
 */
static void fence(const nd_tensor *t, nd_call call, int part, bool end)
{
    if (t->dev->procs)
        t->dev->procs->fence(t->dev, (nd_fence_call){call, end, nd_hash_bytes(t->ident, &part, sizeof part)});
}

void nd_page_runs(const nd_dist *d, int64_t page_id, bool *edge,
                  void (*fn)(void *ctx, int64_t host_elem, int64_t page_elem, int64_t elems), void *ctx)
{
    const nd_dist_spec *s = &d->spec;
    int r = s->rank, last = r - 1;
    int64_t coord[ND_MAX_RANK], e0[ND_MAX_RANK], ext[ND_MAX_RANK], hs[ND_MAX_RANK], ps[ND_MAX_RANK];
    int64_t h = 1, p = 1;
    *edge = false;
    nd_dist_page_coord(d, page_id, coord);
    for (int i = last; i >= 0; --i) {
        hs[i] = h;
        ps[i] = p;
        h *= s->shape[i];
        p *= s->page[i];
        e0[i] = coord[i] * s->page[i];
        ext[i] = s->shape[i] - e0[i] < s->page[i] ? s->shape[i] - e0[i] : s->page[i];
        *edge |= ext[i] < s->page[i];
    }
    int64_t row[ND_MAX_RANK] = {0};
    for (;;) {
        int64_t ho = 0, po = 0;
        for (int i = 0; i < r; ++i) {
            ho += (e0[i] + row[i]) * hs[i];
            po += row[i] * ps[i];
        }
        fn(ctx, ho, po, ext[last]);
        int i = last - 1; /* next row: odometer over the outer dims of the page */
        while (i >= 0 && ++row[i] == ext[i])
            row[i--] = 0;
        if (i < 0)
            break;
    }
}

static int check_host_bytes(const nd_tensor *t, int64_t bytes, const char *what, nd_error *err)
{
    const nd_dist *d = &t->dist;
    int64_t want = d->elem_bytes;
    for (int i = 0; i < d->spec.rank; ++i)
        want *= d->spec.shape[i];
    if (bytes == want)
        return 0;
    return nd_fail(err, "%s: host array has %lld bytes, but the %s tensor needs %lld", what, (long long)bytes,
                   nd_dtype_name(d->spec.dtype), (long long)want);
}

/* Whether this process writes core-list entry i of t from the host: in one process every entry, over
 * several (runtime/mpi/) the entries on its own cores and banks. */
static bool host_writes(const nd_tensor *t, int64_t i)
{
    const nd_device_procs *p = t->dev->procs;
    return !p || nd_tensor_rank_of(t, i) == p->rank;
}

/* Copies the pages of copy r between the host array and the device; to the device, only into the
 * entries this process writes. */
static void copy_all(const nd_tensor *t, uint8_t *const *bases, int64_t r, uint8_t *host, bool to_device)
{
    const nd_dist *d = &t->dist;
    assert(r >= 0 && r < d->spec.replicas);
    uint8_t *const *base = bases + r * d->layout.ncores;
    bool all = !to_device || !t->dev->procs;
    for (int64_t p = 0; p < d->layout.num_pages; ++p) {
        nd_loc loc = nd_layout_locate_id(&d->squeezed, p);
        if (!all && !host_writes(t, r * d->layout.ncores + loc.core))
            continue;
        assert(loc.core >= 0 && loc.core < d->layout.ncores && loc.offset >= 0 &&
               (loc.offset + 1) * d->page_bytes <= d->bytes_per_core); /* the layout places every page */
        copy_page(d, p, host, base[loc.core] + loc.offset * d->page_bytes, to_device);
    }
}

/* Fills every page of copy r with the element one, as the dtype stores it. */
static void fill_ones(const nd_tensor *t, int64_t r)
{
    const nd_dist *d = &t->dist;
    uint8_t one[8];
    nd_dtype_one(d->spec.dtype, one);
    assert(r >= 0 && r < d->spec.replicas);
    for (int64_t i = 0; i < d->layout.ncores; ++i)
        if (host_writes(t, r * d->layout.ncores + i))
            for (int64_t b = 0; b + d->elem_bytes <= d->bytes_per_core; b += d->elem_bytes)
            memcpy(t->base[r * d->layout.ncores + i] + b, one, (size_t)d->elem_bytes);
}

bool nd_copy_gets_value(const nd_tensor *t, int64_t r)
{
    const nd_dist_spec *s = &t->dist.spec;
    return r < s->replicas / s->parts || nd_reduce_idempotent(s->reduce);
}

void nd_copy_fill_neutral(nd_tensor *t, int64_t r)
{
    int64_t n = t->dist.layout.ncores;
    if (nd_reduce_identity(t->dist.spec.reduce) == 1) {
        fill_ones(t, r);
        return;
    }
    for (int64_t i = 0; i < n; ++i)
        if (host_writes(t, r * n + i))
            memset(t->base[r * n + i], 0, (size_t)t->dist.bytes_per_core);
}

/* The array becomes the tensor's value. Whole copies each receive it; a Partial tensor's part 0 does,
 * and the other parts hold what leaves the value as it is under the reduce op: zeros for a sum, ones
 * for a product, the array again for avg, max and min. */
int nd_tensor_write(nd_tensor *t, const void *host, int64_t bytes, nd_error *err)
{
    if (check_host_bytes(t, bytes, "tensor write", err))
        return -1;
    fence(t, ND_CALL_WRITE, 0, false);
    for (int64_t r = 0; r < t->dist.spec.replicas; ++r) {
        if (nd_copy_gets_value(t, r))
            copy_all(t, t->base, r, (uint8_t *)host, true); /* the host array is only read in this direction */
        else
            nd_copy_fill_neutral(t, r);
    }
    fence(t, ND_CALL_WRITE, 0, true);
    return 0;
}

int nd_tensor_write_part(nd_tensor *t, int part, const void *host, int64_t bytes, nd_error *err)
{
    const nd_dist_spec *s = &t->dist.spec;
    int64_t per = s->replicas / s->parts;
    if (part < 0 || part >= s->parts)
        return nd_fail(err, "tensor write: part %d does not exist; the tensor has %d", part, (int)s->parts);
    if (check_host_bytes(t, bytes, "tensor write", err))
        return -1;
    fence(t, ND_CALL_WRITE_PART, part, false);
    for (int64_t r = part * per; r < (part + 1) * per; ++r)
        copy_all(t, t->base, r, (uint8_t *)host, true);
    fence(t, ND_CALL_WRITE_PART, part, true);
    return 0;
}

int nd_tensor_read(const nd_tensor *t, void *host, int64_t bytes, nd_error *err)
{
    if (t->dist.spec.parts > 1)
        return nd_failc(err, ND_EREFUSED, "tensor read: the tensor is Partial, %d parts pending a %s; resolve it "
                                          "with an all_reduce or reduce_scatter first, or read one part with "
                                          "nd_tensor_read_part", (int)t->dist.spec.parts,
                        nd_reduce_name(t->dist.spec.reduce));
    return nd_tensor_read_part(t, 0, host, bytes, err);
}

int nd_tensor_read_part(const nd_tensor *t, int part, void *host, int64_t bytes, nd_error *err)
{
    const nd_dist_spec *s = &t->dist.spec;
    if (part < 0 || part >= s->parts)
        return nd_fail(err, "tensor read: part %d does not exist; the tensor has %d", part, (int)s->parts);
    if (check_host_bytes(t, bytes, "tensor read", err))
        return -1;
    fence(t, ND_CALL_READ_PART, part, false);
    int64_t copy = (int64_t)part * (s->replicas / s->parts);
    uint8_t *const *bases = t->base;
    if (t->dev->procs && t->dev->procs->stage) /* other nodes' pages of the copy, by gets */
        t->dev->procs->stage(t->dev, &t, 1, NULL, NULL, copy, false, &bases);
    copy_all(t, bases, copy, host, false);
    fence(t, ND_CALL_READ_PART, part, true); /* no process changes a page before every process has read it */
    return 0;
}
