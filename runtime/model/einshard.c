/*
 * einshard.c - einshard expressions: "lhs -> rhs", parsed to an nd_sharding.
 *
 *   lhs      := { NAME | "..." }                 the tensor's axes; NAME is letters (Unicode) and '_'
 *   rhs      := { NAME [k] ["*"] | k ["*"] | "*" | "..." }   one mesh axis each, in mesh order
 *
 * Elements are separated by blanks; a size and star are written against their name ("a2*"). A named
 * element splits that tensor axis (its last one, when a name repeats); a bare one, an earlier one of a
 * repeated name, or a name the left side lacks is a replication axis. A fixed k gives a mesh axis of
 * size k; with a star the size is k * r (k = 1 when absent), where r is the integer root that makes
 * the mesh hold every device: r^stars = devices / (fixed sizes * star bases). "..." stands for the
 * tensor axes the left side does not name, unsplit; it must appear on both sides or neither. On the
 * right it gives each of those axes a mesh axis of size 1 where it stands, as einshard's own mesh does
 * (src/einshard/einshard.py in yixiaoer/einshard: the elided axes are appended with sharding number 1).
 * Like the JAX NamedSharding einshard builds, every sharded dim must divide (nd_sharding_dist).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dist_internal.h"

enum { MAX_SIZE = 1 << 30 };

typedef struct rhs_elem {
    int col;
    int dim;      /* the tensor dim a named element splits; -1 for a replication axis */
    int64_t base; /* k, or 1 when absent */
    bool star;
} rhs_elem;

typedef struct parser {
    const char *expr, *p;
    nd_error *err;
    int rank;                   /* of the tensor */
    int nnames;                 /* named left-hand axes */
    char names[ND_MAX_RANK][ND_MESH_NAME];
    int lhs_dots;               /* position of "..." among the left-hand elements, or -1 */
    int nelems;
    rhs_elem elems[ND_MAX_MESH];
    bool rhs_dots;
} parser;

__attribute__((format(printf, 3, 4))) static int fail_at(parser *ps, const char *at, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return nd_fail(ps->err, "einshard '%s': %s at column %d", ps->expr, why, nd_column(ps->expr, at));
}

static void skip_blanks(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t')
        ++ps->p;
}

/* The code point of the well-formed UTF-8 sequence at p and its length in *len; -1 when ill-formed. */
static int32_t utf8_decode(const char *p, int *len)
{
    const unsigned char *u = (const unsigned char *)p;
    int n = u[0] >= 0xF0 && u[0] <= 0xF4 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC2 ? 2 : 0;
    if (n == 0 || u[0] >= 0xF5)
        return -1;
    int32_t c = u[0] & (0x7F >> n);
    for (int i = 1; i < n; ++i) {
        if ((u[i] & 0xC0) != 0x80)
            return -1;
        c = c << 6 | (u[i] & 0x3F);
    }
    static const int32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[n] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return -1;
    *len = n;
    return c;
}

/* Bytes of the name character at p, or 0. einshard's names are Unicode letters (category L) and '_'
 * (src/einshard/parser.py). Beyond ASCII this accepts a code point unless it lies in a block of
 * symbols and punctuation (Latin-1's signs, x and /, General Punctuation to Miscellaneous Symbols and
 * Arrows, CJK punctuation, private use, fullwidth signs), of combining marks, of other scripts' digits,
 * or is a space, the byte order mark or a special: letters pass; a rare non-letter outside those
 * (a mark or digit of a script not listed) passes too, which einshard would refuse. */
int nd_name_char_len(const char *p)
{
    unsigned char c = (unsigned char)*p;
    if (c < 0x80)
        return isalpha(c) || c == '_' ? 1 : 0;
    int len = 0;
    int32_t u = utf8_decode(p, &len);
    bool symbol = u < 0xC0 || u == 0xD7 || u == 0xF7 || (u >= 0x2000 && u <= 0x2BFF) || (u >= 0x3000 && u <= 0x303F) ||
                  (u >= 0xE000 && u <= 0xF8FF) || (u >= 0xFF00 && u <= 0xFF20) || (u >= 0xFF3B && u <= 0xFF40) ||
                  (u >= 0xFF5B && u <= 0xFF65) ||
                  /* combining marks, which are no letters (category M) */
                  (u >= 0x0300 && u <= 0x036F) || (u >= 0x1AB0 && u <= 0x1AFF) || (u >= 0x1DC0 && u <= 0x1DFF) ||
                  (u >= 0xFE20 && u <= 0xFE2F) ||
                  /* digits of other scripts (category Nd) */
                  (u >= 0x0660 && u <= 0x0669) || (u >= 0x06F0 && u <= 0x06F9) || (u >= 0x0966 && u <= 0x096F) ||
                  /* spaces, the byte order mark and the specials */
                  u == 0x1680 || u == 0x180E || u == 0xFEFF || (u >= 0xFFF0 && u <= 0xFFFF);
    return u < 0 || symbol ? 0 : len;
}

