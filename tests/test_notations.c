/*
 * test_notations.c - the three mesh notations checked against the systems that define them.
 *
 * A table of cases (einshard expressions, JAX PartitionSpecs, PyTorch DTensor placements), each with a
 * tensor shape and a mesh (or, for einshard, a device count). For every case the test works out, for
 * every device, the half-open range [begin, end) of the global index it holds along each tensor dim,
 * which devices hold partial values of the same part, and the pending reduce op, twice:
 *
 *   - by a small reference model in this file (ref_*), which reads the notation itself and applies
 *     the system's own rule, written from that system's sources (cited at each rule below). It never
 *     calls ndgen. Some cases also carry the ranges written out by hand (`want`), which check the
 *     reference model itself;
 *   - by ndgen, through its public API, the path `ndgen show` takes: nd_sharding_from_flags (which
 *     calls nd_sharding_parse and nd_sharding_dist) on a D x 1 grid, then the per-device shard of the
 *     resulting nd_dist (nd_dist_core_index, nd_layout_core_shard, nd_dist_shard_origin).
 *
 * A system that refuses an input (JAX: a split that does not divide; einshard: devices that do not
 * factor) gives the expectation "must refuse": ndgen must then fail too. Round trips parse one
 * notation, print another with nd_pspec_format / nd_placements_format / nd_einshard_format, and parse
 * that back: the printed text, read by the target system's rule, must place every element where the
 * source did, or ndgen must refuse the translation.
 *
 * Every case is run and reported (PASS / FAIL with expected and got); the exit status is 1 if any
 * failed. Cases that disagree for a reason already filed in issue 14 say so in their note.
 *
 * Rule sources (read from each system's own code):
 *   [JAX-P]   jax/_src/partition_spec.py (jax-ml/jax): P(*partitions, unreduced=, reduced=,
 *             unreduced_kind=); _check: unreduced and reduced disjoint, neither overlaps a partition,
 *             unreduced_kind only with unreduced; UnreducedKind is sum, max, min; unreduced defaults to
 *             sum; a partition is None, a name or a tuple of names (an empty tuple is None).
 *   [JAX-NS]  jax/_src/named_sharding.py, named_sharding_to_xla_hlo_sharding: a dim's mesh axes in
 *             tuple order form its tiling (first named is major); mesh axes not named replicate;
 *             unreduced axes are UNREDUCED (pending), reduced ones are replicated; size-1 axes drop.
 *             A mesh axis may appear once (DuplicateSpecError); a spec longer than the rank is an error
 *             (P._check_compatible_wrt_shape).
 *   [JAX-DIV] jax/_src/sharding.py, _common_shard_shape: "implies that array axis d is partitioned p
 *             times, but the dimension size is n ... should evenly divide the shape" (IndivisibleError).
 *   [JAX-MESH] jax.sharding.Mesh over np.array(devices).reshape(shape): device v has the row-major
 *             mesh coordinate of v.
 *   [DT-CHUNK] torch/distributed/tensor/placement_types.py, Shard.local_shard_size_and_offset:
 *             torch.chunk's rule on the current local size L over k: L % k == 0 gives L/k at
 *             (L/k)*r; else c = ceil(L/k), start c*r, size max(0, min(L, c*(r+1)) - c*r).
 *   [DT-ORDER] torch/distributed/tensor/_utils.py, compute_local_shape_and_global_offset: placements
 *             are applied in mesh-dim order, each Shard(d) chunking the CURRENT local extent of d and
 *             advancing its global offset; docstring: (Shard(1), Shard(1)) of [2,5] on 2x2 gives
 *             widths 2,1,1,1.
 *   [DT-REPR] placement_types.py: repr Shard(dim=0), Replicate(), Partial(sum); Partial(reduce_op)
 *             with reduce_op one of sum, avg, product, max, min (default sum). _utils.py
 *             _explicit_order_placements: one placement per mesh dim. Negative dims count from the end.
 *   [DT-MESH] DeviceMesh(torch.arange(n).view(shape)) / init_device_mesh: rank v at the row-major
 *             coordinate of v.
 *   [DT-STRIDE] placement_types.py, _StridedShard(dim, split_factor), repr "_StridedShard(dim=0, sf=2)":
 *             _split_tensor cuts the current local extent into size * split_factor chunks (torch.chunk,
 *             empty ones appended) and coordinate i takes chunks i + j * size, j < split_factor,
 *             concatenated; later placements chunk that ([DT-ORDER]).
 *   [JAX-LIST] jax/_src/partition_spec.py, _canonicalize_partition: a list entry becomes a tuple (one
 *             element: that name; empty: None). Code names the class jax.sharding.PartitionSpec or P.
 *   [PY-QUAL] Python: a class pasted with its module path (jax.sharding.PartitionSpec,
 *             torch.distributed.tensor.Shard) is the same class.
 *   [EIN]     yixiaoer/einshard src/einshard/einshard.py, sharding(): every right-hand element is a
 *             mesh axis, in order; the dims '...' stands for get axes (name, 1, not proportional) at
 *             the place of the right-hand '...'; fixed sizes multiply to F, proportional bases to B;
 *             D % F == 0, (D/F) % B == 0, r = ((D/F)/B)^(1/#stars) must be an integer; mesh size of an
 *             element = number * (r if starred); each left dim d gets PartitionSpec entry a<i> of its
 *             right-hand element; the result is a JAX NamedSharding, so [JAX-NS], [JAX-DIV] and
 *             [JAX-MESH] apply (mesh_utils.create_device_mesh needs prod(mesh) == D).
 *             src/einshard/parser.py: right element = [name][integer][*] (integer without leading 0),
 *             at least one part present, or '...'; left element = name or '...'.
 *             The root is taken in integers (REFERENCE.md: the upstream float root fails for 64 devices
 *             over three stars).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd_dist.h"

enum { MAXDEV = 64, NAME = 24 };
enum notation { EIN, JAX, DT };
static const char *const notation_name[3] = {"einshard", "pspec", "placements"};

/* ---------------------------------------------------------------- placements: what each device holds */

typedef struct placement {
    int rank, ndev;
    int64_t shape[ND_MAX_RANK];
    int64_t b[MAXDEV][ND_MAX_RANK], e[MAXDEV][ND_MAX_RANK];
    int part[MAXDEV];   /* which partial part a device's values belong to (canonical labels) */
    int nparts;
    int reduce;         /* nd_reduce of the pending reduction when nparts > 1, else -1 */
    int naxes;
    int64_t mesh[ND_MAX_MESH]; /* mesh sizes in order (einshard: checked against ndgen's) */
    bool not_block;     /* the reference: a device holds indices of a dim that are not one run */
} placement;

static bool dev_empty(const placement *p, int v)
{
    for (int i = 0; i < p->rank; ++i)
        if (p->e[v][i] <= p->b[v][i])
            return true;
    return false;
}

/* Relabels parts by first appearance, so two placements compare by grouping, not by label. */
static void canon_parts(placement *p)
{
    int map[MAXDEV * 4], next = 0;
    for (int i = 0; i < MAXDEV * 4; ++i)
        map[i] = -1;
    for (int v = 0; v < p->ndev; ++v) {
        int l = p->part[v];
        if (l < 0 || l >= MAXDEV * 4)
            l = 0;
        if (map[l] < 0)
            map[l] = next++;
        p->part[v] = map[l];
    }
    p->nparts = next;
    if (next <= 1)
        p->reduce = -1;
}

static void describe_dev(const placement *p, int v, char *buf, size_t len)
{
    int n = 0;
    if (dev_empty(p, v)) {
        snprintf(buf, len, "-");
        return;
    }
    for (int i = 0; i < p->rank && n < (int)len; ++i)
        n += snprintf(buf + n, len - (size_t)n, "%s%lld-%lld", i ? "," : "", (long long)p->b[v][i],
                      (long long)p->e[v][i]);
}

static void describe(const placement *p, char *buf, size_t len)
{
    int n = 0;
    char dev[256];
    for (int v = 0; v < p->ndev && n < (int)len; ++v) {
        describe_dev(p, v, dev, sizeof dev);
        n += snprintf(buf + n, len - (size_t)n, "%s%s", v ? "|" : "", dev);
    }
    if (p->nparts > 1 && n < (int)len) {
        n += snprintf(buf + n, len - (size_t)n, " parts");
        for (int v = 0; v < p->ndev && n < (int)len; ++v)
            n += snprintf(buf + n, len - (size_t)n, "%s%d", v ? "," : "=", p->part[v]);
        if (n < (int)len)
            snprintf(buf + n, len - (size_t)n, " %s", nd_reduce_name((nd_reduce)p->reduce));
    }
}

