/*
 * nd_dist/model.h - the ND distribution model: where every page of an ND-sharded tensor lives. Part of
 * nd_dist.h (library nd_dist); kernels include only this part, through nd_accessor.h.
 *
 * One model, shared by the generator (gen/) and the runtime (runtime/). It follows tt-metal's ND
 * sharding page for page (docs/distribution.md):
 *
 *   - all placement is done in pages: T[i] = ceil(shape[i] / page[i]), S[i] = shard[i] / page[i];
 *   - shards are numbered row-major over the shard grid g[i] = ceil(T[i] / S[i]), last dim fastest;
 *   - ROUND_ROBIN deals shard s to core s % N at slot s / N; CONTIGUOUS gives each core
 *     R = ceil(shards / N) consecutive shards;
 *   - inside a shard, pages are row-major over S; edge shards keep the full layout (padding pages);
 *   - every core reserves ceil(shards / N) * vol(S) pages.
 *
 * Error convention for the whole code base: a fallible function returns 0 on success and -1 on
 * failure, after writing one line "what: value: why" into the caller's nd_error. Nothing is
 * allocated or left half-done when it fails.
 */
#ifndef ND_DIST_MODEL_H
#define ND_DIST_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    ND_MAX_RANK = 8,
    ND_MAX_RANGES = 64,        /* core ranges in one core set */
    ND_MAX_GRID = 1024,        /* cores along x or y */
    ND_ERROR_LEN = 512,
};

/* Device defaults, shared by the runtime and every CLI that checks capacity. */
#define ND_DEFAULT_L1_BYTES ((int64_t)1536 << 10)
#define ND_DEFAULT_DRAM_BANKS 12
#define ND_DEFAULT_DRAM_BANK_BYTES ((int64_t)1 << 30)

/* ---------------------------------------------------------------- errors */

/* Error codes, one row each: enumerator and what it means. Callers branch on the code, never on the
 * message text, which is for people (what, where, why). */
#define ND_ERROR_CODES(X)                                                                 \
    X(ND_OK, "no error")                                                                  \
    X(ND_EINVAL, "invalid input")                    /* a bad value, flag, spec or shape */ \
    X(ND_ENOENT, "not found")                        /* no such op, kernel, entry or file */ \
    X(ND_ENOMEM, "out of memory")                    /* malloc, arena or L1/DRAM capacity */ \
    X(ND_ERANGE, "size out of range")                /* an overflowing or too large size */ \
    X(ND_EIO, "input/output error")                  /* reading or writing a file failed */ \
    X(ND_ESYS, "system call failed")                 /* fork, exec, dlopen, locks */ \
    X(ND_ESTALE, "stale")                            /* a cache entry that no longer matches */ \
    X(ND_EREFUSED, "refused")                        /* valid input that would give a wrong result */

typedef enum nd_errcode {
#define ND_ERRCODE_ENUM(name, what) name,
    ND_ERROR_CODES(ND_ERRCODE_ENUM)
#undef ND_ERRCODE_ENUM
    ND_ERRCODE_COUNT
} nd_errcode;

typedef struct nd_error {
    nd_errcode code;
    char msg[ND_ERROR_LEN];
} nd_error;

