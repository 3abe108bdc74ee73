/* dist.c - validating a distribution spec and answering placement queries. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nd_dist.h"
#include "dist_internal.h"

__attribute__((format(printf, 3, 0))) static int fail_v(nd_error *err, nd_errcode code, const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return -1;
}

int nd_fail(nd_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_v(err, ND_EINVAL, fmt, ap);
    va_end(ap);
    return -1;
}

int nd_failc(nd_error *err, nd_errcode code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_v(err, code, fmt, ap);
    va_end(ap);
    return -1;
}

const char *nd_errcode_name(nd_errcode code)
{
    static const char *const names[] = {
#define ND_ERRCODE_NAME(name, what) #name,
        ND_ERROR_CODES(ND_ERRCODE_NAME)
#undef ND_ERRCODE_NAME
    };
    return (unsigned)code < ND_ERRCODE_COUNT ? names[code] : "ND_?";
}

const char *nd_errcode_what(nd_errcode code)
{
    static const char *const whats[] = {
#define ND_ERRCODE_WHAT(name, what) what,
        ND_ERROR_CODES(ND_ERRCODE_WHAT)
#undef ND_ERRCODE_WHAT
    };
    return (unsigned)code < ND_ERRCODE_COUNT ? whats[code] : "unknown error code";
}

/* ND_REDUCE_OPS' columns as arrays indexed by reduce op. */
#define RD_NAME(e, name, identity, idempotent, selects, linear, jax) [e] = #name,
#define RD_IDENTITY(e, name, identity, idempotent, selects, linear, jax) [e] = identity,
#define RD_IDEMPOTENT(e, name, identity, idempotent, selects, linear, jax) [e] = idempotent,
#define RD_SELECTS(e, name, identity, idempotent, selects, linear, jax) [e] = selects,
#define RD_JAX(e, name, identity, idempotent, selects, linear, jax) [e] = jax,
#define RD_LINEAR(e, name, identity, idempotent, selects, linear, jax) [e] = linear,
static const char *const reduce_names[ND_REDUCES] = {ND_REDUCE_OPS(RD_NAME)};
static const double reduce_identity[ND_REDUCES] = {ND_REDUCE_OPS(RD_IDENTITY)};
static const bool reduce_idempotent[ND_REDUCES] = {ND_REDUCE_OPS(RD_IDEMPOTENT)},
                  reduce_selects[ND_REDUCES] = {ND_REDUCE_OPS(RD_SELECTS)},
                  reduce_linear[ND_REDUCES] = {ND_REDUCE_OPS(RD_LINEAR)}, reduce_jax[ND_REDUCES] = {ND_REDUCE_OPS(RD_JAX)};

const char *nd_reduce_name(nd_reduce r) { return (unsigned)r < ND_REDUCES ? reduce_names[r] : "?"; }
/* Outside the table (a value in a caller's struct that was never checked): none of the properties. */
double nd_reduce_identity(nd_reduce r) { return (unsigned)r < ND_REDUCES ? reduce_identity[r] : 0; }
bool nd_reduce_idempotent(nd_reduce r) { return (unsigned)r < ND_REDUCES && reduce_idempotent[r]; }
bool nd_reduce_selects(nd_reduce r) { return (unsigned)r < ND_REDUCES && reduce_selects[r]; }
bool nd_reduce_linear(nd_reduce r) { return (unsigned)r < ND_REDUCES && reduce_linear[r]; }
bool nd_reduce_jax(nd_reduce r) { return (unsigned)r < ND_REDUCES && reduce_jax[r]; }

int nd_reduce_parse(const char *name)
{
    for (int i = 0; i < ND_REDUCES; ++i)
        if (strcmp(name, reduce_names[i]) == 0)
            return i;
    return -1;
}

const char *nd_reduce_list(char *buf, size_t len, bool jax_only)
{
    int n = 0, k = 0;
    for (int i = 0; i < ND_REDUCES; ++i)
        n += !jax_only || reduce_jax[i];
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < ND_REDUCES && at < len; ++i)
        if (!jax_only || reduce_jax[i]) {
            ++k;
            at += (size_t)snprintf(buf + at, len - at, "%s%s", k == 1 ? "" : k == n ? " or " : ", ", reduce_names[i]);
        }
    return buf;
}