static bool name_char(const char *p) { return nd_name_char_len(p) > 0; }

int nd_char_len(const char *p)
{
    int len = 1;
    if ((unsigned char)*p >= 0x80 && utf8_decode(p, &len) < 0)
        len = 1;
    return *p ? len : 0;
}

int nd_column(const char *text, const char *at)
{
    int column = 1;
    for (const char *p = text; p < at && *p; p += nd_char_len(p))
        ++column;
    return column;
}

bool nd_einshard_name(const char *s)
{
    int k = 0;
    for (; *s && (k = nd_name_char_len(s)) > 0; s += k)
        ;
    return k > 0 && !*s;
}

/* "..." at p; one '.' alone is an error. */
static int take_dots(parser *ps)
{
    if (strncmp(ps->p, "...", 3) != 0)
        return fail_at(ps, ps->p, "expected '...'");
    ps->p += 3;
    return 0;
}

static int take_name(parser *ps, char *out)
{
    const char *start = ps->p;
    for (int k; (k = nd_name_char_len(ps->p)) > 0;)
        ps->p += k;
    size_t n = (size_t)(ps->p - start);
    if (n >= ND_MESH_NAME)
        return fail_at(ps, start, "axis name longer than %d bytes", ND_MESH_NAME - 1);
    memcpy(out, start, n);
    out[n] = '\0';
    return 0;
}

static int lhs_index(const parser *ps, const char *name)
{
    for (int i = 0; i < ps->nnames; ++i)
        if (strcmp(ps->names[i], name) == 0)
            return i;
    return -1;
}

/* After an element: a blank, the end, or (left side only) the arrow. */
static int end_of_element(parser *ps, bool lhs)
{
    char c = *ps->p;
    if (c == ' ' || c == '\t' || c == '\0' || (lhs && c == '-'))
        return 0;
    int len = 0;
    if ((unsigned char)c >= 0x80 && utf8_decode(ps->p, &len) >= 0) /* the whole character, not its first byte */
        return fail_at(ps, ps->p, "expected a blank between elements, not '%.*s' (einshard's names are letters)", len,
                       ps->p);
    if (isdigit((unsigned char)c) && ps->p[-1] == '*')
        return fail_at(ps, ps->p, "the size comes before '*', as in 'a2*'");
    if (lhs && isdigit((unsigned char)c))
        return fail_at(ps, ps->p, "left-hand axis names are letters and '_', not digits");
    return fail_at(ps, ps->p, "expected a blank between elements, not '%c'", c);
}

static int parse_lhs(parser *ps)
{
    ps->lhs_dots = -1;
    for (skip_blanks(ps); *ps->p && *ps->p != '-'; skip_blanks(ps)) {
        const char *at = ps->p;
        if (*ps->p == '.') {
            if (ps->lhs_dots >= 0)
                return fail_at(ps, at, "more than one '...' on the left side");
            if (take_dots(ps))
                return -1;
            ps->lhs_dots = ps->nnames;
        } else if (name_char(ps->p)) {
            if (ps->nnames == ND_MAX_RANK)
                return fail_at(ps, at, "more than %d axes", ND_MAX_RANK);
            if (take_name(ps, ps->names[ps->nnames]))
                return -1;
            if (lhs_index(ps, ps->names[ps->nnames]) >= 0)
                return fail_at(ps, at, "axis '%s' named twice on the left side", ps->names[ps->nnames]);
            ++ps->nnames;
        } else {
            return fail_at(ps, at, "expected an axis name or '...'");
        }
        if (end_of_element(ps, true))
            return -1;
    }
    if (strncmp(ps->p, "->", 2) != 0)
        return fail_at(ps, ps->p, "expected '->'");
    ps->p += 2;
    return 0;
}

