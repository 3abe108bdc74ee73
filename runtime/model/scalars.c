/*
 * scalars.c - an op's launch scalars: the declaration a spec writes, its canonical text (what kernel
 * libraries record), and the check of a launch's values against it. The generator and the runtime use
 * this one parser, so what a spec declares is exactly what every launch is held to.
 *
 * Values arrive as doubles. A value is checked as the kernel will see it: an f32 after rounding to
 * float (so 1e-50 for an "f32 > 0" is refused: it would be 0 in the kernel), an integer type exactly.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd_dist.h"

static const struct {
    const char *name, *what;
    double lo, hi;
} types[] = {
#define ND_SCALAR_ROW(T, name, what, lo, hi) {name, what, lo, hi},
    ND_SCALAR_TYPES(ND_SCALAR_ROW)
#undef ND_SCALAR_ROW
};
_Static_assert(sizeof types / sizeof *types == ND_SCALAR_TYPE_COUNT, "one row per nd_scalar_type");

const char *nd_scalar_type_name(nd_scalar_type t)
{
    return (unsigned)t < ND_SCALAR_TYPE_COUNT ? types[t].name : "?";
}

static bool is_list(nd_scalar_type t) { return t == ND_SCALAR_AXES || t == ND_SCALAR_PERM; }
static bool is_integer(nd_scalar_type t) { return t != ND_SCALAR_F32 && t != ND_SCALAR_F64; }

/* The shortest text that reads back as v ("1e-05", not "1.0000000000000001e-05"); "inf" and "-inf". */
static void num_text(char *out, size_t len, double v)
{
    if (isinf(v)) {
        snprintf(out, len, "%sinf", v < 0 ? "-" : "");
        return;
    }
    for (int digits = 15; digits <= 17; ++digits) {
        snprintf(out, len, "%.*g", digits, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

/* ---------------------------------------------------------------- parsing */

typedef struct cursor {
    const char *text, *p;
    nd_error *err;
} cursor;

static int bad(cursor *c, const char *why)
{
    return nd_fail(c->err, "scalars '%s': %s at '%s'; expected items such as \"eps: f32 in (0, 1]\" or \"axes: axes(x)\"",
                   c->text, why, *c->p ? c->p : "the end");
}

static void skip(cursor *c)
{
    while (*c->p == ' ' || *c->p == '\t')
        ++c->p;
}

/* A C identifier into out; 0 when there is none or it is too long. */
static size_t ident(cursor *c, char *out)
{
    skip(c);
    size_t n = 0;
    if (!isalpha((unsigned char)*c->p) && *c->p != '_')
        return 0;
    while (isalnum((unsigned char)c->p[n]) || c->p[n] == '_')
        ++n;
    if (n >= ND_SCALAR_NAME)
        return 0;
    memcpy(out, c->p, n);
    out[n] = '\0';
    c->p += n;
    return n;
}

static bool take(cursor *c, const char *s)
{
    skip(c);
    size_t n = strlen(s);
    if (strncmp(c->p, s, n) != 0)
        return false;
    c->p += n;
    return true;
}

static int number(cursor *c, double *v)
{
    skip(c);
    char *end;
    *v = strtod(c->p, &end);
    if (end == c->p || isnan(*v))
        return bad(c, "expected a number");
    c->p = end;
    return 0;
}

/* "(INPUT)" after axes or perm. */
static int list_of(cursor *c, nd_scalar_decl *d)
{
    if (!take(c, "(") || !ident(c, d->of) || !take(c, ")"))
        return bad(c, "expected (INPUT) after axes or perm");
    return 0;
}

/* "in [lo, hi]" and its open forms, or one comparison; nothing is the whole real line. */
static int range(cursor *c, nd_scalar_decl *d)
{
    d->lo = -INFINITY;
    d->hi = INFINITY;
    d->lo_open = d->hi_open = true;
    if (take(c, "in")) {
        if (!take(c, "[") && !take(c, "("))
            return bad(c, "expected [ or ( after in");
        d->lo_open = c->p[-1] == '(';
        if (number(c, &d->lo))
            return -1;
        if (!take(c, ","))
            return bad(c, "expected , between the range's bounds");
        if (number(c, &d->hi))
            return -1;
        if (!take(c, "]") && !take(c, ")"))
            return bad(c, "expected ] or ) closing the range");
        d->hi_open = c->p[-1] == ')';
    } else if (take(c, ">=") || take(c, ">")) {
        d->lo_open = c->p[-1] == '>';
        return number(c, &d->lo);
    } else if (take(c, "<=") || take(c, "<")) {
        d->hi_open = c->p[-1] == '<';
        return number(c, &d->hi);
    }
    return 0;
}

static int type_of(cursor *c, nd_scalar_decl *d)
{
    char t[ND_SCALAR_NAME];
    const char *at = c->p;
    if (!ident(c, t))
        return bad(c, "expected a type");
    for (int i = 0; i < ND_SCALAR_TYPE_COUNT; ++i)
        if (strcmp(t, types[i].name) == 0) {
            d->type = (nd_scalar_type)i;
            return is_list(d->type) ? list_of(c, d) : range(c, d);
        }
    c->p = at;
    return bad(c, "unknown type (f32, f64, i32, i64, bool, axes(INPUT), perm(INPUT))");
}

static int item(cursor *c, nd_scalar_decl *d)
{
    memset(d, 0, sizeof *d);
    d->lo = -INFINITY;
    d->hi = INFINITY;
    d->lo_open = d->hi_open = true;
    if (!ident(c, d->name))
        return bad(c, "expected a scalar's name (a C identifier of at most 31 characters)");
    skip(c);
    if (*c->p == '(' && (strcmp(d->name, "axes") == 0 || strcmp(d->name, "perm") == 0)) {
        d->type = d->name[0] == 'a' ? ND_SCALAR_AXES : ND_SCALAR_PERM; /* the shorthand axes(x) */
        return list_of(c, d);
    }
    if (!take(c, ":")) {
        d->type = ND_SCALAR_F64; /* a name alone */
        return 0;
    }
    if (type_of(c, d))
        return -1;
    /* [inf, inf] holds no finite value either: refused, as its canonical text (no range) would take all */
    if (d->lo > d->hi || (d->lo == d->hi && (d->lo_open || d->hi_open)) || d->lo == INFINITY || d->hi == -INFINITY)
        return nd_fail(c->err, "scalars '%s': the range of '%s' holds no value", c->text, d->name);
    return 0;
}

/* Names once each; a list last and alone. */
static int check_decls(cursor *c, const nd_scalars *s)
{
    for (int i = 0; i < s->n; ++i) {
        for (int k = 0; k < i; ++k)
            if (strcmp(s->d[i].name, s->d[k].name) == 0)
                return nd_fail(c->err, "scalars '%s': '%s' is declared twice", c->text, s->d[i].name);
        if (is_list(s->d[i].type) && i != s->n - 1)
            return nd_fail(c->err, "scalars '%s': the list '%s' takes the rest of a launch's values, so it must be "
                                   "the last scalar (and the only list)", c->text, s->d[i].name);
    }
    return 0;
}

int nd_scalars_parse(const char *text, nd_scalars *out, nd_error *err)
{
    nd_scalars s = {0};
    cursor c = {text ? text : "", text ? text : "", err};
    skip(&c);
    while (*c.p) {
        if (s.n == ND_MAX_SCALARS)
            return nd_fail(err, "scalars '%s': more than %d scalars", text, ND_MAX_SCALARS);
        if (item(&c, &s.d[s.n++]))
            return -1;
        skip(&c);
        if (*c.p && !take(&c, ","))
            return bad(&c, "expected , between scalars");
        if (c.p[-1] == ',' && (skip(&c), !*c.p))
            return bad(&c, "expected a scalar after ,");
    }
    if (check_decls(&c, &s))
        return -1;
    *out = s;
    return 0;
}

/* ---------------------------------------------------------------- texts */

/* Appends the strings of parts (NULL-terminated) to buf, which stays terminated and within len. */
static void put(char *buf, size_t len, size_t *k, const char *const *parts)
{
    for (; *parts; ++parts)
        for (const char *p = *parts; *p && *k + 1 < len; ++p)
            buf[(*k)++] = *p;
    if (len)
        buf[*k < len ? *k : len - 1] = '\0';
}

void nd_scalars_text(const nd_scalars *s, char *buf, size_t len)
{
    size_t k = 0;
    char lo[32], hi[32];
    if (len)
        buf[0] = '\0';
    for (int i = 0; i < s->n; ++i) {
        const nd_scalar_decl *d = &s->d[i];
        const char *type = types[d->type].name;
        put(buf, len, &k, (const char *[]){i ? ", " : "", d->name, ": ", type, NULL});
        if (is_list(d->type)) {
            put(buf, len, &k, (const char *[]){"(", d->of, ")", NULL});
            continue;
        }
        if (d->lo == -INFINITY && d->hi == INFINITY)
            continue;
        num_text(lo, sizeof lo, d->lo);
        num_text(hi, sizeof hi, d->hi);
        put(buf, len, &k, (const char *[]){" in ", d->lo_open ? "(" : "[", lo, ", ", hi, d->hi_open ? ")" : "]", NULL});
    }
}

void nd_scalars_names(const nd_scalars *s, char *buf, size_t len)
{
    size_t k = 0;
    if (len)
        buf[0] = '\0';
    for (int i = 0; i < s->n; ++i)
        put(buf, len, &k, (const char *[]){i ? "," : "", s->d[i].name, NULL});
}

int nd_scalars_list(const nd_scalars *s)
{
    return s->n && is_list(s->d[s->n - 1].type) ? s->n - 1 : -1;
}

/* ---------------------------------------------------------------- checking values */

/* v as the kernel sees it: rounded to float for an f32. */
static double as_seen(nd_scalar_type t, double v) { return t == ND_SCALAR_F32 ? (double)(float)v : v; }

int nd_scalar_check_value(const nd_scalar_decl *d, const char *op, double v, nd_error *err)
{
    char x[32], lo[32], hi[32];
    num_text(x, sizeof x, v);
    double seen = as_seen(d->type, v);
    bool typed = !isnan(v) && v >= types[d->type].lo && v <= types[d->type].hi &&
                 (!is_integer(d->type) || v == trunc(v)) && (v == 0 || seen != 0);
    if (!typed)
        return nd_fail(err, "op '%s': scalar '%s' = %s is not %s (%s)%s", op, d->name, x, types[d->type].what,
                       types[d->type].name, v != 0 && seen == 0 ? ": it underflows to 0" : "");
    bool in = (d->lo_open ? seen > d->lo : seen >= d->lo) && (d->hi_open ? seen < d->hi : seen <= d->hi);
    if (!in) { /* an f32 rounded across a bound says so: 0.1 is 0.100000001 to the kernel, outside (0, 0.1] */
        char f[32], as[64] = "";
        if (seen != v) {
            num_text(f, sizeof f, seen);
            snprintf(as, sizeof as, " (%s as an f32)", f);
        }
        num_text(lo, sizeof lo, d->lo);
        num_text(hi, sizeof hi, d->hi);
        return nd_fail(err, "op '%s': scalar '%s' = %s%s is outside %s%s, %s%s, the range its spec declares", op,
                       d->name, x, as, d->lo_open ? "(" : "[", lo, hi, d->hi_open ? ")" : "]");
    }
    return 0;
}

int nd_scalars_check(const nd_scalars *s, const char *op, const double *v, int nv, nd_error *err)
{
    int list = nd_scalars_list(s), named = list < 0 ? s->n : list;
    char decl[512];
    if (list < 0 ? nv != s->n : nv <= named) {
        nd_scalars_text(s, decl, sizeof decl);
        if (s->n == 0)
            return nd_fail(err, "op '%s' takes no scalars, but the launch gives %d", op, nv);
        return nd_fail(err, "op '%s' takes %s%d scalar value%s (%s), but the launch gives %d", op,
                       list < 0 ? "" : "at least ", named + (list >= 0), named + (list >= 0) == 1 ? "" : "s", decl, nv);
    }
    for (int i = 0; i < named; ++i)
        if (nd_scalar_check_value(&s->d[i], op, v[i], err))
            return -1;
    return 0;
}

static const char *values_text(char *buf, size_t len, const double *v, int n)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n && k < len; ++i)
        k += (size_t)snprintf(buf + k, len - k, i ? ",%g" : "%g", v[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

static int check_axes(const nd_scalar_decl *d, const char *op, const double *v, int nv, int r, nd_error *err)
{
    bool seen[ND_MAX_RANK] = {false}, ok = nv >= 1 && nv <= r && (d->type != ND_SCALAR_PERM || nv == r);
    for (int i = 0; i < nv && ok; ++i) {
        ok = !isnan(v[i]) && v[i] == trunc(v[i]) && v[i] >= 0 && v[i] < r && !seen[(int)v[i]];
        if (ok)
            seen[(int)v[i]] = true;
    }
    char text[256];
    return ok ? 0 : nd_fail(err, "op '%s': scalars %s are not %s of the %d axes of '%s'", op,
                            values_text(text, sizeof text, v, nv),
                            d->type == ND_SCALAR_PERM ? "a permutation" : "distinct axes", r, d->of);
}

int nd_scalars_check_list(const nd_scalar_decl *d, const char *op, const char *out_name, const nd_dist_spec *in,
                          const nd_dist_spec *out, const double *v, int nv, nd_error *err)
{
    bool perm = d->type == ND_SCALAR_PERM;
    int r = in->rank, nw = 0;
    int64_t want[ND_MAX_RANK], keep[ND_MAX_RANK];
    char a[256], b[256], c[256], e[256];
    if (check_axes(d, op, v, nv, r, err))
        return -1;
    for (int i = 0; i < r; ++i) {
        bool reduced = false;
        for (int k = 0; k < nv && !perm; ++k)
            reduced |= (int)v[k] == i;
        keep[i] = reduced ? 1 : in->shape[i];
        if (perm)
            want[nw++] = in->shape[(int)v[i]];
        else if (!reduced)
            want[nw++] = in->shape[i];
    }
    bool ok = out->rank == nw && memcmp(out->shape, want, (size_t)nw * sizeof *want) == 0;
    ok = ok || (!perm && out->rank == r && memcmp(out->shape, keep, (size_t)r * sizeof *keep) == 0);
    if (!ok)
        return nd_fail(err, "op '%s': output '%s' has shape %s, but %s '%s' by %s gives %s%s%s", op, out_name,
                       nd_shape_text(a, sizeof a, out->shape, out->rank), perm ? "permuting" : "reducing", d->of,
                       values_text(b, sizeof b, v, nv), nd_shape_text(c, sizeof c, want, nw),
                       perm ? "" : ", or with keepdims ", perm ? "" : nd_shape_text(e, sizeof e, keep, r));
    return 0;
}