/* The table's columns as arrays indexed by dtype; each row's bytes are its storage type's size. */
#define DT_SIZE(e, name, bytes, type, floating, load, store, tol, one) [e] = bytes,
#define DT_NAME(e, name, bytes, type, floating, load, store, tol, one) [e] = #name,
#define DT_FLOATING(e, name, bytes, type, floating, load, store, tol, one) [e] = floating,
#define DT_STORED_FLOATING(e, name, bytes, type, floating, load, store, tol, one) [e] = floating && sizeof(#load) == 1,
#define DT_CTYPE(e, name, bytes, type, floating, load, store, tol, one) [e] = #type,
#define DT_LOAD(e, name, bytes, type, floating, load, store, tol, one) [e] = #load,
#define DT_STORE(e, name, bytes, type, floating, load, store, tol, one) [e] = #store,
#define DT_TOL(e, name, bytes, type, floating, load, store, tol, one) [e] = tol,
#define DT_ONE(e, name, bytes, type, floating, load, store, tol, one) [e] = one,
#define DT_CHECK(e, name, bytes, type, floating, load, store, tol, one)                                       \
    _Static_assert(sizeof(type) == bytes, "ND_DTYPES: " #name "'s bytes are its storage type's size");
ND_DTYPES(DT_CHECK)

static const int dt_size[] = {ND_DTYPES(DT_SIZE)};
static const char *const dt_name[] = {ND_DTYPES(DT_NAME)};
static const bool dt_floating[] = {ND_DTYPES(DT_FLOATING)}, dt_stored_floating[] = {ND_DTYPES(DT_STORED_FLOATING)};
static const char *const dt_ctype[] = {ND_DTYPES(DT_CTYPE)}, *const dt_load[] = {ND_DTYPES(DT_LOAD)},
                         *const dt_store[] = {ND_DTYPES(DT_STORE)};
static const double dt_tol[] = {ND_DTYPES(DT_TOL)};
static const uint32_t dt_one[] = {ND_DTYPES(DT_ONE)};

int nd_dtype_size(nd_dtype t) { return dt_size[t]; }
const char *nd_dtype_name(nd_dtype t) { return dt_name[t]; }
bool nd_dtype_floating(nd_dtype t) { return dt_floating[t]; }
bool nd_dtype_stored_floating(nd_dtype t) { return dt_stored_floating[t]; }
const char *nd_dtype_ctype(nd_dtype t) { return dt_ctype[t]; }
const char *nd_dtype_load_name(nd_dtype t) { return dt_load[t]; }
const char *nd_dtype_store_name(nd_dtype t) { return dt_store[t]; }
double nd_dtype_tolerance(nd_dtype t) { return dt_tol[t]; }

void nd_dtype_one(nd_dtype t, uint8_t *out)
{
    for (int i = 0; i < dt_size[t]; ++i) /* little-endian, whatever the host: the bits are the table's */
        out[i] = (uint8_t)(dt_one[t] >> (8 * i));
}

#define ENUM_NAME(e, name, shorter) [e] = #name,
static const char *const strategy_names[] = {ND_STRATEGIES(ENUM_NAME)};
static const char *const orientation_names[] = {ND_ORIENTATIONS(ENUM_NAME)};
static const char *const buffer_names[] = {ND_BUFFERS(ENUM_NAME)};
#undef ENUM_NAME

const char *nd_strategy_name(nd_strategy s) { return (unsigned)s < ND_STRATEGY_COUNT ? strategy_names[s] : "?"; }
const char *nd_orientation_name(nd_orientation o)
{
    return (unsigned)o < ND_ORIENTATION_COUNT ? orientation_names[o] : "?";
}
const char *nd_buffer_name(nd_buffer b) { return (unsigned)b < ND_BUFFER_COUNT ? buffer_names[b] : "?"; }

const char *nd_format_dims(char *buf, size_t len, const int64_t *dims, int rank)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < rank && n < len; ++i)
        n += (size_t)snprintf(buf + n, len - n, i ? ",%lld" : "%lld", (long long)dims[i]);
    return buf;
}

void nd_dist_spec_init(nd_dist_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->dtype = ND_F32;
    spec->page_kind = ND_PAGE_ROW;
    spec->strategy = ND_ROUND_ROBIN;
    spec->cores.orientation = ND_ROW_MAJOR;
    spec->buffer = ND_L1;
    spec->replicas = spec->parts = 1;
    spec->reduce = ND_REDUCE_SUM;
}