/* Writes code ND_EINVAL and the message (printf-style) into err, if err is not NULL, and returns -1. */
int nd_fail(nd_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with an explicit code. */
int nd_failc(nd_error *err, nd_errcode code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "ND_EINVAL" for ND_EINVAL; "ND_?" for a value outside the enum. */
const char *nd_errcode_name(nd_errcode code);
/* What the code means, for people: "invalid input". */
const char *nd_errcode_what(nd_errcode code);

/* ---------------------------------------------------------------- enums */

/*
 * The dtypes, one row each: the one place a dtype is described, from which the enum, names, sizes,
 * the C type kernels store it in (NDT_T), the conversions to and from f32 for a floating dtype stored
 * otherwise (nd_accessor.h's ndref_dtype_load_f32 and ndref_dtype_store_f32), the tolerance of computed
 * results and the element one are all derived. Columns: enumerator, name (a token), bytes, storage C
 * type, floating (computed as f32; else an integer), load and store conversions (empty when the storage
 * type is the value's), relative tolerance against an f32 reference (0 for an integer: exact), the bits of the element
 * one (little-endian in its bytes).
 */
#define ND_DTYPES(X)                                                                                      \
    X(ND_F32, f32, 4, float, 1, , , 1e-5, 0x3f800000u)                                                    \
    X(ND_BF16, bf16, 2, uint16_t, 1, nda_bf16_to_f32, nda_f32_to_bf16, 1e-2, 0x3f80u)                     \
    X(ND_F16, f16, 2, uint16_t, 1, nda_f16_to_f32, nda_f32_to_f16, 1e-3, 0x3c00u)                        \
    X(ND_I32, i32, 4, int32_t, 0, , , 0, 1u)                                                              \
    X(ND_U8, u8, 1, uint8_t, 0, , , 0, 1u)

typedef enum nd_dtype {
#define ND_DTYPE_ENUM(e, name, bytes, type, floating, load, store, tol, one) e,
    ND_DTYPES(ND_DTYPE_ENUM)
#undef ND_DTYPE_ENUM
} nd_dtype;
enum {
#define ND_DTYPE_COUNT_ONE(e, name, bytes, type, floating, load, store, tol, one) +1
    ND_DTYPE_COUNT = 0 ND_DTYPES(ND_DTYPE_COUNT_ONE)
#undef ND_DTYPE_COUNT_ONE
};
/* The dtypes' names, each followed by a space, as one string literal: "f32 bf16 ... " (for --help). */
#define ND_DTYPE_NAME_SP(e, name, bytes, type, floating, load, store, tol, one) #name " "
#define ND_DTYPE_LIST ND_DTYPES(ND_DTYPE_NAME_SP)
typedef enum nd_page_kind { ND_PAGE_ROW, ND_PAGE_TILE, ND_PAGE_BOX } nd_page_kind;

/*
 * A distribution's other enumerations, one row each: the one place each is described, from which the
 * enum, its count, names, parsers and their messages derive. Columns: enumerator, name (printed;
 * parsed, case-insensitive), a shorter name also parsed and the one messages list ("" none).
 */
#define ND_ORIENTATIONS(X)                                                                                \
    X(ND_ROW_MAJOR, row_major, "row")  /* a core range walked row by row */                              \
    X(ND_COL_MAJOR, col_major, "col")  /* column by column */
#define ND_STRATEGIES(X)                                                                                  \
    X(ND_ROUND_ROBIN, round_robin, "") /* shard s to core s % N */                                        \
    X(ND_CONTIGUOUS, contiguous, "")   /* each core ceil(shards / N) consecutive shards */
#define ND_BUFFERS(X)                                                                                     \
    X(ND_L1, l1, "")                   /* the cores' own memory */                                        \
    X(ND_DRAM, dram, "")               /* banks no core owns */

/*
 * How the parts of a Partial tensor combine into its value, as DTensor's Partial(reduce_op); avg is the
 * sum divided by the number of parts. Columns: enumerator, name, then what the runtime and the front
 * ends need of each op:
 *   identity    a part's value that leaves the combination as it is (0 for sum, 1 for product); used
 *               only when not idempotent
 *   idempotent  combining copies of one value gives that value, so every part may hold the value
 *   selects     the result is one of the parts, so parts rounded to a narrow dtype first still give
 *               the rounded result
 *   linear      the combination is linear, so a pending one passes through a product or a reduction
 *   jax         one of JAX's UnreducedKind (a PartitionSpec's unreduced_kind)
 */
#define ND_REDUCE_OPS(X)                                                                                  \
    X(ND_REDUCE_SUM, sum, 0, 0, 0, 1, 1)                                                                  \
    X(ND_REDUCE_AVG, avg, 0, 1, 0, 1, 0)                                                                  \
    X(ND_REDUCE_MAX, max, 0, 1, 1, 0, 1)                                                                  \
    X(ND_REDUCE_MIN, min, 0, 1, 1, 0, 1)                                                                  \
    X(ND_REDUCE_PRODUCT, product, 1, 0, 0, 0, 0)

#define ND_ENUM_ROW(e, name, ...) e,
#define ND_ENUM_COUNT(e, name, ...) +1
typedef enum nd_orientation { ND_ORIENTATIONS(ND_ENUM_ROW) } nd_orientation;
typedef enum nd_strategy { ND_STRATEGIES(ND_ENUM_ROW) } nd_strategy;
typedef enum nd_buffer { ND_BUFFERS(ND_ENUM_ROW) } nd_buffer;
typedef enum nd_reduce { ND_REDUCE_OPS(ND_ENUM_ROW) } nd_reduce;
enum {
    ND_ORIENTATION_COUNT = 0 ND_ORIENTATIONS(ND_ENUM_COUNT),
    ND_STRATEGY_COUNT = 0 ND_STRATEGIES(ND_ENUM_COUNT),
    ND_BUFFER_COUNT = 0 ND_BUFFERS(ND_ENUM_COUNT),
    ND_REDUCES = 0 ND_REDUCE_OPS(ND_ENUM_COUNT),
};

int nd_dtype_size(nd_dtype t);
const char *nd_dtype_name(nd_dtype t);
/* A floating dtype (f32, bf16, f16): computed as f32, results held to nd_dtype_tolerance; else an integer
 * dtype, whose results must be exact. */
bool nd_dtype_floating(nd_dtype t);
/* Whether its storage C type is a floating type (f32; not bf16 or f16, stored as uint16_t). */
bool nd_dtype_stored_floating(nd_dtype t);
/* The C type that stores it: "float", "uint16_t", ...; the conversion names to and from f32 ("" none). */
const char *nd_dtype_ctype(nd_dtype t);
const char *nd_dtype_load_name(nd_dtype t);
const char *nd_dtype_store_name(nd_dtype t);
double nd_dtype_tolerance(nd_dtype t);
/* The element one, as the dtype stores it, in out[0, nd_dtype_size(t)). */
void nd_dtype_one(nd_dtype t, uint8_t *out);
const char *nd_strategy_name(nd_strategy s);
const char *nd_orientation_name(nd_orientation o);
const char *nd_buffer_name(nd_buffer b);
const char *nd_reduce_name(nd_reduce r);
/* The reduce op named name (ND_REDUCE_OPS: "sum", "avg", ...), or -1. */
int nd_reduce_parse(const char *name);
/* ND_REDUCE_OPS' columns for r. */
double nd_reduce_identity(nd_reduce r);
bool nd_reduce_idempotent(nd_reduce r);
bool nd_reduce_selects(nd_reduce r);
bool nd_reduce_linear(nd_reduce r);
bool nd_reduce_jax(nd_reduce r);
/* The names of the reduce ops (every one, or JAX's alone) as "sum, max or min", into buf. */
const char *nd_reduce_list(char *buf, size_t len, bool jax_only);

/* ---------------------------------------------------------------- what the user states */

typedef struct nd_core {
    int32_t x, y;
} nd_core;

/* Inclusive rectangle of cores. For DRAM, x is the bank and y is 0. */
typedef struct nd_core_range {
    nd_core lo, hi;
} nd_core_range;

typedef struct nd_core_set {
    int nranges;
    nd_core_range ranges[ND_MAX_RANGES];
    nd_orientation orientation; /* walk order inside each range */
} nd_core_set;

/*
 * A distribution as stated: sizes in elements. nd_dist_make() validates it.
 *   page_kind ROW:  page is (1,..,1,w), w = shard width (or tensor width when interleaved);
 *   page_kind TILE: page is (1,..,1,tile_h,tile_w), one of 32x32 16x16 16x32 32x16;
 *   page_kind BOX:  page[] gives the box.
 * interleaved: each shard is one page (shard[] is ignored) and the core set defaults to every core
 * of the device grid (or every DRAM bank).
 */
typedef struct nd_dist_spec {
    int rank;                      /* rank of shape */
    int shard_rank, page_rank;     /* as given; must equal rank where used */
    int64_t shape[ND_MAX_RANK];
    nd_dtype dtype;
    nd_page_kind page_kind;
    int32_t tile_h, tile_w;
    int64_t page[ND_MAX_RANK];
    bool interleaved;
    int64_t shard[ND_MAX_RANK];
    nd_core_set cores;
    nd_strategy strategy;
    nd_buffer buffer;
    /* Copies of the whole tensor (mesh-level Replicate and Partial, see nd_sharding below). The core
     * list holds the copies one after another: copy r is entries [r*n, (r+1)*n), n = cores / replicas,
     * and every copy places pages identically within its n cores. The copies fall into `parts`
     * partial results whose combination by `reduce` is the tensor's value: copy r holds part
     * r / (replicas / parts). 1 and 1: one whole copy, as an ordinary distribution. L1 only. */
    int32_t replicas, parts;
    nd_reduce reduce;              /* parts > 1: how they combine; always ND_REDUCE_SUM otherwise */
} nd_dist_spec;

/* A spec with defaults: f32, row pages, round robin, row-major orientation, L1. */
void nd_dist_spec_init(nd_dist_spec *spec);

/* ---------------------------------------------------------------- page-domain layout */

/*
 * The placement arithmetic in pages. This is the run-time descriptor the generic accessor walks and
 * the generator turns into literals. Invariant: page ids are row-major over pages[], and the
 * squeezed layout of a distribution has the same page ids and the same (core, offset) for each.
 */
typedef struct nd_layout {
    int rank;
    int64_t pages[ND_MAX_RANK];        /* T: tensor extent in pages */
    int64_t shard[ND_MAX_RANK];        /* S: shard extent in pages */
    int64_t grid[ND_MAX_RANK];         /* g = ceil(T / S) */
    int64_t grid_stride[ND_MAX_RANK];  /* gs[i] = prod_{j>i} g[j] */
    int64_t shard_stride[ND_MAX_RANK]; /* ss[i] = prod_{j>i} S[j] */
    int64_t page_stride[ND_MAX_RANK];  /* ps[i] = prod_{j>i} T[j] */
    int64_t num_pages;                 /* vol(T) */
    int64_t num_shards;                /* vol(g) */
    int64_t shard_pages;               /* vol(S) */
    int64_t ncores;                    /* N */
    int64_t shards_per_core;           /* R = ceil(num_shards / N) */
    nd_strategy strategy;
} nd_layout;

/* Where a page lives: the core's index in the core list, and the page slot in its buffer. */
typedef struct nd_loc {
    int64_t core;
    int64_t offset;
} nd_loc;

static inline nd_loc nd_layout_place(const nd_layout *l, int64_t shard, int64_t in_shard)
{
    nd_loc loc;
    int64_t slot;
    if (l->strategy == ND_ROUND_ROBIN) {
        loc.core = shard % l->ncores;
        slot = shard / l->ncores;
    } else {
        loc.core = shard / l->shards_per_core;
        slot = shard % l->shards_per_core;
    }
    loc.offset = slot * l->shard_pages + in_shard;
    return loc;
}

/* Page coordinate c[0..rank) -> (core, offset). */
static inline nd_loc nd_layout_locate(const nd_layout *l, const int64_t *c)
{
    int64_t shard = 0, in = 0;
    for (int i = 0; i < l->rank; ++i) {
        int64_t q = c[i] / l->shard[i];
        shard += q * l->grid_stride[i];
        in += (c[i] - q * l->shard[i]) * l->shard_stride[i];
    }
    return nd_layout_place(l, shard, in);
}

/* Page id -> (core, offset). */
static inline nd_loc nd_layout_locate_id(const nd_layout *l, int64_t page_id)
{
    int64_t shard = 0, in = 0;
    for (int i = l->rank - 1; i >= 0; --i) {
        int64_t c = page_id % l->pages[i];
        int64_t q = c / l->shard[i];
        page_id /= l->pages[i];
        shard += q * l->grid_stride[i];
        in += (c - q * l->shard[i]) * l->shard_stride[i];
    }
    return nd_layout_place(l, shard, in);
}

/* Shards held by core i: ROUND_ROBIN gives shards/N + (i < shards % N). */
static inline int64_t nd_layout_core_shards(const nd_layout *l, int64_t core)
{
    if (l->strategy == ND_ROUND_ROBIN)
        return l->num_shards / l->ncores + (core < l->num_shards % l->ncores);
    int64_t n = l->num_shards - core * l->shards_per_core;
    return n < 0 ? 0 : n < l->shards_per_core ? n : l->shards_per_core;
}

/* The shard in slot k of core i (k < nd_layout_core_shards). */
static inline int64_t nd_layout_core_shard(const nd_layout *l, int64_t core, int64_t k)
{
    return l->strategy == ND_ROUND_ROBIN ? core + k * l->ncores : core * l->shards_per_core + k;
}

/*
 * Pages holding tensor data (not edge padding), in closed form: nothing walks shards or pages. Along
 * dim i the first g[i] - 1 shard positions are full (S[i] pages) and the edge one holds
 * T[i] - (g[i] - 1) * S[i]; a shard holds the product over dims.
 *
 * nd_layout_data_prefix: in shards [0, n), in O(rank) (n's digits over the shard grid).
 * nd_layout_data_pages: held by each core, into per_core[0..ncores). CONTIGUOUS is a difference of
 * prefixes, O(rank) per core; ROUND_ROBIN sums over shard ids by their residue mod N, one pass of
 * O(N) per dim (every core's count at once: O(rank * N) time, 3N words of scratch). Returns -1, with
 * per_core unspecified, only when that scratch cannot be allocated.
 */
int64_t nd_layout_data_prefix(const nd_layout *l, int64_t n);
int nd_layout_data_pages(const nd_layout *l, int64_t *per_core);

/*
 * Iterates the pages one core holds, in buffer order (slot by slot, row-major inside a shard),
 * skipping the padding pages of edge shards. Usage:
 *   for (nd_page_iter it = nd_page_iter_begin(l, core); it.valid; nd_page_iter_next(&it)) ...
 */
typedef struct nd_page_iter {
    const nd_layout *l;
    int64_t core, slot, nslots;
    int64_t origin[ND_MAX_RANK]; /* first page coordinate of the current shard */
    int64_t extent[ND_MAX_RANK]; /* pages of the current shard inside the tensor */
    int64_t c[ND_MAX_RANK];      /* coordinate relative to origin */
    int64_t page_id;             /* current page id */
    int64_t offset;              /* current page slot in the core's buffer */
    bool valid;
} nd_page_iter;

nd_page_iter nd_page_iter_begin(const nd_layout *l, int64_t core);
/* Carries into outer dims and on to the next shard; the inline step handles the innermost dim. */
void nd_page_iter_carry(nd_page_iter *it);

static inline void nd_page_iter_next(nd_page_iter *it)
{
    int last = it->l->rank - 1; /* innermost strides are 1 in both the tensor and the shard */
    if (++it->c[last] < it->extent[last]) {
        ++it->page_id;
        ++it->offset;
        return;
    }
    nd_page_iter_carry(it);
}

/* ---------------------------------------------------------------- the validated distribution */

typedef struct nd_dist {
    nd_dist_spec spec;             /* normalized: page[] and shard[] always filled, in elements */
    nd_layout layout;              /* full rank */
    nd_layout squeezed;            /* same placement, adjacent dims merged */
    int64_t elem_bytes;
    int64_t page_elems;
    int64_t page_bytes;
    int64_t pages_per_core;        /* reserved: shards_per_core * shard_pages */
    int64_t bytes_per_core;
    int64_t list_cores;            /* entries of the core list: replicas * layout.ncores */
} nd_dist;

/* Validates spec against a device grid of grid_x by grid_y cores (DRAM: grid_x banks). */
int nd_dist_make(const nd_dist_spec *spec, int grid_x, int grid_y, nd_dist *out, nd_error *err);

/* Fails when a core's reserved bytes exceed capacity. */
/* Fails with ND_ENOMEM when it does not fit. */
int nd_dist_check_fit(const nd_dist *d, int64_t capacity, nd_error *err);

/* Core i of the core list (assignment order; copy r's core j is entry r * layout.ncores + j). */
nd_core nd_dist_core(const nd_dist *d, int64_t i);
/* Index of core (x, y) in the core list, or -1. */
int64_t nd_dist_core_index(const nd_dist *d, nd_core c);

/* Page id <-> page coordinate at full rank. */
void nd_dist_page_coord(const nd_dist *d, int64_t page_id, int64_t *coord);
int64_t nd_dist_page_id(const nd_dist *d, const int64_t *coord);
/* First page coordinate of shard s, at full rank. */
void nd_dist_shard_origin(const nd_dist *d, int64_t shard, int64_t *coord);
/* Pages of shard s that lie inside the tensor. */
int64_t nd_dist_shard_real_pages(const nd_dist *d, int64_t shard);
/* Is page_id held by core i of the core list? */
bool nd_dist_is_local(const nd_dist *d, int64_t page_id, int64_t core);

/*
 * The canonical text of a distribution: dtype, shape, page box, shard, core ranges, orientation,
 * strategy and memory. Two distributions with the same signature place every page identically; the
 * generator records it for each specialized operand and the runtime matches launches on it.
 * Returns the length (snprintf-style). A buffer of ND_SIGNATURE_LEN holds every valid distribution's
 * (dist.c asserts the longest fits), so a key is never cut short: two distributions would share it.
 */
enum { ND_SIGNATURE_LEN = 4096 };
int nd_dist_signature(const nd_dist *d, char *buf, size_t len);

/*
 * The signature as typed fields: what it says of a distribution, nothing else, so that keys are equal
 * exactly when signatures are. Printed (nd_dist_key_print), a key is the signature byte for byte;
 * parsed (nd_dist_key_parse), a signature gives its key back. The registry holds its kernels' keys and
 * picks by comparing fields, with a mask of the fields a partial kernel leaves free (ND_KEY_FREE_*:
 * the values of nd_accessor.h's NDA_FREE_*, which kernels.c asserts).
 */
typedef struct nd_dist_key {
    nd_dtype dtype;
    int rank;
    int64_t shape[ND_MAX_RANK], page[ND_MAX_RANK], shard[ND_MAX_RANK];
    nd_core_set cores;  /* the core ranges and their orientation */
    nd_strategy strategy;
    nd_buffer buffer;
    int32_t replicas, parts;
    nd_reduce reduce;   /* ND_REDUCE_SUM unless parts > 1, as the signature prints it */
} nd_dist_key;

enum {
    ND_KEY_FREE_SHAPE = 1, /* the tensor shape */
    ND_KEY_FREE_GRID = 2,  /* the core list and its orientation */
};

void nd_dist_key_of(const nd_dist *d, nd_dist_key *key);
int nd_dist_key_print(const nd_dist_key *key, char *buf, size_t len);
/* The key a signature states; fails on text nd_dist_key_print would not write. */
int nd_dist_key_parse(const char *sig, nd_dist_key *key, nd_error *err);
/* Whether a and b agree on every field outside the free mask; on every field inside it. */
bool nd_dist_key_match(const nd_dist_key *a, const nd_dist_key *b, unsigned free);
bool nd_dist_key_same_free(const nd_dist_key *a, const nd_dist_key *b, unsigned free);

/* The inverse of nd_dist_signature. *grid_x and *grid_y receive the smallest grid (or banks) holding
 * its cores. */
int nd_dist_from_signature(const char *sig, nd_dist *out, int *grid_x, int *grid_y, nd_error *err);

/* Whether a and b have the same shape and page box: page p of one holds the elements page p of the
 * other holds, wherever each is placed. */
bool nd_dist_same_paging(const nd_dist *a, const nd_dist *b);

/* Whether two distributions put every page on the same core at the same offset. */
bool nd_dist_same_placement(const nd_dist *a, const nd_dist *b);

/* Rank squeezing of a page-domain layout; placement is unchanged (see nd_layout). */
void nd_layout_squeeze(const nd_layout *in, nd_layout *out);

/* ---------------------------------------------------------------- parsing user text */

/* "3,7,5" -> dims; what names the flag or field for messages. */
int nd_parse_dims(const char *what, const char *text, int64_t *dims, int *rank, nd_error *err);
/* "2x3" -> grid. */
int nd_parse_grid(const char *what, const char *text, int *x, int *y, nd_error *err);
/* "0,0-1,2; 3,0" (parentheses optional) -> ranges. */
int nd_parse_cores(const char *what, const char *text, nd_core_set *set, nd_error *err);
/* Name lookups for the enums; accept the lower- and upper-case spellings. */
int nd_parse_dtype(const char *what, const char *text, nd_dtype *out, nd_error *err);
int nd_parse_strategy(const char *what, const char *text, nd_strategy *out, nd_error *err);
int nd_parse_orientation(const char *what, const char *text, nd_orientation *out, nd_error *err);
int nd_parse_buffer(const char *what, const char *text, nd_buffer *out, nd_error *err);
int nd_parse_tile(const char *what, const char *text, int32_t *h, int32_t *w, nd_error *err);
/* "1536K", "2M", "1G" or plain bytes. */
int nd_parse_size(const char *what, const char *text, int64_t *out, nd_error *err);

/* ---------------------------------------------------------------- checked sizes */

/* Products and sums of sizes, checked: -1 stands for one that overflowed (or took a -1), so it poisons
 * whatever is computed from it and is refused once, where the result is used. */
static inline int64_t nd_size_mul(int64_t a, int64_t b)
{
    int64_t r;
    return a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) ? -1 : r;
}

static inline int64_t nd_size_add(int64_t a, int64_t b)
{
    int64_t r;
    return a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) ? -1 : r;
}