/* k of "k" or "NAMEk": a positive size. */
static int take_size(parser *ps, int64_t *out)
{
    const char *at = ps->p;
    int64_t v = 0;
    while (isdigit((unsigned char)*ps->p)) {
        v = v * 10 + (*ps->p++ - '0');
        if (v > MAX_SIZE)
            return fail_at(ps, at, "size is larger than %d", MAX_SIZE);
    }
    if (v == 0)
        return fail_at(ps, at, "size 0; mesh axis sizes are positive");
    *out = v;
    return 0;
}

/* The tensor dim of left-hand axis index i, given where "..." stands and how many dims it covers. */
static int dim_of(const parser *ps, int i)
{
    int covered = ps->rank - ps->nnames;
    return ps->lhs_dots >= 0 && i >= ps->lhs_dots ? i + covered : i;
}

/* A named right-hand element, as einshard reads it (src/einshard/einshard.py: every element is a mesh
 * axis; a dict from name to its last element gives each left-hand axis its split): a name the left side
 * does not have is a replication axis; a name given again takes the split, and its earlier element
 * becomes a replication axis of its size. used[i] holds the element splitting left-hand axis i + 1. */
static int parse_named(parser *ps, rhs_elem *e, int *used)
{
    char name[ND_MESH_NAME];
    if (take_name(ps, name))
        return -1;
    int i = lhs_index(ps, name);
    if (i >= 0) {
        if (used[i])
            ps->elems[used[i] - 1].dim = -1;
        used[i] = ps->nelems + 1;
        e->dim = dim_of(ps, i);
    }
    return isdigit((unsigned char)*ps->p) ? take_size(ps, &e->base) : 0;
}

/* "..." on the right: as einshard does, one mesh axis of size 1 for each tensor axis it stands for, in
 * order, so the mesh has the shape einshard gives it. */
static int dots_axes(parser *ps, const char *at)
{
    int covered = ps->lhs_dots < 0 ? 0 : ps->rank - ps->nnames;
    for (int j = 0; j < covered; ++j) {
        if (ps->nelems == ND_MAX_MESH)
            return fail_at(ps, at, "more than %d mesh axes, counting one for each axis '...' stands for", ND_MAX_MESH);
        ps->elems[ps->nelems++] = (rhs_elem){(int)(at - ps->expr) + 1, ps->lhs_dots + j, 1, false};
    }
    return 0;
}

static int parse_rhs(parser *ps)
{
    int used[ND_MAX_RANK] = {0};
    for (skip_blanks(ps); *ps->p; skip_blanks(ps)) {
        const char *at = ps->p;
        if (*ps->p == '.') {
            if (ps->rhs_dots)
                return fail_at(ps, at, "more than one '...' on the right side");
            if (take_dots(ps) || dots_axes(ps, at))
                return -1;
            ps->rhs_dots = true;
        } else {
            if (ps->nelems == ND_MAX_MESH)
                return fail_at(ps, at, "more than %d mesh axes", ND_MAX_MESH);
            rhs_elem *e = &ps->elems[ps->nelems];
            *e = (rhs_elem){(int)(at - ps->expr) + 1, -1, 1, false};
            if (name_char(ps->p) ? parse_named(ps, e, used)
                : isdigit((unsigned char)*ps->p) ? take_size(ps, &e->base)
                : *ps->p == '*' ? 0
                : fail_at(ps, at, "expected a mesh axis (a, a2, a2*, a*, 2, 2* or *) or '...'"))
                return -1;
            if (*ps->p == '*') {
                e->star = true;
                ++ps->p;
            }
            ++ps->nelems;
        }
        if (end_of_element(ps, false))
            return -1;
    }
    for (int i = 0; i < ps->nnames; ++i)
        if (!used[i])
            return nd_fail(ps->err, "einshard '%s': left-hand axis '%s' is missing on the right side", ps->expr,
                           ps->names[i]);
    if ((ps->lhs_dots >= 0) != ps->rhs_dots)
        return nd_fail(ps->err, "einshard '%s': '...' appears on the %s side only; write it on both or neither",
                       ps->expr, ps->rhs_dots ? "right" : "left");
    return 0;
}

static int check_rank(parser *ps)
{
    if (ps->nnames == 0 && ps->lhs_dots < 0)
        return nd_fail(ps->err, "einshard '%s': the left side names no axis", ps->expr);
    if (ps->lhs_dots < 0 ? ps->nnames != ps->rank : ps->nnames > ps->rank)
        return nd_fail(ps->err, "einshard '%s': the left side names %d axes%s, but the tensor has rank %d", ps->expr,
                       ps->nnames, ps->lhs_dots < 0 ? "" : " besides '...'", ps->rank);
    return 0;
}