/* ---------------------------------------------------------------- validation */

static int check_dims(const char *what, const int64_t *dims, int rank, nd_error *err)
{
    char buf[256];
    for (int i = 0; i < rank; ++i)
        if (dims[i] <= 0)
            return nd_fail(err, "%s %s: dim %d is %lld, but every dim must be positive", what,
                           nd_format_dims(buf, sizeof buf, dims, rank), i, (long long)dims[i]);
    return 0;
}

static int check_rank(const char *what, int rank, const nd_dist_spec *s, nd_error *err)
{
    char buf[256];
    if (rank == s->rank)
        return 0;
    return nd_fail(err, "%s: rank %d does not match the rank %d of shape %s", what, rank, s->rank,
                   nd_format_dims(buf, sizeof buf, s->shape, s->rank));
}

static bool tile_exists(int32_t h, int32_t w)
{
    return (h == 32 || h == 16) && (w == 32 || w == 16);
}

/* Fills d->spec.page[] (elements) from the page kind. */
static int resolve_page(nd_dist_spec *s, nd_error *err)
{
    char buf[256];
    int r = s->rank;
    switch (s->page_kind) {
    case ND_PAGE_TILE:
        if (!tile_exists(s->tile_h, s->tile_w))
            return nd_fail(err, "tile %dx%d: no such tile shape; tiles are 32x32, 16x16, 16x32 and 32x16",
                           s->tile_h, s->tile_w);
        if (r < 2)
            return nd_fail(err, "tile %dx%d: tile pages need rank 2 or more, but shape %s has rank %d",
                           s->tile_h, s->tile_w, nd_format_dims(buf, sizeof buf, s->shape, r), r);
        for (int i = 0; i < r - 2; ++i)
            s->page[i] = 1;
        s->page[r - 2] = s->tile_h;
        s->page[r - 1] = s->tile_w;
        return 0;
    case ND_PAGE_ROW:
        for (int i = 0; i < r - 1; ++i)
            s->page[i] = 1;
        s->page[r - 1] = s->interleaved ? s->shape[r - 1] : s->shard[r - 1];
        return 0;
    case ND_PAGE_BOX:
        if (check_rank("page", s->page_rank, s, err) || check_dims("page", s->page, r, err))
            return -1;
        return 0;
    }
    return nd_fail(err, "page: unknown page kind %d", (int)s->page_kind);
}

static int check_shard_pages(const nd_dist_spec *s, nd_error *err)
{
    char sb[256], pb[256];
    for (int i = 0; i < s->rank; ++i)
        if (s->shard[i] % s->page[i] != 0)
            return nd_fail(err, "shard %s: dim %d (%lld) is not a whole number of pages of %s",
                           nd_format_dims(sb, sizeof sb, s->shard, s->rank), i, (long long)s->shard[i],
                           nd_format_dims(pb, sizeof pb, s->page, s->rank));
    return 0;
}

static int64_t range_cores(const nd_core_range *r)
{
    return (int64_t)(r->hi.x - r->lo.x + 1) * (r->hi.y - r->lo.y + 1);
}

static bool ranges_overlap(const nd_core_range *a, const nd_core_range *b)
{
    return a->lo.x <= b->hi.x && b->lo.x <= a->hi.x && a->lo.y <= b->hi.y && b->lo.y <= a->hi.y;
}

static int check_cores(const nd_core_set *set, int gx, int gy, const char *unit, nd_error *err)
{
    for (int i = 0; i < set->nranges; ++i) {
        const nd_core_range *r = &set->ranges[i];
        if (r->lo.x > r->hi.x || r->lo.y > r->hi.y)
            return nd_fail(err, "cores (%d,%d)-(%d,%d): range %d is reversed; write the low corner first",
                           r->lo.x, r->lo.y, r->hi.x, r->hi.y, i);
        if (r->lo.x < 0 || r->lo.y < 0 || r->hi.x >= gx || r->hi.y >= gy)
            return nd_fail(err, "cores (%d,%d)-(%d,%d): range %d leaves the %dx%d %s", r->lo.x, r->lo.y,
                           r->hi.x, r->hi.y, i, gx, gy, unit);
        for (int j = 0; j < i; ++j)
            if (ranges_overlap(&set->ranges[j], r))
                return nd_fail(err, "cores: ranges %d and %d share cores; a core may appear once, "
                                    "or two shards would alias the same memory", j, i);
    }
    return 0;
}