/* ---------------------------------------------------------------- an op's contract (opsig.c) */

/*
 * What an op requires of its operands' distributions, shared by the generator (each target, when
 * generating) and the runtime (each launch). indices: each operand's index notation ("ij", "..."),
 * which fixes ranks, equal axis sizes and numpy broadcasting; requires: ";"-separated relations the
 * template assumes beyond that, such as "same_paging(in,out)" (the same shape and page box).
 */
typedef struct nd_op_sig {
    const char *op;
    int noperands, noutputs;          /* the last noutputs operands are outputs */
    const char *const *operands;      /* names */
    const char *const *indices;
    const char *scalars;              /* non-NULL: the output's shape comes from axis scalars */
    const char *requires;             /* NULL or "" for none */
} nd_op_sig;

typedef struct nd_op_require {
    int relation;                     /* index into opsig.c's relations */
    int operand[2];
} nd_op_require;

/* "[4,6]": n dims in brackets, for messages. */
const char *nd_shape_text(char *buf, size_t len, const int64_t *d, int n);
/* d[i] is operand i's distribution. Errors name the op, the operands and the reason. */
int nd_op_check_shapes(const nd_op_sig *s, const nd_dist *const *d, nd_error *err);
/* One requirement "RELATION(a, b)" with a and b operand names. */
int nd_op_requires_parse(const char *text, const char *const *operands, int noperands, nd_op_require *out,
                         nd_error *err);