/* The first difference, or "" when a and b place alike. */
static bool same_placement(const placement *a, const placement *b, char *why, size_t len)
{
    why[0] = '\0';
    if (a->ndev != b->ndev || a->rank != b->rank) {
        snprintf(why, len, "%d devices rank %d against %d devices rank %d", a->ndev, a->rank, b->ndev, b->rank);
        return false;
    }
    for (int v = 0; v < a->ndev; ++v) {
        bool ea = dev_empty(a, v), eb = dev_empty(b, v);
        bool same = ea == eb;
        for (int i = 0; same && !ea && i < a->rank; ++i)
            same = a->b[v][i] == b->b[v][i] && a->e[v][i] == b->e[v][i];
        if (!same) {
            char x[256], y[256];
            describe_dev(a, v, x, sizeof x);
            describe_dev(b, v, y, sizeof y);
            snprintf(why, len, "device %d holds %.200s, expected %.200s", v, y, x);
            return false;
        }
    }
    for (int v = 0; v < a->ndev; ++v)
        if (a->part[v] != b->part[v]) {
            snprintf(why, len, "device %d is in part %d, expected part %d (%d parts, expected %d)", v, b->part[v],
                     a->part[v], b->nparts, a->nparts);
            return false;
        }
    if (a->nparts > 1 && a->reduce != b->reduce) {
        snprintf(why, len, "pending %s, expected %s", b->reduce < 0 ? "nothing" : nd_reduce_name((nd_reduce)b->reduce),
                 nd_reduce_name((nd_reduce)a->reduce));
        return false;
    }
    return true;
}

/* "0-2,0-3|4-6,0-3|-": per device, per dim begin-end; "-" for a device holding nothing. */
static int parse_want(const char *text, const placement *shape_of, placement *p)
{
    *p = *shape_of;
    int v = 0;
    const char *s = text;
    while (*s && v < MAXDEV) {
        if (*s == '-') {
            for (int i = 0; i < p->rank; ++i)
                p->b[v][i] = p->e[v][i] = 0;
            ++s;
        } else {
            for (int i = 0; i < p->rank; ++i) {
                char *end;
                p->b[v][i] = strtoll(s, &end, 10);
                if (*end != '-')
                    return -1;
                p->e[v][i] = strtoll(end + 1, &end, 10);
                s = end;
                if (i + 1 < p->rank && *s++ != ',')
                    return -1;
            }
        }
        ++v;
        if (*s == '|')
            ++s;
        else if (*s)
            return -1;
    }
    return v == p->ndev ? 0 : -1;
}

/* ---------------------------------------------------------------- the reference model */

enum { K_REPLICATE, K_SHARD, K_PARTIAL };
enum rule { RULE_FLAT_DIVISIBLE, RULE_NESTED_CHUNK };

typedef struct ref_axis {
    char name[NAME];
    int64_t size;
    int kind, dim, reduce;
    int64_t split_factor; /* a _StridedShard's; 0 for Shard */
} ref_axis;

typedef struct ref_sharding {
    int rank, naxes;
    ref_axis ax[ND_MAX_MESH];
    int nsplit[ND_MAX_RANK];
    int split[ND_MAX_RANK][ND_MAX_MESH]; /* major first (JAX tuple order; DTensor mesh order) */
    enum rule rule;
} ref_sharding;