/* Every byte count the model derives must fit int64, padding included. */
static int check_bytes(const nd_dist_spec *s, nd_dist *d, nd_error *err)
{
    char buf[256];
    int64_t bytes = nd_dtype_size(s->dtype), page_elems = 1, shard_pages = 1, shards = 1, padded;
    bool ok = true;
    for (int i = 0; i < s->rank && ok; ++i) {
        int64_t S = s->shard[i] / s->page[i], g = ceil_div(ceil_div(s->shape[i], s->page[i]), S);
        ok = mul_ok(bytes, s->shape[i], &bytes) && mul_ok(page_elems, s->page[i], &page_elems) &&
             mul_ok(shard_pages, S, &shard_pages) && mul_ok(shards, g, &shards);
    }
    d->elem_bytes = nd_dtype_size(s->dtype);
    d->page_elems = page_elems;
    ok = ok && mul_ok(page_elems, d->elem_bytes, &d->page_bytes) && mul_ok(shards, shard_pages, &padded) &&
         mul_ok(padded, d->page_bytes, &padded);
    if (ok)
        return 0;
    return nd_failc(err, ND_ERANGE, "shape %s: the %s tensor's byte size overflows 64 bits",
                   nd_format_dims(buf, sizeof buf, s->shape, s->rank), nd_dtype_name(s->dtype));
}

static int check_spec(nd_dist_spec *s, int gx, int gy, nd_error *err)
{
    const char *unit = s->buffer == ND_DRAM ? "DRAM banks" : "core grid";
    if (s->rank < 1 || s->rank > ND_MAX_RANK)
        return nd_fail(err, "shape: rank %d is out of range 1..%d", s->rank, ND_MAX_RANK);
    if (check_dims("shape", s->shape, s->rank, err))
        return -1;
    if ((unsigned)s->dtype >= ND_DTYPE_COUNT)
        return nd_fail(err, "dtype: unknown dtype %d", (int)s->dtype);
    /* a value outside its table would print as "?" and be laid out as some other enumerator */
    if ((unsigned)s->strategy >= ND_STRATEGY_COUNT || (unsigned)s->cores.orientation >= ND_ORIENTATION_COUNT ||
        (unsigned)s->buffer >= ND_BUFFER_COUNT || (unsigned)s->page_kind > ND_PAGE_BOX)
        return nd_fail(err, "distribution: strategy %d, orientation %d, memory %d or page kind %d is not one of "
                            "its enumeration's values", (int)s->strategy, (int)s->cores.orientation, (int)s->buffer,
                       (int)s->page_kind);
    if (s->cores.nranges < 0 || s->cores.nranges > ND_MAX_RANGES)
        return nd_fail(err, "cores: %d ranges; give 0 (the whole grid) to %d", s->cores.nranges, ND_MAX_RANGES);
    if (!s->interleaved && (check_rank("shard", s->shard_rank, s, err) ||
                            check_dims("shard", s->shard, s->rank, err)))
        return -1;
    if (resolve_page(s, err))
        return -1;
    if (s->interleaved)
        memcpy(s->shard, s->page, sizeof s->shard);
    if (check_shard_pages(s, err))
        return -1;
    if (gx < 1 || gy < 1)
        return nd_fail(err, "grid %dx%d: needs at least one core in each direction", gx, gy);
    if (gx > ND_MAX_GRID || gy > ND_MAX_GRID)
        return nd_fail(err, "grid %dx%d: at most %d cores in each direction", gx, gy, ND_MAX_GRID);
    if (s->cores.nranges == 0)
        s->cores.ranges[s->cores.nranges++] = (nd_core_range){{0, 0}, {gx - 1, gy - 1}};
    return check_cores(&s->cores, gx, gy, unit, err);
}

