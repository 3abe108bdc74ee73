/*
 * mesh.c - mesh-level shardings: their invariants, their mesh and einshard text, and the ND distribution
 * with copies that places one over a core list.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "dist_internal.h"

const char *nd_mesh_axis_name(const nd_sharding *sh, int axis, char *buf, size_t len)
{
    if (sh->axes[axis].name[0])
        snprintf(buf, len, "%s", sh->axes[axis].name);
    else
        snprintf(buf, len, "m%d", axis);
    return buf;
}

int64_t nd_sharding_devices(const nd_sharding *sh)
{
    int64_t n = 1;
    for (int i = 0; i < sh->naxes; ++i)
        if (!mul_ok(n, sh->axes[i].size, &n))
            return INT64_MAX;
    return n;
}

int64_t nd_sharding_ways(const nd_sharding *sh, int dim)
{
    int64_t n = 1;
    for (int k = 0; k < sh->nsplit[dim]; ++k)
        n *= sh->axes[sh->split[dim][k]].size;
    return n;
}

static int64_t product_of(const nd_sharding *sh, bool partial_only)
{
    int64_t n = 1;
    for (int i = 0; i < sh->naxes; ++i) {
        nd_mesh_kind k = sh->axes[i].kind;
        if (k == ND_MESH_PARTIAL || (!partial_only && k == ND_MESH_REPLICATE))
            n *= sh->axes[i].size;
    }
    return n;
}

int64_t nd_sharding_copies(const nd_sharding *sh) { return product_of(sh, false); }
int64_t nd_sharding_parts(const nd_sharding *sh) { return product_of(sh, true); }

/* The one reduce op of the Partial axes: parts from axes with different ops would combine into no single
 * op (DTensor resolves them axis by axis; ndgen's tensors hold one reduction), so that is refused. */
static int partial_reduce(const nd_sharding *sh, nd_reduce *out, nd_error *err)
{
    int first = -1;
    char a[ND_MESH_NAME + 8], b[ND_MESH_NAME + 8];
    *out = ND_REDUCE_SUM;
    for (int i = 0; i < sh->naxes; ++i) {
        if (sh->axes[i].kind != ND_MESH_PARTIAL)
            continue;
        if (first >= 0 && sh->axes[i].reduce != sh->axes[first].reduce)
            return nd_fail(err, "mesh axes %s and %s are Partial(%s) and Partial(%s): parts pending different "
                                "reductions cannot be held as one tensor; resolve one first",
                           nd_mesh_axis_name(sh, first, a, sizeof a), nd_mesh_axis_name(sh, i, b, sizeof b),
                           nd_reduce_name(sh->axes[first].reduce), nd_reduce_name(sh->axes[i].reduce));
        if (first < 0)
            first = i;
        *out = sh->axes[i].reduce;
    }
    return 0;
}

/* The axes of size > 1, in order: axes of size 1 place nothing, whatever their role. */
static int nonunit_axes(const nd_sharding *sh, int *pos)
{
    int n = 0;
    for (int i = 0; i < sh->naxes; ++i)
        pos[i] = sh->axes[i].size > 1 ? n++ : -1;
    return n;
}

static bool same_axis(const nd_mesh_axis *x, const nd_mesh_axis *y)
{
    return x->size == y->size && x->kind == y->kind && (x->kind != ND_MESH_SHARD || x->dim == y->dim) &&
           (x->kind != ND_MESH_PARTIAL || x->reduce == y->reduce);
}

/* Dim d's split over the axes of size > 1, as positions among them. */
static int nonunit_split(const nd_sharding *sh, const int *pos, int d, int *out)
{
    int n = 0;
    for (int k = 0; k < sh->nsplit[d]; ++k)
        if (pos[sh->split[d][k]] >= 0)
            out[n++] = pos[sh->split[d][k]];
    return n;
}