/* ---------------------------------------------------------------- launch scalars (scalars.c) */

/*
 * An op's launch scalars, as its spec declares them (`scalars = "eps: f32 in (0, 1], axes: axes(x)"`),
 * shared by the generator (the spec, a target's fixed values, templates' nda_scalar names) and the
 * runtime (every launch). Values travel as doubles; a declaration says what each must be.
 *
 * The types, one row each: name, what a value must be, and the default range (the type's own).
 * AXES and PERM are lists over an input's axes (distinct axes; a permutation of all of them); a list
 * takes the rest of the launch's values, so it is declared last and at most once.
 */
#define ND_SCALAR_TYPES(X)                                                                        \
    X(F32, "f32", "a finite float", -3.4028234663852886e38, 3.4028234663852886e38)               \
    X(F64, "f64", "a finite double", -1.7976931348623157e308, 1.7976931348623157e308)            \
    X(I32, "i32", "an integer of int32_t", -2147483648.0, 2147483647.0)                          \
    X(I64, "i64", "an integer of int64_t exact in a double", -9007199254740992.0, 9007199254740992.0) \
    X(BOOL, "bool", "0 or 1", 0.0, 1.0)                                                           \
    X(AXES, "axes", "distinct axes of the input", 0.0, 0.0)                                       \
    X(PERM, "perm", "a permutation of the input's axes", 0.0, 0.0)