/* Copies split the core list evenly, and partial sums split the copies evenly. */
static int check_replicas(const nd_dist_spec *s, int64_t list_cores, nd_error *err)
{
    if (s->replicas < 1 || s->parts < 1 || s->replicas % s->parts)
        return nd_fail(err, "replicas %d, parts %d: need replicas >= 1 and parts dividing replicas", (int)s->replicas,
                       (int)s->parts);
    if (list_cores % s->replicas)
        return nd_fail(err, "replicas %d: the core list has %lld cores, which do not split into %d equal copies",
                       (int)s->replicas, (long long)list_cores, (int)s->replicas);
    if ((unsigned)s->reduce >= ND_REDUCES)
        return nd_fail(err, "reduce %d: not a reduce op", (int)s->reduce);
    if (s->replicas > 1 && (s->buffer != ND_L1 || s->interleaved))
        return nd_fail(err, "replicas %d: copies live in L1 core groups; an interleaved or DRAM tensor has one copy",
                       (int)s->replicas);
    return 0;
}

int nd_dist_make(const nd_dist_spec *spec, int grid_x, int grid_y, nd_dist *out, nd_error *err)
{
    nd_dist d;
    memset(&d, 0, sizeof d);
    d.spec = *spec;
    nd_dist_spec *s = &d.spec;
    if (check_spec(s, grid_x, grid_y, err) || check_bytes(s, &d, err))
        return -1;
    s->shard_rank = s->page_rank = s->rank;

    nd_layout *l = &d.layout;
    l->rank = s->rank;
    l->strategy = s->strategy;
    d.list_cores = nd_core_set_count(&s->cores);
    if (check_replicas(s, d.list_cores, err))
        return -1;
    l->ncores = d.list_cores / s->replicas;
    if (s->parts == 1) /* one part is the value, whatever the op: one form, so signatures compare */
        s->reduce = ND_REDUCE_SUM;
    for (int i = 0; i < s->rank; ++i) {
        l->pages[i] = ceil_div(s->shape[i], s->page[i]);
        l->shard[i] = s->shard[i] / s->page[i];
    }
    nd_layout_finish(l);
    nd_layout_squeeze(l, &d.squeezed);
    d.pages_per_core = l->shards_per_core * l->shard_pages;
    d.bytes_per_core = d.pages_per_core * d.page_bytes; /* <= padded total, checked above */
    *out = d;
    return 0;
}

int nd_dist_check_fit(const nd_dist *d, int64_t capacity, nd_error *err)
{
    if (d->bytes_per_core <= capacity)
        return 0;
    return nd_failc(err, ND_ENOMEM, "%s: the tensor needs %lld bytes per %s (%lld pages of %lld bytes), but each holds %lld",
                   d->spec.buffer == ND_DRAM ? "dram" : "l1", (long long)d->bytes_per_core,
                   d->spec.buffer == ND_DRAM ? "bank" : "core", (long long)d->pages_per_core,
                   (long long)d->page_bytes, (long long)capacity);
}

/* ---------------------------------------------------------------- queries */

nd_core nd_core_set_at(const nd_core_set *set, int64_t i)
{
    for (int k = 0; k < set->nranges; ++k) {
        const nd_core_range *r = &set->ranges[k];
        int64_t n = range_cores(r);
        if (i >= n) {
            i -= n;
            continue;
        }
        int32_t w = r->hi.x - r->lo.x + 1, h = r->hi.y - r->lo.y + 1;
        if (set->orientation == ND_ROW_MAJOR)
            return (nd_core){r->lo.x + (int32_t)(i % w), r->lo.y + (int32_t)(i / w)};
        return (nd_core){r->lo.x + (int32_t)(i / h), r->lo.y + (int32_t)(i % h)};
    }
    return (nd_core){-1, -1};
}

int64_t nd_core_set_count(const nd_core_set *set)
{
    int64_t n = 0;
    for (int k = 0; k < set->nranges; ++k)
        n += range_cores(&set->ranges[k]);
    return n;
}

nd_core nd_dist_core(const nd_dist *d, int64_t i) { return nd_core_set_at(&d->spec.cores, i); }

int64_t nd_dist_core_index(const nd_dist *d, nd_core c)
{
    const nd_core_set *set = &d->spec.cores;
    int64_t base = 0;
    for (int k = 0; k < set->nranges; ++k) {
        const nd_core_range *r = &set->ranges[k];
        if (c.x >= r->lo.x && c.x <= r->hi.x && c.y >= r->lo.y && c.y <= r->hi.y) {
            int64_t w = r->hi.x - r->lo.x + 1, h = r->hi.y - r->lo.y + 1;
            int64_t dx = c.x - r->lo.x, dy = c.y - r->lo.y;
            return base + (set->orientation == ND_ROW_MAJOR ? dy * w + dx : dx * h + dy);
        }
        base += range_cores(r);
    }
    return -1;
}