bool nd_sharding_equal(const nd_sharding *a, const nd_sharding *b)
{
    int pa[ND_MAX_MESH], pb[ND_MAX_MESH], sa[ND_MAX_MESH], sb[ND_MAX_MESH];
    if (a->rank != b->rank || nonunit_axes(a, pa) != nonunit_axes(b, pb))
        return false;
    for (int i = 0, j = 0; i < a->naxes; ++i) {
        if (pa[i] < 0)
            continue;
        while (pb[j] < 0)
            ++j;
        if (!same_axis(&a->axes[i], &b->axes[j++]))
            return false;
    }
    for (int d = 0; d < a->rank; ++d) {
        int n = nonunit_split(a, pa, d, sa);
        if (n != nonunit_split(b, pb, d, sb) || memcmp(sa, sb, (size_t)n * sizeof *sa))
            return false;
    }
    return true;
}

/* Each Shard axis appears once, in its own dim's split; no other axis appears. */
static bool splits_consistent(const nd_sharding *sh)
{
    int seen = 0, shard_axes = 0;
    for (int i = 0; i < sh->naxes; ++i)
        shard_axes += sh->axes[i].kind == ND_MESH_SHARD;
    for (int d = 0; d < sh->rank; ++d)
        for (int k = 0; k < sh->nsplit[d]; ++k) {
            int a = sh->split[d][k];
            if (a < 0 || a >= sh->naxes || sh->axes[a].kind != ND_MESH_SHARD || sh->axes[a].dim != d)
                return false;
            for (int j = 0; j < k; ++j)
                if (sh->split[d][j] == a)
                    return false;
            ++seen;
        }
    return seen == shard_axes;
}

int nd_sharding_check(const nd_sharding *sh, nd_error *err)
{
    int64_t devices = 1;
    if (sh->rank < 1 || sh->rank > ND_MAX_RANK || sh->naxes < 0 || sh->naxes > ND_MAX_MESH)
        return nd_fail(err, "sharding: rank %d and %d mesh axes; need rank 1..%d and 0..%d axes", sh->rank, sh->naxes,
                       ND_MAX_RANK, ND_MAX_MESH);
    for (int i = 0; i < sh->naxes; ++i)
        if (sh->axes[i].size < 1 || !mul_ok(devices, sh->axes[i].size, &devices) || devices > (1 << 30))
            return nd_fail(err, "sharding: mesh axis %d has size %lld; sizes are positive and the mesh at most 2^30 "
                                "devices", i, (long long)sh->axes[i].size);
    if (!splits_consistent(sh))
        return nd_fail(err, "sharding: the split of some dim does not match its Shard axes");
    return 0;
}

int nd_mesh_format(const nd_sharding *sh, char *buf, size_t len)
{
    int n = 0;
    char name[ND_MESH_NAME + 8];
    if (len)
        buf[0] = '\0'; /* a mesh of no axes prints as "" */
    for (int i = 0; i < sh->naxes; ++i)
        nd_appendf(buf, len, &n, "%s%s=%lld", i ? "," : "", nd_mesh_axis_name(sh, i, name, sizeof name),
                   (long long)sh->axes[i].size);
    return n;
}

/* ---------------------------------------------------------------- einshard text */