typedef enum nd_scalar_type {
#define ND_SCALAR_ENUM(T, name, what, lo, hi) ND_SCALAR_##T,
    ND_SCALAR_TYPES(ND_SCALAR_ENUM)
#undef ND_SCALAR_ENUM
    ND_SCALAR_TYPE_COUNT
} nd_scalar_type;

enum { ND_MAX_SCALARS = 16, ND_SCALAR_NAME = 32 };

typedef struct nd_scalar_decl {
    char name[ND_SCALAR_NAME];   /* a C identifier */
    nd_scalar_type type;
    double lo, hi;               /* the range: the declared one, or the type's own */
    bool lo_open, hi_open;       /* ( or ], that is lo < v rather than lo <= v */
    char of[ND_SCALAR_NAME];     /* AXES and PERM: the input whose axes they are; else "" */
} nd_scalar_decl;

typedef struct nd_scalars {
    int n;
    nd_scalar_decl d[ND_MAX_SCALARS];
} nd_scalars;

/* "f32" for ND_SCALAR_F32; "?" outside the enum. */
const char *nd_scalar_type_name(nd_scalar_type t);
/*
 * Parses a declaration: items "NAME: TYPE [RANGE]" separated by commas, RANGE one of
 * "in [lo, hi]" (either bracket open or closed, inf allowed), "> lo", ">= lo", "< hi", "<= hi"; TYPE
 * a row of ND_SCALAR_TYPES, AXES and PERM written "axes(INPUT)" and "perm(INPUT)". Two shorthands:
 * "NAME" alone is an f64, and "axes(x)" / "perm(x)" alone is a list named axes / perm. NULL or ""
 * declares none. The canonical text (nd_scalars_text) parses back to the same declaration.
 */