/* r^k, or q + 1 when that exceeds q. */
static int64_t power_capped(int64_t r, int k, int64_t q)
{
    int64_t p = 1;
    for (int i = 0; i < k; ++i)
        if (!mul_ok(p, r, &p) || p > q)
            return q + 1;
    return p;
}

/* The integer r with r^k == q, or 0: a binary search, exact where a floating-point root is not
 * (the cube root of 64 in doubles is 3.9999999999999996). */
static int64_t int_root(int64_t q, int k)
{
    int64_t lo = 1, hi = q;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (power_capped(mid, k, q) < q)
            lo = mid + 1;
        else
            hi = mid;
    }
    return power_capped(lo, k, q) == q ? lo : 0;
}

/* Sizes for the starred axes: every device in the mesh. */
static int solve_sizes(parser *ps, int64_t devices, int64_t *sizes)
{
    int64_t fixed = 1;
    int stars = 0;
    for (int i = 0; i < ps->nelems; ++i) {
        stars += ps->elems[i].star;
        if (!mul_ok(fixed, ps->elems[i].base, &fixed) || fixed > devices)
            return nd_fail(ps->err, "einshard '%s': %lld cores do not factor: the fixed sizes and star bases "
                                    "already exceed them", ps->expr, (long long)devices);
    }
    if (devices % fixed)
        return nd_fail(ps->err, "einshard '%s': %lld cores do not factor: the fixed sizes and star bases multiply "
                                "to %lld, which does not divide %lld", ps->expr, (long long)devices, (long long)fixed,
                       (long long)devices);
    int64_t q = devices / fixed, r = stars ? int_root(q, stars) : 1;
    if (!stars && q != 1)
        return nd_fail(ps->err, "einshard '%s': the mesh holds %lld devices, but there are %lld cores; give an "
                                "axis a '*' to take the rest", ps->expr, (long long)fixed, (long long)devices);
    if (!r)
        return nd_fail(ps->err, "einshard '%s': %lld cores do not factor: %lld left for %d '*' axes is not a "
                                "perfect power of %d", ps->expr, (long long)devices, (long long)q, stars, stars);
    for (int i = 0; i < ps->nelems; ++i)
        sizes[i] = ps->elems[i].base * (ps->elems[i].star ? r : 1);
    return 0;
}

static void build(const parser *ps, const int64_t *sizes, nd_sharding *out)
{
    memset(out, 0, sizeof *out);
    out->notation = ND_NOTATION_EINSHARD;
    out->rank = ps->rank;
    out->naxes = ps->nelems;
    for (int i = 0; i < ps->nnames; ++i)
        snprintf(out->dim_names[dim_of(ps, i)], ND_MESH_NAME, "%s", ps->names[i]);
    for (int i = 0; i < ps->nelems; ++i) {
        const rhs_elem *e = &ps->elems[i];
        nd_mesh_axis *a = &out->axes[i];
        a->size = sizes[i];
        a->kind = e->dim >= 0 ? ND_MESH_SHARD : ND_MESH_REPLICATE;
        a->dim = e->dim;
        if (e->dim >= 0) {
            snprintf(a->name, sizeof a->name, "%s", out->dim_names[e->dim]);
            out->split[e->dim][out->nsplit[e->dim]++] = (int8_t)i;
        }
    }
}

int nd_einshard_parse(const char *expr, int rank, int64_t devices, nd_sharding *out, nd_error *err)
{
    parser ps;
    int64_t sizes[ND_MAX_MESH];
    memset(&ps, 0, sizeof ps);
    ps.expr = expr;
    ps.p = expr;
    ps.err = err;
    ps.rank = rank;
    if (rank < 1 || rank > ND_MAX_RANK)
        return nd_fail(err, "einshard '%s': rank %d is out of range 1..%d", expr, rank, ND_MAX_RANK);
    if (devices < 1)
        return nd_fail(err, "einshard '%s': no cores to lay the mesh over", expr);
    if (parse_lhs(&ps) || check_rank(&ps) || parse_rhs(&ps) || solve_sizes(&ps, devices, sizes))
        return -1;
    build(&ps, sizes, out);
    return 0;
}