void nd_dist_page_coord(const nd_dist *d, int64_t page_id, int64_t *coord)
{
    const nd_layout *l = &d->layout;
    for (int i = l->rank - 1; i >= 0; --i) {
        coord[i] = page_id % l->pages[i];
        page_id /= l->pages[i];
    }
}

int64_t nd_dist_page_id(const nd_dist *d, const int64_t *coord)
{
    int64_t id = 0;
    for (int i = 0; i < d->layout.rank; ++i)
        id += coord[i] * d->layout.page_stride[i];
    return id;
}

void nd_dist_shard_origin(const nd_dist *d, int64_t shard, int64_t *coord)
{
    const nd_layout *l = &d->layout;
    for (int i = 0; i < l->rank; ++i)
        coord[i] = shard / l->grid_stride[i] % l->grid[i] * l->shard[i];
}

int64_t nd_dist_shard_real_pages(const nd_dist *d, int64_t shard)
{
    const nd_layout *l = &d->layout;
    int64_t origin[ND_MAX_RANK], n = 1;
    nd_dist_shard_origin(d, shard, origin);
    for (int i = 0; i < l->rank; ++i) {
        int64_t left = l->pages[i] - origin[i];
        n *= left < l->shard[i] ? left : l->shard[i];
    }
    return n;
}

bool nd_dist_is_local(const nd_dist *d, int64_t page_id, int64_t core)
{
    return nd_layout_locate_id(&d->squeezed, page_id).core == core;
}

/* ---------------------------------------------------------------- identity */

void nd_appendf(char *buf, size_t len, int *n, const char *fmt, ...)
{
    va_list ap;
    size_t at = (size_t)*n < len ? (size_t)*n : len;
    va_start(ap, fmt);
    *n += vsnprintf(buf + at, len - at, fmt, ap);
    va_end(ap);
}

/* The longest signature: a dtype name, three lists of ND_MAX_RANK 64-bit dims (20 characters and a
 * comma each) after their labels, ND_MAX_RANGES ranges of four 32-bit ints (11 characters) and their
 * punctuation, three enumerator names, and the copies' fields; each piece over-counted. */
enum {
    SIG_DIMS = 3 * (8 + ND_MAX_RANK * 21),
    SIG_CORES = 8 + ND_MAX_RANGES * (4 * 11 + 8), /* "(x,y)-(x,y);": 8 besides the numbers */
    SIG_REST = 16 + 3 * 24 + 64,
};
_Static_assert(SIG_DIMS + SIG_CORES + SIG_REST < ND_SIGNATURE_LEN, "ND_SIGNATURE_LEN holds the longest signature");

void nd_dist_key_of(const nd_dist *d, nd_dist_key *key) { nd_dist_key_of_spec(&d->spec, key); }

void nd_dist_key_of_spec(const nd_dist_spec *s, nd_dist_key *key)
{
    memset(key, 0, sizeof *key); /* unused dims and ranges are zero, so they never differ */
    key->dtype = s->dtype;
    key->rank = s->rank;
    memcpy(key->shape, s->shape, (size_t)s->rank * sizeof *s->shape);
    memcpy(key->page, s->page, (size_t)s->rank * sizeof *s->page);
    memcpy(key->shard, s->shard, (size_t)s->rank * sizeof *s->shard);
    key->cores.nranges = s->cores.nranges;
    memcpy(key->cores.ranges, s->cores.ranges, (size_t)s->cores.nranges * sizeof *s->cores.ranges);
    key->cores.orientation = s->cores.orientation;
    key->strategy = s->strategy;
    key->buffer = s->buffer;
    key->replicas = s->replicas;
    key->parts = s->parts;
    key->reduce = s->parts > 1 ? s->reduce : ND_REDUCE_SUM;
}