int nd_scalars_parse(const char *text, nd_scalars *out, nd_error *err);
/* The canonical text, "eps: f32 in (0, inf), axes: axes(x)"; "" for none. */
void nd_scalars_text(const nd_scalars *s, char *buf, size_t len);
/* The declared names, comma-separated ("eps,axes"): what a launch gives kernels (nda_args). */
void nd_scalars_names(const nd_scalars *s, char *buf, size_t len);
/* The index of the list-typed scalar (AXES or PERM), or -1. */
int nd_scalars_list(const nd_scalars *s);
/* A launch's values against the declaration: their count (one per scalar, a list taking the rest:
 * at least one value), types and ranges. A list's values need the input's and output's shapes
 * (nd_scalars_check_list). Errors say the op, the scalar and the rule. */
int nd_scalars_check(const nd_scalars *s, const char *op, const double *v, int nv, nd_error *err);
/* One value of a named (not list) scalar: its type, as the kernel sees it, and its range. */
int nd_scalar_check_value(const nd_scalar_decl *d, const char *op, double v, nd_error *err);
/* A list's values against its input and the output (named out_name): distinct axes in [0, rank), all
 * of them for PERM; the output's shape is the input's permuted, or reduced over the axes (without or
 * with kept dims of 1). The runtime checks every launch with it, the generator every fixed list. */
int nd_scalars_check_list(const nd_scalar_decl *d, const char *op, const char *out_name, const nd_dist_spec *in,
                          const nd_dist_spec *out, const double *v, int nv, nd_error *err);

#ifdef __cplusplus
}
#endif
#endif