static bool name_taken(char names[][ND_MESH_NAME], int n, const char *name)
{
    for (int i = 0; i < n; ++i)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* Left-hand names: the dim's own, else its one mesh axis's, else a free letter. */
static void lhs_names(const nd_sharding *sh, char names[][ND_MESH_NAME])
{
    for (int d = 0; d < sh->rank; ++d) {
        const char *own = sh->dim_names[d];
        const char *axis = sh->nsplit[d] == 1 ? sh->axes[sh->split[d][0]].name : "";
        const char *pick = nd_einshard_name(own) && !name_taken(names, d, own) ? own
                           : nd_einshard_name(axis) && !name_taken(names, d, axis) ? axis : NULL;
        if (pick) {
            snprintf(names[d], ND_MESH_NAME, "%s", pick);
            continue;
        }
        for (char c = 'a'; c <= 'z'; ++c) {
            char letter[2] = {c, '\0'};
            bool later = false; /* a later dim's own name must stay free */
            for (int e = d + 1; e < sh->rank; ++e)
                later |= strcmp(sh->dim_names[e], letter) == 0;
            if (!later && !name_taken(names, d, letter)) {
                snprintf(names[d], ND_MESH_NAME, "%s", letter);
                break;
            }
        }
    }
}

static int einshard_expressible(const nd_sharding *sh, nd_error *err)
{
    char name[ND_MESH_NAME + 8];
    int elems = 0;
    for (int i = 0; i < sh->naxes; ++i)
        elems += sh->axes[i].kind == ND_MESH_SHARD || sh->axes[i].size > 1;
    for (int d = 0; d < sh->rank; ++d)
        elems += sh->nsplit[d] == 0;
    if (elems > ND_MAX_MESH)
        return nd_fail(err, "einshard would need %d mesh axes, more than %d", elems, ND_MAX_MESH);
    for (int i = 0; i < sh->naxes; ++i)
        if (sh->axes[i].kind == ND_MESH_PARTIAL && sh->axes[i].size > 1)
            return nd_fail(err, "mesh axis '%s' is Partial(%s); einshard has no pending reductions",
                           nd_mesh_axis_name(sh, i, name, sizeof name), nd_reduce_name(sh->axes[i].reduce));
    for (int d = 0; d < sh->rank; ++d)
        if (sh->nsplit[d] > 1)
            return nd_fail(err, "dim %d is split by %d mesh axes; einshard maps each tensor axis to one mesh axis", d,
                           sh->nsplit[d]);
    return 0;
}

int nd_einshard_format(const nd_sharding *sh, char *buf, size_t len, nd_error *err)
{
    char names[ND_MAX_RANK][ND_MESH_NAME];
    int n = 0;
    if (einshard_expressible(sh, err))
        return -1;
    memset(names, 0, sizeof names);
    lhs_names(sh, names);
    for (int d = 0; d < sh->rank; ++d)
        nd_appendf(buf, len, &n, "%s%s", d ? " " : "", names[d]);
    nd_appendf(buf, len, &n, " ->");
    for (int i = 0; i < sh->naxes; ++i) {
        const nd_mesh_axis *a = &sh->axes[i];
        if (a->kind == ND_MESH_SHARD && a->size == 1)
            nd_appendf(buf, len, &n, " %s", names[a->dim]);
        else if (a->kind == ND_MESH_SHARD)
            nd_appendf(buf, len, &n, " %s%lld", names[a->dim], (long long)a->size);
        else if (a->size > 1) /* a copy axis of size 1 holds one copy: nothing to write */
            nd_appendf(buf, len, &n, " %lld", (long long)a->size);
    }
    for (int d = 0; d < sh->rank; ++d) /* unsplit dims: a mesh axis of size 1 keeps every device's place */
        if (sh->nsplit[d] == 0)
            nd_appendf(buf, len, &n, " %s",
                          names[d]);
    return n;
}

/* ---------------------------------------------------------------- placement over a core list */

typedef struct mesh_walk {
    const nd_sharding *sh;
    int64_t stride[ND_MAX_MESH]; /* row-major over the mesh */
    int ncopy_axes;
    int copy_axes[ND_MAX_MESH];  /* Partial axes, then Replicate axes, each in mesh order */
    int64_t grid[ND_MAX_RANK];   /* shards along each dim */
} mesh_walk;

static void walk_init(mesh_walk *w, const nd_sharding *sh, const int64_t *grid)
{
    w->sh = sh;
    int64_t s = 1;
    for (int i = sh->naxes - 1; i >= 0; --i) {
        w->stride[i] = s;
        s *= sh->axes[i].size;
    }
    w->ncopy_axes = 0;
    for (int pass = 0; pass < 2; ++pass)
        for (int i = 0; i < sh->naxes; ++i)
            if (sh->axes[i].kind == (pass ? ND_MESH_REPLICATE : ND_MESH_PARTIAL))
                w->copy_axes[w->ncopy_axes++] = i;
    memcpy(w->grid, grid, sizeof w->grid);
}

/* The device (position in the core list the mesh is laid over) holding shard s of copy r. */
static int64_t walk_device(const mesh_walk *w, int64_t r, int64_t s)
{
    const nd_sharding *sh = w->sh;
    int64_t dev = 0;
    for (int k = w->ncopy_axes - 1; k >= 0; --k) {
        int a = w->copy_axes[k];
        dev += r % sh->axes[a].size * w->stride[a];
        r /= sh->axes[a].size;
    }
    for (int d = sh->rank - 1; d >= 0; --d) {
        int64_t q = s % w->grid[d];
        s /= w->grid[d];
        for (int k = sh->nsplit[d] - 1; k >= 0; --k) {
            int a = sh->split[d][k];
            dev += q % sh->axes[a].size * w->stride[a];
            q /= sh->axes[a].size;
        }
    }
    return dev;
}

/* Appends core c to the list as ranges: runs along x, and runs of equal span stacked into rectangles. */
static int append_core(nd_core_set *set, nd_core c, nd_error *err)
{
    nd_core_range *last = set->nranges ? &set->ranges[set->nranges - 1] : NULL;
    if (last && last->lo.y == last->hi.y && c.y == last->hi.y && c.x == last->hi.x + 1) {
        last->hi.x = c.x;
        return 0;
    }
    if (set->nranges == ND_MAX_RANGES)
        return nd_fail(err, "the mesh's core groups need more than %d core ranges; lay the mesh axes in the order of "
                            "the grid", ND_MAX_RANGES);
    set->ranges[set->nranges++] = (nd_core_range){c, c};
    return 0;
}

/* Merges consecutive single-row ranges of equal span on consecutive rows into rectangles. */
static void stack_rows(nd_core_set *set)
{
    int out = 0;
    for (int i = 0; i < set->nranges; ++i) {
        nd_core_range r = set->ranges[i], *prev = out ? &set->ranges[out - 1] : NULL;
        if (prev && prev->lo.x == r.lo.x && prev->hi.x == r.hi.x && r.lo.y == r.hi.y && r.lo.y == prev->hi.y + 1)
            prev->hi.y = r.lo.y;
        else
            set->ranges[out++] = r;
    }
    set->nranges = out;
}

static int build_core_list(const nd_sharding *sh, const int64_t *grid, const nd_core_set *devices, int64_t shards,
                           nd_core_set *out, nd_error *err)
{
    mesh_walk w;
    walk_init(&w, sh, grid);
    memset(out, 0, sizeof *out);
    out->orientation = ND_ROW_MAJOR;
    int64_t copies = nd_sharding_copies(sh);
    for (int64_t r = 0; r < copies; ++r)
        for (int64_t s = 0; s < shards; ++s)
            if (append_core(out, nd_core_set_at(devices, walk_device(&w, r, s)), err))
                return -1;
    stack_rows(out);
    return 0;
}

static const char *dim_label(const nd_sharding *sh, int d, char *buf, size_t len)
{
    if (sh->dim_names[d][0])
        snprintf(buf, len, "axis '%s' (dim %d)", sh->dim_names[d], d);
    else
        snprintf(buf, len, "dim %d", d);
    return buf;
}

void nd_chunk_range(int64_t n, int64_t k, int64_t q, int64_t *lo, int64_t *hi)
{
    int64_t c = ceil_div(n, k);
    *lo = c * q < n ? c * q : n;
    *hi = *lo + c < n ? *lo + c : n;
}

/* The size of piece i of n split k ways (nd_chunk_range). */
static int64_t chunk(int64_t n, int64_t k, int64_t i)
{
    int64_t lo, hi;
    nd_chunk_range(n, k, i, &lo, &hi);
    return hi - lo;
}

/* Piece j (major first) of n split by axes a[0..m) one after another, each chunking the piece the ones
 * before it left, as DTensor applies several Shard(d) of one dim. */
static int64_t nested_piece(const nd_sharding *sh, const int8_t *a, int m, int64_t n, int64_t j)
{
    int64_t below = 1;
    for (int i = 1; i < m; ++i)
        below *= sh->axes[a[i]].size;
    for (int i = 0; i < m; ++i) {
        int64_t k = sh->axes[a[i]].size;
        n = chunk(n, k, j / below % k);
        below /= i + 1 < m ? sh->axes[a[i + 1]].size : 1;
    }
    return n;
}

/* An ND distribution holds equal shards: one chunking of the whole dim. When several mesh axes split a
 * dim unevenly, chunking piece by piece (DTensor's rule) may give other sizes, so other devices would hold
 * the elements than the notation means: refused, with both lists. */
static int check_nested(const nd_sharding *sh, int d, int64_t n, nd_error *err)
{
    int64_t k = nd_sharding_ways(sh, d);
    char label[64], nested[256] = "", flat[256] = "";
    bool same = true;
    for (int64_t j = 0; j < k; ++j) {
        int64_t a = nested_piece(sh, sh->split[d], sh->nsplit[d], n, j), b = chunk(n, k, j);
        same &= a == b;
        if (j < 16) {
            snprintf(nested + strlen(nested), sizeof nested - strlen(nested), "%s%lld", j ? "," : "", (long long)a);
            snprintf(flat + strlen(flat), sizeof flat - strlen(flat), "%s%lld", j ? "," : "", (long long)b);
        }
    }
    if (same)
        return 0;
    return nd_fail(err, "%s: size %lld split by %d mesh axes one after another gives pieces %s%s (DTensor's nested "
                        "chunking), but an ND distribution holds equal shards, %s%s; refused rather than place elements "
                        "on other devices; make the size divide evenly", dim_label(sh, d, label, sizeof label),
                   (long long)n, sh->nsplit[d], nested, k > 16 ? ",..." : "", flat, k > 16 ? ",..." : "");
}

/* Whether dim d's mesh axes split it in mesh order (DTensor's Shard placements; a _StridedShard's does not). */
static bool in_mesh_order(const nd_sharding *sh, int d)
{
    for (int k = 1; k < sh->nsplit[d]; ++k)
        if (sh->split[d][k] < sh->split[d][k - 1])
            return false;
    return true;
}

/* Whether a split that does not divide its dim is refused, and why (the system's rule, or the user's). */
static const char *uneven_refusal(const nd_sharding *sh, nd_split_rule rule)
{
    if (rule == ND_SPLIT_EVEN)
        return "";
    if (rule == ND_SPLIT_UNEVEN)
        return NULL;
    if (sh->notation == ND_NOTATION_PSPEC)
        return "; JAX requires a PartitionSpec to divide every dim it shards (give --uneven, or uneven = true in a "
               "spec, for a short last shard)";
    if (sh->notation == ND_NOTATION_EINSHARD)
        return "; einshard builds a JAX NamedSharding, which requires every sharded dim to divide (give --uneven, or "
               "uneven = true in a spec, for a short last shard)";
    return NULL;
}

int nd_sharding_check_splits(const nd_sharding *sh, const int64_t *shape, nd_split_rule rule, nd_error *err)
{
    char label[64];
    const char *refusal = uneven_refusal(sh, rule);
    for (int d = 0; d < sh->rank; ++d) {
        int64_t n = shape[d], k = nd_sharding_ways(sh, d);
        if (n < 1 || n % k == 0)
            continue;
        if (refusal)
            return nd_failc(err, ND_EREFUSED, "%s: size %lld does not divide into %lld shards%s",
                            dim_label(sh, d, label, sizeof label), (long long)n, (long long)k, refusal);
        if (sh->notation == ND_NOTATION_PLACEMENTS && !in_mesh_order(sh, d)) /* a _StridedShard */
            return nd_failc(err, ND_EREFUSED, "%s: size %lld does not divide into %lld shards; DTensor's "
                            "_StridedShard of an uneven dim interleaves chunks of other sizes than one chunking, "
                            "and an ND distribution holds equal shards: make the size divide evenly",
                            dim_label(sh, d, label, sizeof label), (long long)n, (long long)k);
        if (sh->nsplit[d] > 1 && check_nested(sh, d, n, err))
            return -1;
    }
    return 0;
}

/* Shard extent of dim d: ceil(n / ways), piece 0's of nd_chunk_range (the ND distribution deals the
 * pieces as equal shards), which must hold whole pages. */
static int shard_extent(const nd_sharding *sh, const nd_dist_spec *s, int d, int64_t *out, nd_error *err)
{
    char label[64];
    int64_t n = s->shape[d], k = nd_sharding_ways(sh, d), c = ceil_div(n, k), page = 0;
    if (s->page_kind == ND_PAGE_BOX)
        page = s->page[d];
    else if (s->page_kind == ND_PAGE_TILE && s->rank >= 2 && d >= s->rank - 2)
        page = d == s->rank - 1 ? s->tile_w : s->tile_h;
    if (page > 1 && c % page && c < n)
        return nd_fail(err, "%s: size %lld split %lld ways gives shards of %lld, not a multiple of the %lld-element "
                            "page", dim_label(sh, d, label, sizeof label), (long long)n, (long long)k, (long long)c,
                       (long long)page);
    *out = c;
    return 0;
}

static int devices_of(const nd_dist_spec *base, int gx, int gy, nd_core_set *set, nd_error *err)
{
    *set = base->cores;
    if (gx < 1 || gy < 1 || gx > ND_MAX_GRID || gy > ND_MAX_GRID)
        return nd_fail(err, "grid %dx%d: need 1 to %d cores in each direction", gx, gy, ND_MAX_GRID);
    if (set->nranges == 0)
        set->ranges[set->nranges++] = (nd_core_range){{0, 0}, {gx - 1, gy - 1}};
    return 0;
}

int nd_sharding_dist(const nd_sharding *sh, const nd_dist_spec *base, int gx, int gy, nd_split_rule split,
                     nd_dist *out, nd_error *err)
{
    nd_dist_spec s = *base;
    nd_core_set devices;
    char mesh[512];
    if (nd_sharding_check(sh, err) || devices_of(base, gx, gy, &devices, err))
        return -1;
    if (sh->rank != s.rank)
        return nd_fail(err, "sharding: it is for rank %d, but the shape has rank %d", sh->rank, s.rank);
    if (s.buffer != ND_L1 || s.interleaved)
        return nd_fail(err, "sharding: a mesh lives on L1 cores; it cannot place an interleaved or DRAM tensor");
    int64_t ndev = nd_core_set_count(&devices), shards = 1, grid[ND_MAX_RANK];
    if (ndev != nd_sharding_devices(sh)) {
        nd_mesh_format(sh, mesh, sizeof mesh);
        return nd_fail(err, "mesh %s: it holds %lld devices, but the core list has %lld cores", mesh,
                       (long long)nd_sharding_devices(sh), (long long)ndev);
    }
    if (nd_sharding_check_splits(sh, s.shape, split, err))
        return -1;
    for (int d = 0; d < s.rank; ++d) {
        if (s.shape[d] < 1 || shard_extent(sh, &s, d, &s.shard[d], err))
            return s.shape[d] < 1 ? nd_fail(err, "shape: dim %d is %lld; sizes are positive", d, (long long)s.shape[d])
                                  : -1;
        grid[d] = ceil_div(s.shape[d], s.shard[d]);
        shards *= grid[d];
    }
    s.shard_rank = s.rank;
    s.strategy = ND_ROUND_ROBIN;
    s.replicas = (int32_t)nd_sharding_copies(sh);
    s.parts = (int32_t)nd_sharding_parts(sh);
    if (partial_reduce(sh, &s.reduce, err))
        return -1;
    if (build_core_list(sh, grid, &devices, shards, &s.cores, err))
        return -1;
    return nd_dist_make(&s, gx, gy, out, err);
}