int nd_dist_key_print(const nd_dist_key *k, char *buf, size_t len)
{
    char shape[256], page[256], shard[256];
    int n = 0;
    nd_appendf(buf, len, &n, "%s shape=%s page=%s shard=%s cores=", nd_dtype_name(k->dtype),
               nd_format_dims(shape, sizeof shape, k->shape, k->rank), nd_format_dims(page, sizeof page, k->page, k->rank),
               nd_format_dims(shard, sizeof shard, k->shard, k->rank));
    for (int i = 0; i < k->cores.nranges; ++i) {
        const nd_core_range *r = &k->cores.ranges[i];
        nd_appendf(buf, len, &n, "%s(%d,%d)-(%d,%d)", i ? ";" : "", r->lo.x, r->lo.y, r->hi.x, r->hi.y);
    }
    nd_appendf(buf, len, &n, " %s %s %s", nd_orientation_name(k->cores.orientation), nd_strategy_name(k->strategy),
               nd_buffer_name(k->buffer));
    if (k->replicas > 1) /* absent for one copy, so ordinary signatures read as before */
        nd_appendf(buf, len, &n, " replicas=%d parts=%d", (int)k->replicas, (int)k->parts);
    if (k->parts > 1 && k->reduce != ND_REDUCE_SUM) /* a pending sum reads as before */
        nd_appendf(buf, len, &n, " reduce=%s", nd_reduce_name(k->reduce));
    assert(n < ND_SIGNATURE_LEN);
    return n;
}

int nd_dist_signature(const nd_dist *d, char *buf, size_t len)
{
    nd_dist_key key;
    nd_dist_key_of(d, &key);
    return nd_dist_key_print(&key, buf, len);
}

static bool same_dims(const int64_t *a, const int64_t *b, int rank)
{
    return memcmp(a, b, (size_t)rank * sizeof *a) == 0;
}

static bool same_cores(const nd_core_set *a, const nd_core_set *b)
{
    if (a->nranges != b->nranges || a->orientation != b->orientation)
        return false;
    for (int i = 0; i < a->nranges; ++i) {
        const nd_core_range *x = &a->ranges[i], *y = &b->ranges[i];
        if (x->lo.x != y->lo.x || x->lo.y != y->lo.y || x->hi.x != y->hi.x || x->hi.y != y->hi.y)
            return false;
    }
    return true;
}

bool nd_dist_key_same_free(const nd_dist_key *a, const nd_dist_key *b, unsigned free)
{
    return (!(free & ND_KEY_FREE_SHAPE) || (a->rank == b->rank && same_dims(a->shape, b->shape, a->rank))) &&
           (!(free & ND_KEY_FREE_GRID) || same_cores(&a->cores, &b->cores));
}

bool nd_dist_key_match(const nd_dist_key *a, const nd_dist_key *b, unsigned free)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->strategy != b->strategy || a->buffer != b->buffer ||
        a->replicas != b->replicas || a->parts != b->parts || a->reduce != b->reduce ||
        !same_dims(a->page, b->page, a->rank) || !same_dims(a->shard, b->shard, a->rank))
        return false;
    return nd_dist_key_same_free(a, b, ~free & (ND_KEY_FREE_SHAPE | ND_KEY_FREE_GRID));
}

static bool same_layout(const nd_layout *a, const nd_layout *b)
{
    if (a->rank != b->rank || a->ncores != b->ncores || a->strategy != b->strategy)
        return false;
    for (int i = 0; i < a->rank; ++i)
        if (a->pages[i] != b->pages[i] || a->shard[i] != b->shard[i])
            return false;
    return true;
}

bool nd_dist_same_paging(const nd_dist *a, const nd_dist *b)
{
    const nd_dist_spec *x = &a->spec, *y = &b->spec;
    if (x->rank != y->rank)
        return false;
    for (int i = 0; i < x->rank; ++i)
        if (x->shape[i] != y->shape[i] || x->page[i] != y->page[i])
            return false;
    return true;
}

bool nd_dist_same_placement(const nd_dist *a, const nd_dist *b)
{
    if (a->spec.buffer != b->spec.buffer || !same_layout(&a->squeezed, &b->squeezed) ||
        a->spec.replicas != b->spec.replicas || a->spec.parts != b->spec.parts || a->spec.reduce != b->spec.reduce)
        return false;
    for (int64_t i = 0; i < a->list_cores; ++i) {
        nd_core ca = nd_dist_core(a, i), cb = nd_dist_core(b, i);
        if (ca.x != cb.x || ca.y != cb.y)
            return false;
    }
    return true;
}