static int ref_fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ref_fail(char *err, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* Copies a name, cut to NAME - 1 characters. */
static void copy_name(char *dst, const char *src)
{
    size_t n = strlen(src);
    n = n < NAME - 1 ? n : NAME - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        ++p;
    return p;
}

static bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_word_char(char c) { return is_name_char(c) || (c >= '0' && c <= '9'); }

/* [EIN] parser.py: a name character is '_' or a Unicode letter (category L). Bytes of the one at p, or
 * 0: ASCII letters, and in UTF-8 the Latin-1 and Latin Extended letters (not x and /), basic Greek and
 * Cyrillic, and CJK ideographs: the letters the cases use, from the Unicode tables. */
static int ref_letter_len(const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    if (u[0] < 0x80)
        return is_name_char((char)u[0]) ? 1 : 0;
    if ((u[0] & 0xE0) == 0xC0 && (u[1] & 0xC0) == 0x80) {
        int c = (u[0] & 0x1F) << 6 | (u[1] & 0x3F);
        bool latin = c >= 0xC0 && c <= 0x24F && c != 0xD7 && c != 0xF7;
        bool greek = (c >= 0x391 && c <= 0x3A9) || (c >= 0x3B1 && c <= 0x3C9);
        return latin || greek || (c >= 0x410 && c <= 0x44F) ? 2 : 0;
    }
    if ((u[0] & 0xF0) == 0xE0 && (u[1] & 0xC0) == 0x80 && (u[2] & 0xC0) == 0x80) {
        int c = (u[0] & 0x0F) << 12 | (u[1] & 0x3F) << 6 | (u[2] & 0x3F);
        return c >= 0x4E00 && c <= 0x9FFF ? 3 : 0;
    }
    return 0;
}

/* Mesh text "dp=2,tp=4", "2,4" or "2x4"; unnamed axes are called m0, m1, ... */
static int ref_mesh(const char *text, ref_sharding *rs, char *err, size_t len)
{
    memset(rs, 0, sizeof *rs);
    const char *p = skip_ws(text);
    while (*p) {
        ref_axis *a = &rs->ax[rs->naxes];
        int n = 0;
        while (is_word_char(*p) && n < NAME - 1 && !(n == 0 && *p >= '0' && *p <= '9'))
            a->name[n++] = *p++;
        a->name[n] = '\0';
        if (n) {
            if (*p++ != '=')
                return ref_fail(err, len, "mesh %s: expected '='", text);
        } else {
            snprintf(a->name, NAME, "m%d", rs->naxes);
        }
        char *end;
        a->size = strtoll(p, &end, 10);
        if (end == p || a->size < 1)
            return ref_fail(err, len, "mesh %s: bad size", text);
        p = skip_ws(end);
        a->kind = K_REPLICATE;
        a->reduce = ND_REDUCE_SUM;
        if (++rs->naxes == ND_MAX_MESH)
            return ref_fail(err, len, "mesh %s: too many axes", text);
        if (*p == ',' || *p == 'x')
            p = skip_ws(p + 1);
        else if (*p)
            return ref_fail(err, len, "mesh %s: expected ','", text);
    }
    return 0;
}

static int64_t ref_devices(const ref_sharding *rs)
{
    int64_t n = 1;
    for (int i = 0; i < rs->naxes; ++i)
        n *= rs->ax[i].size;
    return n;
}

static int ref_axis_named(const ref_sharding *rs, const char *name)
{
    for (int i = 0; i < rs->naxes; ++i)
        if (strcmp(rs->ax[i].name, name) == 0)
            return i;
    return -1;
}

/* A quoted name 'x' or "x". */
static const char *ref_quoted(const char *p, char *out)
{
    char q = *p;
    if (q != '\'' && q != '"')
        return NULL;
    int n = 0;
    for (++p; *p && *p != q; ++p)
        if (n < NAME - 1)
            out[n++] = *p;
    out[n] = '\0';
    return *p == q ? p + 1 : NULL;
}

static bool ref_word(const char **pp, const char *word)
{
    size_t n = strlen(word);
    if (strncmp(*pp, word, n) || is_word_char((*pp)[n]))
        return false;
    *pp = skip_ws(*pp + n);
    return true;
}

/* {'a', 'b'} or set(): the axes of the set get kind `kind`; used[] marks every axis named so far. */
static const char *ref_axis_set(const char *p, ref_sharding *rs, int kind, bool *used, char *err, size_t len)
{
    if (ref_word(&p, "set") || ref_word(&p, "frozenset")) {
        if (*p != '(' || *(p = skip_ws(p + 1)) != ')')
            return ref_fail(err, len, "%s: bad set", p), NULL;
        return skip_ws(p + 1);
    }
    if (*p != '{')
        return ref_fail(err, len, "%s: expected a set", p), NULL;
    p = skip_ws(p + 1);
    while (*p != '}') {
        char name[NAME];
        if (!(p = ref_quoted(p, name)))
            return ref_fail(err, len, "%s: expected a quoted axis", name), NULL;
        int a = ref_axis_named(rs, name);
        if (a < 0)
            return ref_fail(err, len, "axis '%s' is not in the mesh", name), NULL;
        if (used[a]) /* [JAX-P] _check: unreduced, reduced and partitions are disjoint */
            return ref_fail(err, len, "axis '%s' used twice", name), NULL;
        used[a] = true;
        rs->ax[a].kind = kind;
        p = skip_ws(p);
        if (*p == ',')
            p = skip_ws(p + 1);
        else if (*p != '}')
            return ref_fail(err, len, "%s: expected ',' or '}'", p), NULL;
    }
    return skip_ws(p + 1);
}

/* [JAX-P], [JAX-NS]: a PartitionSpec over the mesh in *rs. */
/* [PY-QUAL]: past "a.b." before a class name. */
static const char *ref_unqualify(const char *p)
{
    const char *q = p, *after = p;
    while (is_name_char(*q)) {
        while (is_word_char(*q))
            ++q;
        if (*q != '.')
            break;
        after = ++q;
    }
    return after;
}

static int ref_pspec(const char *text, int rank, ref_sharding *rs, char *err, size_t len)
{
    bool used[ND_MAX_MESH] = {false}, unreduced = false, kind_given = false;
    int kind = ND_REDUCE_SUM, dim = 0, set_kind;
    const char *p = ref_unqualify(skip_ws(text));
    bool wrapped = ref_word(&p, "P") || ref_word(&p, "PartitionSpec");
    if (wrapped) {
        if (*p != '(')
            return ref_fail(err, len, "%s: expected '('", text);
        p = skip_ws(p + 1);
    }
    rs->rule = RULE_FLAT_DIVISIBLE;
    rs->rank = rank;
    while (*p && *p != ')') {
        if (ref_word(&p, "unreduced_kind")) {
            if (*p != '=')
                return ref_fail(err, len, "%s: expected '='", text);
            p = skip_ws(p + 1);
            if (ref_word(&p, "UnreducedKind") && *p == '.')
                p = skip_ws(p + 1);
            kind = ref_word(&p, "sum") ? ND_REDUCE_SUM : ref_word(&p, "max") ? ND_REDUCE_MAX
                   : ref_word(&p, "min") ? ND_REDUCE_MIN : -1;
            if (kind < 0) /* UnreducedKind has sum, max and min only */
                return ref_fail(err, len, "%s: unknown unreduced_kind", text);
            kind_given = true;
        } else if ((set_kind = ref_word(&p, "unreduced") ? K_PARTIAL
                               : ref_word(&p, "reduced") ? K_REPLICATE : -1) >= 0) {
            bool is_unreduced = set_kind == K_PARTIAL;
            if (*p != '=')
                return ref_fail(err, len, "%s: expected '='", text);
            p = skip_ws(p + 1);
            if (!(p = ref_axis_set(p, rs, is_unreduced ? K_PARTIAL : K_REPLICATE, used, err, len)))
                return -1;
            unreduced |= is_unreduced;
        } else {
            if (dim == rank) /* [JAX-NS] P._check_compatible_wrt_shape */
                return ref_fail(err, len, "%s: longer than the rank", text);
            if (ref_word(&p, "None")) {
                ++dim;
            } else {
                char close = *p == '(' ? ')' : *p == '[' ? ']' : 0; /* [JAX-LIST] */
                bool tuple = close != 0;
                if (tuple)
                    p = skip_ws(p + 1);
                do {
                    char name[NAME];
                    if (tuple && *p == close)
                        break;
                    if (!(p = ref_quoted(p, name)))
                        return ref_fail(err, len, "%s: expected a quoted axis", text);
                    int a = ref_axis_named(rs, name);
                    if (a < 0)
                        return ref_fail(err, len, "axis '%s' is not in the mesh", name);
                    if (used[a]) /* DuplicateSpecError */
                        return ref_fail(err, len, "axis '%s' used twice", name);
                    used[a] = true;
                    rs->ax[a].kind = K_SHARD;
                    rs->ax[a].dim = dim;
                    rs->split[dim][rs->nsplit[dim]++] = a; /* tuple order: first is major */
                    p = skip_ws(p);
                    if (tuple && *p == ',')
                        p = skip_ws(p + 1);
                } while (tuple && *p != close);
                if (tuple)
                    p = skip_ws(p + 1);
                ++dim;
            }
        }
        if (*p == ',')
            p = skip_ws(p + 1);
        else if (*p && *p != ')')
            return ref_fail(err, len, "%s: expected ','", text);
    }
    if (wrapped && *p != ')')
        return ref_fail(err, len, "%s: expected ')'", text);
    if (kind_given && !unreduced)
        return ref_fail(err, len, "%s: unreduced_kind without unreduced", text);
    for (int i = 0; i < rs->naxes; ++i)
        if (rs->ax[i].kind == K_PARTIAL)
            rs->ax[i].reduce = kind;
    return 0;
}

/* [DT-REPR]: placements, one per mesh dim of *rs, in a list [..] or tuple (..). */
static int ref_placements(const char *text, int rank, ref_sharding *rs, char *err, size_t len)
{
    static const char *const ops[] = {"sum", "avg", "max", "min", "product"};
    static const int op_ids[] = {ND_REDUCE_SUM, ND_REDUCE_AVG, ND_REDUCE_MAX, ND_REDUCE_MIN, ND_REDUCE_PRODUCT};
    const char *p = skip_ws(text);
    char close = *p == '[' ? ']' : *p == '(' ? ')' : 0;
    int m = 0;
    rs->rule = RULE_NESTED_CHUNK;
    rs->rank = rank;
    if (close)
        p = skip_ws(p + 1);
    while (*p && *p != close) {
        if (m == rs->naxes)
            return ref_fail(err, len, "%s: more placements than mesh dims", text);
        ref_axis *a = &rs->ax[m];
        p = ref_unqualify(p);
        a->split_factor = 0;
        bool strided = ref_word(&p, "_StridedShard");
        if (strided || ref_word(&p, "Shard")) {
            if (*p != '(')
                return ref_fail(err, len, "%s: expected '('", text);
            p = skip_ws(p + 1);
            if (ref_word(&p, "dim")) {
                if (*p != '=')
                    return ref_fail(err, len, "%s: expected '='", text);
                p = skip_ws(p + 1);
            }
            char *end;
            long d = strtol(p, &end, 10);
            if (end == p)
                return ref_fail(err, len, "%s: expected a dim", text);
            if (d < 0)
                d += rank;
            if (d < 0 || d >= rank)
                return ref_fail(err, len, "%s: dim out of range", text);
            p = skip_ws(end);
            if (strided) { /* [DT-STRIDE]: ", sf=k", ", split_factor=k" or ", k" */
                if (*p != ',')
                    return ref_fail(err, len, "%s: expected the split factor", text);
                p = skip_ws(p + 1);
                if (ref_word(&p, "sf") || ref_word(&p, "split_factor")) {
                    if (*p != '=')
                        return ref_fail(err, len, "%s: expected '='", text);
                    p = skip_ws(p + 1);
                }
                a->split_factor = strtol(p, &end, 10);
                if (end == p || a->split_factor < 1)
                    return ref_fail(err, len, "%s: expected a split factor", text);
                p = skip_ws(end);
            }
            a->kind = K_SHARD;
            a->dim = (int)d;
            rs->split[d][rs->nsplit[d]++] = m; /* mesh-dim order [DT-ORDER] */
        } else if (ref_word(&p, "Replicate")) {
            if (*p != '(' || *(p = skip_ws(p + 1)) != ')')
                return ref_fail(err, len, "%s: expected '()'", text);
            a->kind = K_REPLICATE;
        } else if (ref_word(&p, "Partial")) {
            if (*p != '(')
                return ref_fail(err, len, "%s: expected '('", text);
            p = skip_ws(p + 1);
            a->kind = K_PARTIAL;
            a->reduce = ND_REDUCE_SUM;
            if (ref_word(&p, "reduce_op")) {
                if (*p != '=')
                    return ref_fail(err, len, "%s: expected '='", text);
                p = skip_ws(p + 1);
            }
            if (*p != ')') {
                char name[NAME];
                const char *q = ref_quoted(p, name);
                if (q) {
                    p = q;
                } else {
                    int n = 0;
                    while (is_name_char(*p) && n < NAME - 1)
                        name[n++] = *p++;
                    name[n] = '\0';
                }
                int found = -1;
                for (int i = 0; i < 5; ++i)
                    if (strcmp(name, ops[i]) == 0)
                        found = op_ids[i];
                if (found < 0)
                    return ref_fail(err, len, "unknown reduce op '%s'", name);
                a->reduce = found;
                p = skip_ws(p);
            }
        } else {
            return ref_fail(err, len, "%s: expected Shard, Replicate or Partial", text);
        }
        if (*p != ')')
            return ref_fail(err, len, "%s: expected ')'", text);
        p = skip_ws(p + 1);
        ++m;
        if (*p == ',')
            p = skip_ws(p + 1);
        else if (*p && *p != close)
            return ref_fail(err, len, "%s: expected ','", text);
    }
    if (m != rs->naxes) /* _explicit_order_placements: one placement per mesh dim */
        return ref_fail(err, len, "%s: not one placement per mesh dim", text);
    return 0;
}

/* [EIN]: the mesh an einshard expression builds on `devices` devices, and its NamedSharding. */
static int ref_einshard(const char *expr, int rank, int64_t devices, ref_sharding *rs, char *err, size_t len)
{
    char left[ND_MAX_MESH][NAME], tok[64];
    int nleft = 0, lell = -1, rell = -1, nright = 0;
    struct {
        char name[NAME];
        int64_t num;
        bool star, dots;
    } right[ND_MAX_MESH];
    const char *arrow = strstr(expr, "->");
    memset(rs, 0, sizeof *rs);
    if (!arrow)
        return ref_fail(err, len, "%s: no '->'", expr);
    /* left side: names and '...' */
    for (const char *p = skip_ws(expr); p < arrow; p = skip_ws(p)) {
        int n = 0;
        while (p < arrow && *p != ' ' && n < 63)
            tok[n++] = *p++;
        tok[n] = '\0';
        if (nleft == ND_MAX_MESH)
            return ref_fail(err, len, "%s: too many axes", expr);
        if (strcmp(tok, "...") == 0) {
            if (lell >= 0)
                return ref_fail(err, len, "%s: two '...' on the left", expr);
            lell = nleft;
        } else {
            for (int i = 0, k; i < n; i += k)
                if (!(k = ref_letter_len(tok + i)))
                    return ref_fail(err, len, "%s: bad left-hand name", expr);
        }
        copy_name(left[nleft++], tok);
    }
    /* right side: [name][integer][*] or '...' */
    for (const char *p = skip_ws(arrow + 2); *p; p = skip_ws(p)) {
        int n = 0;
        while (*p && *p != ' ' && n < 63)
            tok[n++] = *p++;
        tok[n] = '\0';
        if (nright == ND_MAX_MESH)
            return ref_fail(err, len, "%s: too many axes", expr);
        memset(&right[nright], 0, sizeof right[nright]);
        if (strcmp(tok, "...") == 0) {
            if (rell >= 0)
                return ref_fail(err, len, "%s: two '...' on the right", expr);
            rell = nright;
            right[nright++].dots = true;
            continue;
        }
        const char *t = tok;
        int k = 0;
        for (int b; (b = ref_letter_len(t)) > 0 && k + b < NAME; t += b, k += b)
            memcpy(right[nright].name + k, t, (size_t)b);
        bool has_num = *t >= '1' && *t <= '9';
        right[nright].num = 1;
        if (has_num)
            right[nright].num = strtoll(t, (char **)&t, 10);
        right[nright].star = *t == '*';
        t += right[nright].star;
        if (*t || (!k && !has_num && !right[nright].star))
            return ref_fail(err, len, "%s: bad right-hand element", expr);
        ++nright;
    }
    if ((lell >= 0) != (rell >= 0))
        return ref_fail(err, len, "%s: '...' on one side only", expr);
    int elided = lell >= 0 ? rank - (nleft - 1) : 0;
    if ((lell < 0 && nleft != rank) || elided < 0)
        return ref_fail(err, len, "%s: rank mismatch", expr);
    /* the mesh: '...' becomes `elided` axes of size 1, named ?0, ?1, ... */
    int64_t fixed = 1, base = 1;
    int stars = 0;
    rs->rank = rank;
    rs->rule = RULE_FLAT_DIVISIBLE;
    for (int i = 0; i < nright; ++i) {
        if (right[i].dots) {
            for (int j = 0; j < elided; ++j) {
                ref_axis *a = &rs->ax[rs->naxes++];
                snprintf(a->name, NAME, "?%d", j);
                a->size = 1;
            }
            continue;
        }
        ref_axis *a = &rs->ax[rs->naxes++];
        copy_name(a->name, right[i].name);
        a->size = right[i].num * (right[i].star ? -1 : 1); /* negative: proportional, resolved below */
        if (right[i].star) {
            base *= right[i].num;
            ++stars;
        } else {
            fixed *= right[i].num;
        }
    }
    if (stars) {
        if (devices % fixed || (devices / fixed) % base)
            return ref_fail(err, len, "%s: devices do not factor", expr);
        int64_t full = devices / fixed / base, r = 1;
        while (1) { /* integer root: the r with r^stars == full */
            int64_t pw = 1;
            for (int s = 0; s < stars; ++s)
                pw *= r;
            if (pw == full)
                break;
            if (pw > full)
                return ref_fail(err, len, "%s: devices do not factor (no integer root)", expr);
            ++r;
        }
        for (int i = 0; i < rs->naxes; ++i)
            if (rs->ax[i].size < 0)
                rs->ax[i].size = -rs->ax[i].size * r;
    }
    if (ref_devices(rs) != devices) /* mesh_utils.create_device_mesh */
        return ref_fail(err, len, "%s: the mesh does not hold the devices", expr);
    /* each left dim -> the right element of the same name (the last one, as a dict keeps it) */
    for (int d = 0, l = 0; l < nleft; ++l) {
        if (l == lell) {
            for (int j = 0; j < elided; ++j, ++d) {
                char q[NAME];
                snprintf(q, NAME, "?%d", j);
                int a = ref_axis_named(rs, q);
                rs->ax[a].kind = K_SHARD;
                rs->ax[a].dim = d;
                rs->split[d][rs->nsplit[d]++] = a;
            }
            continue;
        }
        int a = -1;
        for (int i = 0; i < rs->naxes; ++i)
            if (strcmp(rs->ax[i].name, left[l]) == 0)
                a = i;
        if (a < 0)
            return ref_fail(err, len, "left-hand axis '%s' has no mesh axis", left[l]);
        if (rs->ax[a].kind == K_SHARD) /* two dims on one mesh axis: DuplicateSpecError */
            return ref_fail(err, len, "mesh axis '%s' used twice", left[l]);
        rs->ax[a].kind = K_SHARD;
        rs->ax[a].dim = d;
        rs->split[d][rs->nsplit[d]++] = a;
        ++d;
    }
    return 0;
}

/* Whether a _StridedShard splits dim d. */
static bool strided_dim(const ref_sharding *rs, int d)
{
    for (int i = 0; i < rs->naxes; ++i)
        if (rs->ax[i].kind == K_SHARD && rs->ax[i].dim == d && rs->ax[i].split_factor)
            return true;
    return false;
}

/* [DT-CHUNK]: piece r of a local extent L chunked k ways: its size and its offset within L. */
static void chunk_piece(int64_t L, int64_t k, int64_t r, int64_t *size, int64_t *off)
{
    if (L % k == 0) {
        *size = L / k;
        *off = L / k * r;
        return;
    }
    int64_t c = (L + k - 1) / k, start = c * r;
    if (start > L) {
        *size = 0;
        *off = L;
        return;
    }
    *size = (L < start + c ? L : start + c) - start;
    *off = start;
}

enum { MAXIDX = 4096 }; /* the largest dim a _StridedShard case may have */

/* [DT-ORDER], [DT-STRIDE]: the global indices of dim d that the device at coord holds, as DTensor applies
 * the placements in mesh order, into idx (in the order the device holds them); how many. */
static int64_t ref_dtensor_indices(const ref_sharding *rs, int d, int64_t extent, const int64_t *coord, int64_t *idx)
{
    static int64_t cut[MAXIDX];
    int64_t n = extent;
    for (int64_t i = 0; i < n; ++i)
        idx[i] = i;
    for (int i = 0; i < rs->naxes; ++i) {
        const ref_axis *a = &rs->ax[i];
        if (a->kind != K_SHARD || a->dim != d)
            continue;
        int64_t ways = a->size * (a->split_factor ? a->split_factor : 1), m = 0, size, off;
        for (int64_t j = 0; j < (a->split_factor ? a->split_factor : 1); ++j) {
            chunk_piece(n, ways, coord[i] + j * a->size, &size, &off);
            memcpy(cut + m, idx + off, (size_t)size * sizeof *cut);
            m += size;
        }
        memcpy(idx, cut, (size_t)m * sizeof *idx);
        n = m;
    }
    return n;
}

/* Every device's ranges by the system's rule; -1 with err when the system refuses the shape. */
static int ref_place(const ref_sharding *rs, const int64_t *shape, placement *p, char *err, size_t len)
{
    memset(p, 0, sizeof *p);
    p->rank = rs->rank;
    p->ndev = (int)ref_devices(rs);
    p->naxes = rs->naxes;
    p->reduce = -1;
    memcpy(p->shape, shape, sizeof p->shape);
    for (int i = 0; i < rs->naxes; ++i)
        p->mesh[i] = rs->ax[i].size;
    if (p->ndev > MAXDEV)
        return ref_fail(err, len, "more devices than the test holds");
    if (rs->rule == RULE_FLAT_DIVISIBLE)
        for (int d = 0; d < rs->rank; ++d) { /* [JAX-DIV] */
            int64_t k = 1;
            for (int j = 0; j < rs->nsplit[d]; ++j)
                k *= rs->ax[rs->split[d][j]].size;
            if (shape[d] % k) {
                char what[96];
                snprintf(what, sizeof what, "dim %d of size %lld is partitioned %lld times", d, (long long)shape[d],
                         (long long)k);
                return ref_fail(err, len, "JAX: %s, which does not divide", what);
            }
        }
    for (int v = 0; v < p->ndev; ++v) {
        int64_t coord[ND_MAX_MESH], rest = v;
        for (int i = rs->naxes - 1; i >= 0; --i) { /* [JAX-MESH], [DT-MESH]: row-major */
            coord[i] = rest % rs->ax[i].size;
            rest /= rs->ax[i].size;
        }
        for (int d = 0; d < rs->rank; ++d) {
            if (rs->rule == RULE_FLAT_DIVISIBLE) { /* [JAX-NS]: one tiling, first axis major */
                int64_t k = 1, q = 0;
                for (int j = 0; j < rs->nsplit[d]; ++j) {
                    const ref_axis *a = &rs->ax[rs->split[d][j]];
                    q = q * a->size + coord[rs->split[d][j]];
                    k *= a->size;
                }
                p->b[v][d] = shape[d] / k * q;
                p->e[v][d] = shape[d] / k * (q + 1);
            } else if (strided_dim(rs, d)) { /* [DT-STRIDE]: index lists; a range when they are one run */
                static int64_t idx[MAXIDX];
                if (shape[d] > MAXIDX)
                    return ref_fail(err, len, "a _StridedShard dim larger than the test holds");
                int64_t n = ref_dtensor_indices(rs, d, shape[d], coord, idx);
                for (int64_t j = 1; j < n; ++j)
                    p->not_block |= idx[j] != idx[0] + j;
                p->b[v][d] = n ? idx[0] : 0;
                p->e[v][d] = n ? idx[0] + n : 0;
            } else { /* [DT-ORDER]: each Shard(d), in mesh order, chunks the current local extent */
                int64_t L = shape[d], begin = 0;
                for (int i = 0; i < rs->naxes; ++i) {
                    if (rs->ax[i].kind != K_SHARD || rs->ax[i].dim != d)
                        continue;
                    int64_t size, off;
                    chunk_piece(L, rs->ax[i].size, coord[i], &size, &off);
                    begin += off;
                    L = size;
                }
                p->b[v][d] = begin;
                p->e[v][d] = begin + L;
            }
        }
        int part = 0; /* the coordinates on the Partial axes, in mesh order */
        for (int i = 0; i < rs->naxes; ++i)
            if (rs->ax[i].kind == K_PARTIAL && rs->ax[i].size > 1) {
                part = part * (int)rs->ax[i].size + (int)coord[i];
                p->reduce = rs->ax[i].reduce;
            }
        p->part[v] = part;
    }
    canon_parts(p);
    return 0;
}

/* The reference for any notation: mesh text for pspec and placements, devices for einshard. */
static int ref_run(enum notation n, const char *text, const char *mesh, int64_t devices, const int64_t *shape,
                   int rank, placement *p, char *err, size_t len)
{
    ref_sharding rs;
    if (n == EIN) {
        if (ref_einshard(text, rank, devices, &rs, err, len))
            return -1;
    } else {
        if (ref_mesh(mesh, &rs, err, len))
            return -1;
        if ((n == JAX ? ref_pspec : ref_placements)(text, rank, &rs, err, len))
            return -1;
    }
    return ref_place(&rs, shape, p, err, len);
}

/* ---------------------------------------------------------------- ndgen's answer */

/* ndgen's sharding and distribution, the way `ndgen show` gets them, on a devices x 1 grid. */
static int ndgen_run(enum notation n, const char *text, const char *mesh, int64_t devices, const char *shape,
                     nd_sharding *sh, nd_dist *d, nd_error *err)
{
    nd_dist_flags f;
    char grid[32];
    memset(&f, 0, sizeof f);
    snprintf(grid, sizeof grid, "%lldx1", (long long)devices);
    f.shape = shape;
    f.grid = grid;
    if (n == EIN)
        f.einshard = text;
    else if (n == JAX)
        f.pspec = text;
    else
        f.placements = text;
    if (n != EIN)
        f.mesh = mesh;
    return nd_sharding_from_flags(&f, sh, d, err);
}

/* Per device: its shard of the distribution (device v is core (v,0)), its part, the reduce op. */
static void ndgen_place(const nd_sharding *sh, const nd_dist *d, int ndev, placement *p)
{
    memset(p, 0, sizeof *p);
    p->rank = d->spec.rank;
    p->ndev = ndev;
    p->reduce = -1;
    memcpy(p->shape, d->spec.shape, sizeof p->shape);
    p->naxes = sh->naxes;
    for (int i = 0; i < sh->naxes; ++i)
        p->mesh[i] = sh->axes[i].size;
    int64_t ncores = d->layout.ncores, per = d->spec.replicas / (d->spec.parts ? d->spec.parts : 1);
    for (int v = 0; v < ndev; ++v) {
        int64_t li = nd_dist_core_index(d, (nd_core){v, 0}), c[ND_MAX_RANK];
        if (li < 0 || nd_layout_core_shards(&d->layout, li % ncores) < 1)
            continue; /* no shard: holds nothing (ranges stay empty) */
        int64_t s = nd_layout_core_shard(&d->layout, li % ncores, 0);
        nd_dist_shard_origin(d, s, c);
        for (int i = 0; i < p->rank; ++i) {
            p->b[v][i] = c[i] * d->spec.page[i];
            p->e[v][i] = p->b[v][i] + d->spec.shard[i];
            if (p->e[v][i] > p->shape[i])
                p->e[v][i] = p->shape[i];
        }
        p->part[v] = (int)(li / ncores / (per ? per : 1));
    }
    if (d->spec.parts > 1)
        p->reduce = (int)d->spec.reduce;
    canon_parts(p);
}

/* ---------------------------------------------------------------- the table */

typedef struct tcase {
    enum notation n;
    const char *text;
    const char *shape;
    const char *mesh;    /* pspec, placements */
    int64_t devices;     /* einshard */
    const char *want;    /* NULL, or the ranges by hand: "b-e,b-e|..." per device; "!" = must refuse */
    const char *note;    /* why it is here; "known (x)" for a disagreement filed in issue 14 */
} tcase;

/* Cases the system places with pieces of unequal sizes (DTensor's nested uneven chunking): ndgen's model
 * holds equal shards, so it must refuse them. Their note starts with "equal shards only:". */
static bool equal_shards_only(const tcase *c) { return strncmp(c->note, "equal shards only:", 18) == 0; }

static const tcase cases[] = {
    /* ------------------------------------------------------------ JAX PartitionSpec */
    {JAX, "P('dp', None)", "8,6", "dp=2,tp=4", 0, "0-4,0-6|0-4,0-6|0-4,0-6|0-4,0-6|4-8,0-6|4-8,0-6|4-8,0-6|4-8,0-6",
     "tp not named: replicated"},
    {JAX, "P(None, 'tp')", "8,8", "dp=2,tp=4", 0, NULL, "dp not named: replicated"},
    {JAX, "P('dp', 'tp')", "4,8", "dp=2,tp=4", 0, NULL, "both axes"},
    {JAX, "P('tp', 'dp')", "8,4", "dp=2,tp=4", 0, NULL, "axes across"},
    {JAX, "P(('dp', 'tp'), None)", "16,3", "dp=2,tp=4", 0,
     "0-2,0-3|2-4,0-3|4-6,0-3|6-8,0-3|8-10,0-3|10-12,0-3|12-14,0-3|14-16,0-3", "tuple, mesh order: dp major"},
    {JAX, "P(('tp', 'dp'), None)", "16,3", "dp=2,tp=4", 0,
     "0-2,0-3|4-6,0-3|8-10,0-3|12-14,0-3|2-4,0-3|6-8,0-3|10-12,0-3|14-16,0-3", "tuple, reversed: tp major"},
    {JAX, "P(('x', 'y'))", "12", "x=2,y=3", 0, "0-2|2-4|4-6|6-8|8-10|10-12", "rank 1, x major"},
    {JAX, "P(('y', 'x'))", "12", "x=2,y=3", 0, "0-2|4-6|8-10|2-4|6-8|10-12", "rank 1, y major"},
    {JAX, "P(('z', 'x'), 'y')", "8,4", "x=2,y=2,z=2", 0, NULL, "3-D mesh, tuple against mesh order"},
    {JAX, "P(None, ('y', 'x'))", "2,8", "x=2,y=2,z=2", 0, NULL, "z unused: replicated"},
    {JAX, "P(None, ('x', 'y'), None)", "2,16,3", "x=4,y=2", 0, NULL, "rank 3, middle dim"},
    {JAX, "P(('dp',), None)", "8,2", "dp=2,tp=4", 0, NULL, "one-name tuple"},
    {JAX, "P()", "5,7", "dp=2,tp=4", 0, NULL, "fully replicated"},
    {JAX, "P('dp')", "6,5", "dp=2,tp=4", 0, NULL, "short spec: trailing dims None"},
    {JAX, "P(None, None, 'tp')", "2,3,8", "dp=2,tp=4", 0, NULL, "rank 3"},
    {JAX, "P('c', None, 'a', 'b')", "4,3,2,6", "a=2,b=2,c=2", 0, NULL, "rank 4"},
    {JAX, "P('a')", "8", "a=4", 0, "0-2|2-4|4-6|6-8", "rank 1"},
    {JAX, "P('dp', 'tp')", "3,16", "dp=1,tp=8", 0, NULL, "a size-1 axis splits nothing"},
    {JAX, "P('y', 'x')", "9,4", "x=2,y=3", 0, NULL, "odd sizes that divide"},
    {JAX, "P(\"dp\", None)", "4,4", "dp=2,tp=4", 0, NULL, "double quotes"},
    {JAX, "P('dp', None, unreduced={'tp'})", "8,4", "dp=2,tp=4", 0, NULL, "pending sum over tp"},
    {JAX, "P('dp', None, unreduced={'tp'}, unreduced_kind=sum)", "8,4", "dp=2,tp=4", 0, NULL,
     "JAX's own repr of an unreduced spec"},
    {JAX, "P(None, 'tp', unreduced={'dp'}, unreduced_kind=max)", "4,8", "dp=2,tp=4", 0, NULL,
     "pending max (UnreducedKind.max)"},
    {JAX, "P('pp', unreduced={'dp', 'tp'})", "4,6", "dp=2,tp=2,pp=2", 0, NULL, "two unreduced axes: 4 parts"},
    {JAX, "P('dp', reduced={'tp'})", "8,4", "dp=2,tp=4", 0, NULL, "known (c): reduced = replicated"},
    {JAX, "P(None, 'dp', reduced={'tp'})", "3,4", "dp=2,tp=4", 0, NULL, "known (c): reduced = replicated"},
    {JAX, "P('dp', None, unreduced={'tp'}, reduced={'sp'})", "4,4", "dp=2,tp=2,sp=2", 0, NULL,
     "known (c): both sets"},
    {JAX, "P('a')", "10", "a=4", 0, "!", "known (a): 10 over 4 does not divide"},
    {JAX, "P(None, 'tp')", "8,6", "dp=2,tp=4", 0, "!", "known (a): 6 over 4 does not divide"},
    {JAX, "P(('dp', 'tp'))", "12", "dp=2,tp=4", 0, "!", "known (a): 12 over 8 does not divide"},
    {JAX, "P('y', 'x')", "7,4", "x=2,y=3", 0, "!", "known (a): 7 over 3 does not divide"},
    {JAX, "P('dp', 'dp')", "4,4", "dp=2,tp=4", 0, "!", "DuplicateSpecError"},
    {JAX, "P('dp', unreduced={'dp'})", "4,4", "dp=2,tp=4", 0, "!", "partitions overlap unreduced"},
    {JAX, "P('dp', unreduced={'tp'}, reduced={'tp'})", "4,4", "dp=2,tp=4", 0, "!", "unreduced overlaps reduced"},
    {JAX, "P('dp', None, None)", "4,4", "dp=2,tp=4", 0, "!", "longer than the rank"},
    {JAX, "P('sp')", "4,4", "dp=2,tp=4", 0, "!", "axis not in the mesh"},
    {JAX, "P('dp', unreduced_kind=max)", "4,4", "dp=2,tp=4", 0, "!", "unreduced_kind without unreduced"},

    /* ------------------------------------------------------------ DTensor placements */
    {DT, "[Shard(0), Replicate()]", "8,6", "2,4", 0, NULL, "Replicate on mesh dim 1"},
    {DT, "[Replicate(), Shard(1)]", "6,8", "2,4", 0, NULL, "Replicate on mesh dim 0"},
    {DT, "[Shard(0), Shard(1)]", "4,8", "2,4", 0, NULL, "both mesh dims"},
    {DT, "[Shard(1), Shard(0)]", "8,4", "2,4", 0, NULL, "mesh dims across"},
    {DT, "[Shard(1), Shard(1)]", "2,5", "2,2", 0, "0-2,0-2|0-2,2-3|0-2,3-4|0-2,4-5",
     "equal shards only: docstring of compute_local_shape_and_global_offset: widths 2,1,1,1"},
    {DT, "[Shard(0), Shard(0)]", "13", "2,3", 0, "0-3|3-6|6-7|7-9|9-11|11-13", "equal shards only: nested: 13 over 2x3 is 3,3,1,2,2,2"},
    {DT, "[Shard(0), Shard(0)]", "12", "2,3", 0, "0-2|2-4|4-6|6-8|8-10|10-12", "nested, even"},
    {DT, "[Shard(0), Shard(0)]", "10", "3,2", 0, "0-2|2-4|4-6|6-8|8-9|9-10", "equal shards only: nested: 10 -> 4,4,2 -> 2,2,2,2,1,1"},
    {DT, "[Shard(0), Shard(0)]", "4", "2,3", 0, "0-1|1-2|-|2-3|3-4|-", "equal shards only: nested: 4 -> 2,2 -> 1,1,0,1,1,0"},
    {DT, "[Shard(0), Shard(1), Shard(0)]", "8,4", "2,2,2", 0, NULL, "dim 0 by mesh dims 0 and 2"},
    {DT, "[Shard(0), Shard(1), Shard(0)]", "7,4", "2,2,2", 0, NULL, "nested 7 -> 4,3 -> 2,2,2,1 (= one chunking)"},
    {DT, "[Shard(0)]", "13", "6", 0, "0-3|3-6|6-9|9-12|12-13|-", "torch.chunk: 3,3,3,3,1,0"},
    {DT, "[Shard(0)]", "10", "4", 0, "0-3|3-6|6-9|9-10", "torch.chunk: 3,3,3,1"},
    {DT, "[Shard(0)]", "2", "4", 0, "0-1|1-2|-|-", "empty trailing chunks"},
    {DT, "[Shard(1), Shard(0)]", "5,7", "2,3", 0, NULL, "uneven on two dims, one mesh dim each"},
    {DT, "[Replicate(), Replicate()]", "5,5", "2,4", 0, NULL, "fully replicated"},
    {DT, "[Shard(-1), Replicate()]", "4,6", "2,4", 0, NULL, "negative dim"},
    {DT, "[Shard(2)]", "2,3,8", "4", 0, NULL, "rank 3"},
    {DT, "[Shard(3), Shard(0)]", "4,1,1,6", "2,2", 0, NULL, "rank 4"},
    {DT, "[Shard(0), Partial(sum)]", "8,4", "2,4", 0, NULL, "pending sum"},
    {DT, "[Shard(0), Partial()]", "8,4", "2,4", 0, NULL, "Partial() is sum"},
    {DT, "[Partial(max), Shard(1)]", "4,8", "2,4", 0, NULL, "pending max"},
    {DT, "[Shard(0), Partial(reduce_op='avg')]", "8,4", "2,4", 0, NULL, "constructor form, avg"},
    {DT, "[Shard(0), Partial(reduce_op=\"min\")]", "4,2", "2,2", 0, NULL, "double quotes, min"},
    {DT, "[Partial(product), Replicate()]", "3,3", "2,4", 0, NULL, "pending product"},
    {DT, "[Partial(sum), Partial(sum)]", "2,2", "2,4", 0, NULL, "two Partial mesh dims: 8 parts"},
    {DT, "(Shard(dim=0), Replicate())", "8,6", "2,4", 0, NULL, "printed form: tuple, Shard(dim=0)"},
    {DT, "(Shard(dim=1),)", "3,8", "4", 0, NULL, "printed one-tuple with trailing comma"},
    {DT, "[Shard(0), Replicate()]", "8,6", "dp=2,tp=4", 0, NULL, "named mesh (init_device_mesh names)"},
    {DT, "[Shard(0)]", "4,4", "2,4", 0, "!", "one placement per mesh dim"},
    {DT, "[Shard(2), Replicate()]", "4,4", "2,4", 0, "!", "dim out of range"},
    {DT, "[Shard(0), Partial(mean)]", "4,4", "2,4", 0, "!", "no reduce op 'mean'"},

    /* ------------------------------------------------------------ einshard */
    {JAX, "jax.sharding.PartitionSpec('dp', None)", "8,6", "dp=2,tp=4", 0, NULL, "qualified, as code names it"},
    {JAX, "jax.P(('tp', 'dp'))", "16", "dp=2,tp=4", 0, NULL, "jax.P, qualified"},
    {JAX, "P(['tp', 'dp'], None)", "16,3", "dp=2,tp=4", 0,
     "0-2,0-3|4-6,0-3|8-10,0-3|12-14,0-3|2-4,0-3|6-8,0-3|10-12,0-3|14-16,0-3", "a list is a tuple"},
    {JAX, "P(['dp'], [])", "8,6", "dp=2,tp=4", 0, NULL, "one-name list; empty list is None"},
    {DT, "[_StridedShard(dim=0, sf=2), Shard(0)]", "8,8", "dp=2,tp=2", 0, "0-2,0-8|4-6,0-8|2-4,0-8|6-8,0-8",
     "DTensor's docstring: FSDP2 over tensor parallelism, tp major"},
    {DT, "[_StridedShard(0, split_factor=4), Shard(0)]", "16,2", "dp=2,tp=4", 0, NULL, "constructor form, tp of 4"},
    {DT, "[torch.distributed.tensor.placement_types._StridedShard(dim=1, sf=2), torch.distributed.tensor.Shard(1)]",
     "4,8", "2,2", 0, NULL, "qualified names"},
    {DT, "[Shard(1), _StridedShard(dim=0, sf=2), Shard(0)]", "8,4", "x=2,y=2,z=2", 0, NULL, "3-D mesh"},
    {DT, "[Shard(0), _StridedShard(0, 2), Shard(0)]", "16", "x=2,y=2,z=2", 0, NULL, "an earlier Shard stays major"},
    {DT, "[_StridedShard(dim=0, sf=3), Shard(0)]", "12,2", "2,2", 0, NULL,
     "split factor 3 against a tp of 2: pieces that are not one run"},
    {DT, "[_StridedShard(dim=0, sf=2), Shard(0)]", "10,2", "2,2", 0, NULL,
     "10 over 4: DTensor gives device 3 rows 5 and 9, not one run"},
    {DT, "[_StridedShard(dim=0, sf=2), Shard(0)]", "6,2", "2,2", 0, NULL,
     "equal shards only: 6 over 4 strided is refused by ndgen's rule, though DTensor's pieces are blocks here"},
    {EIN, "x y -> x y*", "128,256", NULL, 8, NULL, "README: y split 8 ways"},
    {EIN, "y z -> y* z", "256,64", NULL, 8, NULL, "README: y split 8 ways"},
    {EIN, "a b -> * a* b*", "4,4", NULL, 8, NULL, "README: mesh (2,2,2)"},
    {EIN, "a b -> a2 b4", "8,8", NULL, 8, NULL, "fixed sizes"},
    {EIN, "a b -> a2* b*", "8,8", NULL, 8, NULL, "proportional with a base: (4,2)"},
    {EIN, "a b c -> a* b* c*", "8,8,8", NULL, 64, NULL, "integer root: 4,4,4"},
    {EIN, "a b -> a* 2 b", "8,6", NULL, 8, NULL, "replication axis in the middle"},
    {EIN, "a b -> b* a", "6,8", NULL, 4, NULL, "right-hand order against left"},
    {EIN, "a -> 2 a*", "8", NULL, 8, "0-2|2-4|4-6|6-8|0-2|2-4|4-6|6-8", "rank 1, two replicas"},
    {EIN, "a b -> a3 b*", "9,8", NULL, 6, NULL, "fixed 3 and a star"},
    {EIN, "a b c d -> a b2* c d2", "2,4,6,8", NULL, 8, NULL, "rank 4"},
    {EIN, "batch d_model -> batch* d_model", "8,16", NULL, 4, NULL, "names with '_'"},
    {EIN, "... -> * ...", "8,128", NULL, 8, NULL, "known (b): mesh (8,1,1)"},
    {EIN, "a ... -> a* ...", "8,3,5", NULL, 4, NULL, "known (b): mesh (4,1,1)"},
    {EIN, "b ... -> b2 ...", "4,6,10", NULL, 2, NULL, "known (b): REFERENCE example, mesh (2,1,1)"},
    {EIN, "a ... d -> d* ... a 2", "4,3,5,8", NULL, 8, NULL, "known (b): mesh (4,1,1,1,2)"},
    {EIN, "f m -> f* m", "14336,4096", NULL, 8, NULL, "einshard tutorial Llama weight (issue 14 item 3)"},
    {EIN, "a b -> a a2 b*", "8,8", NULL, 8, NULL, "a repeated name: the last splits, the first replicates"},
    {EIN, "a b -> a2 b* a", "8,8", NULL, 8, NULL, "a repeated name: the split moves to the last"},
    {EIN, "a b -> a b x2*", "8,8", NULL, 8, NULL, "a name the left side lacks is a replication axis"},
    {EIN, "α β -> α* β", "8,8", NULL, 8, NULL, "Greek letters (Unicode category L)"},
    {EIN, "батч d_модель -> батч* d_модель", "8,16", NULL, 4, NULL, "Cyrillic and '_' mixed"},
    {EIN, "批 -> 批2 *", "8", NULL, 8, NULL, "a CJK ideograph"},
    {EIN, "a b -> a→ b*", "8,8", NULL, 8, "!", "an arrow is no letter"},
    {EIN, "a×b -> a×b*", "8", NULL, 8, "!", "a multiplication sign is no letter"},
    {EIN, "a -> a*", "13", NULL, 6, "!", "einshard builds a JAX NamedSharding: 13 over 6 does not divide"},
    {EIN, "a b -> a* b", "10,3", NULL, 4, "!", "einshard builds a JAX NamedSharding: 10 over 4 does not divide"},
    {EIN, "a b -> * a b*", "4,8", NULL, 8, "!", "8 over two stars has no integer root"},
    {EIN, "a b -> a2 b2", "4,4", NULL, 8, "!", "mesh of 4 on 8 devices"},
    {EIN, "a b -> a3 b*", "9,8", NULL, 8, "!", "3 does not divide 8"},
};

/* ---------------------------------------------------------------- round trips */

typedef struct trip {
    enum notation from;
    const char *text, *shape, *mesh;
    int64_t devices;
    enum notation to;
    int expect; /* 1: a faithful translation exists and must be given; 0: none exists, must refuse */
    const char *note;
} trip;

static const trip trips[] = {
    {JAX, "P('dp', None)", "8,6", "dp=2,tp=4", 0, DT, 1, NULL},
    {JAX, "P(None, 'tp', 'dp')", "2,8,4", "dp=2,tp=4", 0, EIN, 1, NULL},
    {JAX, "P(('dp', 'tp'))", "16", "dp=2,tp=4", 0, DT, 1, "even: nested = flat"},
    {JAX, "P('dp', None, unreduced={'tp'})", "8,4", "dp=2,tp=4", 0, DT, 1, NULL},
    {JAX, "P('dp', None, unreduced={'tp'})", "8,4", "dp=2,tp=4", 0, EIN, 0, "einshard has no pending sum"},
    {JAX, "P('dp', reduced={'tp'})", "8,4", "dp=2,tp=4", 0, DT, 1, "known (c)"},
    {DT, "[Shard(0), Partial(max)]", "8,4", "2,4", 0, JAX, 1, "UnreducedKind.max exists"},
    {DT, "[Shard(0), Partial(avg)]", "8,4", "2,4", 0, JAX, 0, "UnreducedKind has no avg"},
    {DT, "[Shard(0), Replicate()]", "13,4", "4,2", 0, JAX, 0, "known (a): JAX refuses 13 over 4"},
    {DT, "[Shard(1), Shard(0)]", "8,4", "2,4", 0, EIN, 1, NULL},
    {DT, "(Shard(dim=0), Shard(dim=0))", "12", "2,3", 0, JAX, 1, "even nested = tuple"},
    {DT, "[Shard(0), Shard(0)]", "12", "2,3", 0, EIN, 0, "einshard gives a dim one mesh axis"},
    {JAX, "P(('tp', 'dp'))", "16", "dp=2,tp=4", 0, DT, 1, "_StridedShard(dim=0, sf=4), Shard(0)"},
    {DT, "[_StridedShard(dim=0, sf=2), Shard(0)]", "8,8", "dp=2,tp=2", 0, JAX, 1, "P(('tp', 'dp'), None)"},
    {JAX, "P(('z', 'x'), 'y')", "8,4", "x=2,y=2,z=2", 0, DT, 1, "_StridedShard on x"},
    {EIN, "a b -> * a* b*", "4,4", NULL, 8, JAX, 1, NULL},
    {EIN, "a b -> * a* b*", "4,4", NULL, 8, DT, 1, NULL},
    {EIN, "a ... -> a* ...", "8,3,5", NULL, 4, DT, 1, NULL},
    {EIN, "b ... -> b2 ...", "4,6,10", NULL, 2, JAX, 1, NULL},
    {EIN, "a b -> b* a", "6,8", NULL, 4, JAX, 1, NULL},
};

/* ---------------------------------------------------------------- running */

static int counts[3][2]; /* [notation][failed] */
static int trip_counts[2];

static int parse_shape(const char *text, int64_t *shape, int *rank)
{
    nd_error err;
    return nd_parse_dims("shape", text, shape, rank, &err);
}

static char info[1200]; /* printed under the next report line, then cleared */

static void report(bool ok, const char *kind, const char *text, const char *shape, const char *mesh, const char *note,
                   const char *detail)
{
    printf("%s %-10s %s  shape [%s]%s%s%s%s\n", ok ? "PASS" : "FAIL", kind, text, shape, mesh ? " mesh " : "",
           mesh ? mesh : "", note && *note ? "  -- " : "", note ? note : "");
    if (!ok)
        printf("     %s\n", detail);
    if (info[0])
        printf("     (%s)\n", info);
    info[0] = '\0';
}

static void run_case(const tcase *c)
{
    int64_t shape[ND_MAX_RANK] = {0};
    int rank;
    char rerr[256] = "", detail[4096] = "", exp[1536], got[1536], why[512];
    static placement want, ref, mine; /* large: not on the stack */
    bool ok;
    if (parse_shape(c->shape, shape, &rank)) {
        report(false, notation_name[c->n], c->text, c->shape, c->mesh, c->note, "bad shape in the table");
        ++counts[c->n][1];
        return;
    }
    int64_t devices = c->devices;
    int rrc = ref_run(c->n, c->text, c->mesh, devices, shape, rank, &ref, rerr, sizeof rerr);
    if (c->n != EIN && rrc == 0)
        devices = ref.ndev;
    else if (c->n != EIN) { /* devices from the mesh text alone */
        ref_sharding m;
        char e2[64];
        devices = ref_mesh(c->mesh, &m, e2, sizeof e2) ? 1 : ref_devices(&m);
    }
    /* the table's own ranges check the reference model first */
    bool must_refuse = c->want && strcmp(c->want, "!") == 0;
    if (must_refuse != (rrc != 0)) {
        snprintf(detail, sizeof detail, "TEST BUG: the reference model %s, the table says %s (%s)",
                 rrc ? "refuses" : "accepts", must_refuse ? "refuse" : "accept", rerr);
        report(false, notation_name[c->n], c->text, c->shape, c->mesh, c->note, detail);
        ++counts[c->n][1];
        return;
    }
    if (c->want && !must_refuse) {
        if (parse_want(c->want, &ref, &want) || !same_placement(&want, &ref, why, sizeof why)) {
            snprintf(detail, sizeof detail, "TEST BUG: the reference model disagrees with the hand-written ranges: %s",
                     why);
            report(false, notation_name[c->n], c->text, c->shape, c->mesh, c->note, detail);
            ++counts[c->n][1];
            return;
        }
    }
    nd_sharding sh;
    nd_dist d;
    nd_error err;
    err.msg[0] = '\0';
    int nrc = ndgen_run(c->n, c->text, c->mesh, devices, c->shape, &sh, &d, &err);
    if (rrc) {
        ok = nrc != 0;
        if (ok)
            snprintf(info, sizeof info, "refused as the system does; system: %.250s; ndgen: %.700s", rerr, err.msg);
        if (!ok) {
            ndgen_place(&sh, &d, (int)devices, &mine);
            describe(&mine, got, sizeof got);
            snprintf(detail, sizeof detail, "expected a refusal (%s); ndgen accepted and placed %s", rerr, got);
        }
    } else if (ref.not_block) {
        /* DTensor hands a device pieces of a dim that are not one run (a _StridedShard whose split factor
         * is not the later axes' product): no ND distribution holds that, so ndgen must refuse. */
        ok = nrc != 0 && strstr(err.msg, "_StridedShard") != NULL;
        snprintf(ok ? info : detail, ok ? sizeof info : sizeof detail, "DTensor gives a device pieces that are not "
                 "one run; ndgen %s: %s", nrc ? "refused" : "accepted", nrc ? err.msg : "(must refuse)");
    } else if (equal_shards_only(c)) {
        /* The system places these unequal pieces, which an ND distribution (equal shards) cannot hold:
         * ndgen must refuse, naming the nested chunking, rather than put elements on other devices. */
        ok = nrc != 0 && (strstr(err.msg, "DTensor's nested chunking") || strstr(err.msg, "_StridedShard of an uneven"));
        describe(&ref, exp, sizeof exp);
        snprintf(ok ? info : detail, ok ? sizeof info : sizeof detail, "DTensor places %s; ndgen %s: %s", exp,
                 nrc ? "refused" : "accepted", nrc ? err.msg : "(must refuse)");
    } else if (nrc) {
        ok = false;
        describe(&ref, exp, sizeof exp);
        snprintf(detail, sizeof detail, "expected %s; ndgen refused: %s", exp, err.msg);
    } else {
        ndgen_place(&sh, &d, ref.ndev, &mine);
        ok = same_placement(&ref, &mine, why, sizeof why);
        if (ok && c->n == EIN) { /* [EIN]: one mesh axis per right-hand element, '...' dims included */
            ok = ref.naxes == mine.naxes;
            for (int i = 0; ok && i < ref.naxes; ++i)
                ok = ref.mesh[i] == mine.mesh[i];
            if (!ok) {
                int n = snprintf(why, sizeof why, "mesh (");
                for (int i = 0; i < mine.naxes; ++i)
                    n += snprintf(why + n, sizeof why - (size_t)n, "%s%lld", i ? "," : "", (long long)mine.mesh[i]);
                n += snprintf(why + n, sizeof why - (size_t)n, "), einshard's mesh is (");
                for (int i = 0; i < ref.naxes; ++i)
                    n += snprintf(why + n, sizeof why - (size_t)n, "%s%lld", i ? "," : "", (long long)ref.mesh[i]);
                snprintf(why + n, sizeof why - (size_t)n, ")");
            }
        }
        if (!ok) {
            describe(&ref, exp, sizeof exp);
            describe(&mine, got, sizeof got);
            snprintf(detail, sizeof detail, "%s\n     expected %s\n     got      %s", why, exp, got);
        }
    }
    report(ok, notation_name[c->n], c->text, c->shape, c->mesh, c->note, detail);
    ++counts[c->n][!ok];
}

static int format_as(enum notation n, const nd_sharding *sh, char *buf, size_t len, nd_error *err)
{
    return n == EIN ? nd_einshard_format(sh, buf, len, err)
           : n == JAX ? nd_pspec_format(sh, buf, len, err)
                      : nd_placements_format(sh, buf, len, err);
}

static void run_trip(const trip *t)
{
    int64_t shape[ND_MAX_RANK] = {0};
    int rank;
    char kind[48], rerr[256] = "", detail[4096] = "", text[1024], mesh[512], why[512], exp[1536], got[1536];
    static placement src, dst, mine;
    nd_sharding sh, sh2;
    nd_dist d, d2;
    nd_error err;
    bool ok;
    snprintf(kind, sizeof kind, "%s->%s", notation_name[t->from], notation_name[t->to]);
    if (parse_shape(t->shape, shape, &rank) ||
        ref_run(t->from, t->text, t->mesh, t->devices, shape, rank, &src, rerr, sizeof rerr)) {
        snprintf(detail, sizeof detail, "TEST BUG: the source is refused by its own system: %s", rerr);
        report(false, kind, t->text, t->shape, t->mesh, t->note, detail);
        ++trip_counts[1];
        return;
    }
    if (ndgen_run(t->from, t->text, t->mesh, src.ndev, t->shape, &sh, &d, &err)) {
        ok = t->expect == 0;
        snprintf(detail, sizeof detail, "ndgen refused the source: %s", err.msg);
        report(ok, kind, t->text, t->shape, t->mesh, t->note, detail);
        ++trip_counts[!ok];
        return;
    }
    if (format_as(t->to, &sh, text, sizeof text, &err) < 0) {
        ok = t->expect == 0;
        snprintf(detail, sizeof detail, "a faithful translation exists; ndgen refused to print one: %s", err.msg);
        if (ok)
            snprintf(info, sizeof info, "translation refused: %.700s", err.msg);
        report(ok, kind, t->text, t->shape, t->mesh, t->note, detail);
        ++trip_counts[!ok];
        return;
    }
    nd_mesh_format(&sh, mesh, sizeof mesh);
    /* the printed text, read by the target system */
    int trc = ref_run(t->to, text, mesh, src.ndev, shape, rank, &dst, rerr, sizeof rerr);
    bool faithful = trc == 0 && same_placement(&src, &dst, why, sizeof why);
    if (trc)
        snprintf(why, sizeof why, "the target system refuses it: %s", rerr);
    int nrc = ndgen_run(t->to, text, t->to == EIN ? NULL : mesh, src.ndev, t->shape, &sh2, &d2, &err);
    snprintf(info, sizeof info, "printed %.600s%s%.400s", text, t->to == EIN ? "" : " on mesh ",
             t->to == EIN ? "" : mesh);
    if (faithful) {
        if (nrc) {
            ok = false;
            snprintf(detail, sizeof detail, "ndgen refuses its own translation: %s", err.msg);
        } else {
            ndgen_place(&sh2, &d2, src.ndev, &mine);
            ok = same_placement(&src, &mine, why, sizeof why);
            if (!ok) {
                describe(&src, exp, sizeof exp);
                describe(&mine, got, sizeof got);
                snprintf(detail, sizeof detail, "parsed back, %s\n     expected %s\n     got      %s", why, exp, got);
            }
        }
    } else {
        /* the target system would place elements elsewhere (or refuse): only a refusal is right */
        ok = nrc != 0 && trc != 0;
        describe(&src, exp, sizeof exp);
        if (trc == 0)
            describe(&dst, got, sizeof got);
        snprintf(detail, sizeof detail, "the translation moves elements: %s\n     source places %s%s%s", why, exp,
                 trc == 0 ? "\n     target places " : "", trc == 0 ? got : "");
        if (nrc == 0 && trc != 0)
            snprintf(detail + strlen(detail), sizeof detail - strlen(detail),
                     "\n     and ndgen accepts the printed text, which the target system refuses");
    }
    report(ok, kind, t->text, t->shape, t->mesh, t->note, detail);
    ++trip_counts[!ok];
}

int main(void)
{
    size_t ncases = sizeof cases / sizeof *cases, ntrips = sizeof trips / sizeof *trips;
    for (size_t i = 0; i < ncases; ++i)
        run_case(&cases[i]);
    for (size_t i = 0; i < ntrips; ++i)
        run_trip(&trips[i]);
    int failed = trip_counts[1];
    printf("\n");
    for (int n = 0; n < 3; ++n) {
        printf("%-10s %2d cases, %2d passed, %2d failed\n", notation_name[n], counts[n][0] + counts[n][1], counts[n][0],
               counts[n][1]);
        failed += counts[n][1];
    }
    printf("%-10s %2d cases, %2d passed, %2d failed\n", "round trip", trip_counts[0] + trip_counts[1], trip_counts[0],
           trip_counts[1]);
    return failed ? 1 : 0;
}
