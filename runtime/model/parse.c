/* parse.c - user text (flags, spec fields) into the model's values. Every error names the flag. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nd_dist.h"
#include "dist_internal.h"

/* Reads one decimal integer at *p, advancing *p; false if there is none or it overflows. */
static bool read_int(const char **p, int64_t *out)
{
    const char *s = *p;
    while (*s == ' ')
        ++s;
    if (!(isdigit((unsigned char)*s) || ((*s == '-' || *s == '+') && isdigit((unsigned char)s[1]))))
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE)
        return false;
    *out = v;
    *p = end;
    return true;
}

static const char *skip_spaces(const char *p)
{
    while (*p == ' ' || *p == '\t')
        ++p;
    return p;
}

int nd_parse_dims(const char *what, const char *text, int64_t *dims, int *rank, nd_error *err)
{
    const char *p = text;
    int n = 0;
    for (;;) {
        int64_t v;
        if (!read_int(&p, &v))
            return nd_fail(err, "%s %s: expected a comma-separated list of integers such as 3,7,5", what, text);
        if (n == ND_MAX_RANK)
            return nd_fail(err, "%s %s: more than %d dims", what, text, ND_MAX_RANK);
        if (v <= 0)
            return nd_fail(err, "%s %s: dim %d is %lld, but every dim must be positive", what, text, n,
                           (long long)v);
        dims[n++] = v;
        p = skip_spaces(p);
        if (*p == '\0')
            break;
        if (*p++ != ',')
            return nd_fail(err, "%s %s: expected a comma-separated list of integers such as 3,7,5", what, text);
    }
    *rank = n;
    return 0;
}

int nd_parse_grid(const char *what, const char *text, int *x, int *y, nd_error *err)
{
    const char *p = text;
    int64_t a, b;
    if (!read_int(&p, &a) || (*p != 'x' && *p != 'X') || (++p, !read_int(&p, &b)) || *skip_spaces(p))
        return nd_fail(err, "%s %s: expected COLSxROWS, such as 2x3", what, text);
    if (a < 1 || b < 1)
        return nd_fail(err, "%s %s: needs at least one core in each direction", what, text);
    if (a > ND_MAX_GRID || b > ND_MAX_GRID)
        return nd_fail(err, "%s %s: at most %d cores in each direction", what, text, ND_MAX_GRID);
    *x = (int)a;
    *y = (int)b;
    return 0;
}

/* "(x,y)" or "x,y" */
static bool read_core(const char **p, nd_core *c)
{
    const char *s = skip_spaces(*p);
    bool paren = *s == '(';
    int64_t x, y;
    if (paren)
        ++s;
    if (!read_int(&s, &x) || *(s = skip_spaces(s)) != ',' || (++s, !read_int(&s, &y)))
        return false;
    s = skip_spaces(s);
    if (paren && *s++ != ')')
        return false;
    if (x < INT32_MIN || x > INT32_MAX || y < INT32_MIN || y > INT32_MAX)
        return false;
    c->x = (int32_t)x;
    c->y = (int32_t)y;
    *p = s;
    return true;
}

int nd_parse_cores(const char *what, const char *text, nd_core_set *set, nd_error *err)
{
    const char *p = text;
    nd_orientation keep = set->orientation;
    memset(set, 0, sizeof *set);
    set->orientation = keep;
    while (*(p = skip_spaces(p)) != '\0') {
        nd_core_range r;
        if (!read_core(&p, &r.lo))
            return nd_fail(err, "%s %s: expected ranges such as '(0,0)-(1,2); (3,0)' at column %d", what,
                           text, (int)(p - text) + 1);
        r.hi = r.lo;
        if (*(p = skip_spaces(p)) == '-' && (++p, !read_core(&p, &r.hi)))
            return nd_fail(err, "%s %s: expected the range's second corner at column %d", what, text,
                           (int)(p - text) + 1);
        if (set->nranges == ND_MAX_RANGES)
            return nd_fail(err, "%s %s: more than %d ranges", what, text, ND_MAX_RANGES);
        set->ranges[set->nranges++] = r;
        p = skip_spaces(p);
        if (*p == ';')
            ++p;
    }
    if (set->nranges == 0)
        return nd_fail(err, "%s: the core list is empty", what);
    return 0;
}

/* Looks text up in names[0..n); case-insensitive. */
static int lookup(const char *what, const char *text, const char *const *names, int n, const char *choices,
                  int *out, nd_error *err)
{
    for (int i = 0; i < n; ++i)
        if (strcasecmp(text, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return nd_fail(err, "%s %s: unknown value; expected one of %s", what, text, choices);
}

int nd_parse_dtype(const char *what, const char *text, nd_dtype *out, nd_error *err)
{
    const char *names[ND_DTYPE_COUNT];
    char list[16 * ND_DTYPE_COUNT] = "";
    for (int i = 0; i < ND_DTYPE_COUNT; ++i) {
        names[i] = nd_dtype_name((nd_dtype)i);
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", names[i]);
    }
    int v = 0;
    if (lookup(what, text, names, ND_DTYPE_COUNT, list, &v, err))
        return -1;
    *out = (nd_dtype)v;
    return 0;
}

/* One of a table's enumerators by name or shorter name; the message lists the shorter names (else the
 * names). */
typedef struct enum_row {
    const char *name, *shorter;
} enum_row;

static int lookup_enum(const char *what, const char *text, const enum_row *rows, int n, int *out, nd_error *err)
{
    char list[256] = "";
    for (int i = 0; i < n; ++i) {
        if (strcasecmp(text, rows[i].name) == 0 || (rows[i].shorter[0] && strcasecmp(text, rows[i].shorter) == 0)) {
            *out = i;
            return 0;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
                 rows[i].shorter[0] ? rows[i].shorter : rows[i].name);
    }
    return nd_fail(err, "%s %s: unknown value; expected one of %s", what, text, list);
}

#define ENUM_ROW(e, name, shorter) [e] = {#name, shorter},

int nd_parse_strategy(const char *what, const char *text, nd_strategy *out, nd_error *err)
{
    static const enum_row rows[] = {ND_STRATEGIES(ENUM_ROW)};
    int v = 0;
    if (lookup_enum(what, text, rows, ND_STRATEGY_COUNT, &v, err))
        return -1;
    *out = (nd_strategy)v;
    return 0;
}

int nd_parse_orientation(const char *what, const char *text, nd_orientation *out, nd_error *err)
{
    static const enum_row rows[] = {ND_ORIENTATIONS(ENUM_ROW)};
    int v = 0;
    if (lookup_enum(what, text, rows, ND_ORIENTATION_COUNT, &v, err))
        return -1;
    *out = (nd_orientation)v;
    return 0;
}

int nd_parse_buffer(const char *what, const char *text, nd_buffer *out, nd_error *err)
{
    static const enum_row rows[] = {ND_BUFFERS(ENUM_ROW)};
    int v = 0;
    if (lookup_enum(what, text, rows, ND_BUFFER_COUNT, &v, err))
        return -1;
    *out = (nd_buffer)v;
    return 0;
}

#undef ENUM_ROW

int nd_parse_tile(const char *what, const char *text, int32_t *h, int32_t *w, nd_error *err)
{
    int x, y;
    nd_error ignored;
    if (nd_parse_grid(what, text, &x, &y, &ignored) || !((x == 16 || x == 32) && (y == 16 || y == 32)))
        return nd_fail(err, "%s %s: no such tile shape; tiles are 32x32, 16x16, 16x32 and 32x16", what, text);
    *h = x;
    *w = y;
    return 0;
}

int nd_parse_size(const char *what, const char *text, int64_t *out, nd_error *err)
{
    const char *p = text;
    int64_t v, unit = 1;
    if (!read_int(&p, &v) || v <= 0)
        return nd_fail(err, "%s %s: expected a positive size such as 1536K, 2M or 1G", what, text);
    switch (toupper((unsigned char)*p)) {
    case 'K': unit = 1 << 10; ++p; break;
    case 'M': unit = 1 << 20; ++p; break;
    case 'G': unit = 1 << 30; ++p; break;
    default: break;
    }
    if (*p == 'i' || *p == 'I')
        ++p;
    if ((*p == 'B' || *p == 'b'))
        ++p;
    if (*skip_spaces(p) != '\0' || !mul_ok(v, unit, out))
        return nd_fail(err, "%s %s: expected a positive size such as 1536K, 2M or 1G", what, text);
    return 0;
}

/* ---------------------------------------------------------------- signatures */

/* Copies the value of "key=" from sig (up to the next space) into out. */
static int sig_field(const char *sig, const char *key, char *out, size_t len, nd_error *err)
{
    const char *p = strstr(sig, key);
    if (!p)
        return nd_fail(err, "signature '%s': no %s", sig, key);
    p += strlen(key);
    size_t n = strcspn(p, " ");
    if (n >= len)
        return nd_fail(err, "signature '%s': %s is too long", sig, key);
    memcpy(out, p, n);
    out[n] = '\0';
    return 0;
}

/* The optional " replicas=R parts=P" of a signature, and " reduce=OP" after it (absent: sum). */
static int sig_copies(const char *sig, nd_dist_spec *s, nd_error *err)
{
    const char *p = strstr(sig, " replicas=");
    char op[16];
    if (!p)
        return 0;
    if (sscanf(p, " replicas=%d parts=%d", &s->replicas, &s->parts) != 2)
        return nd_fail(err, "signature '%s': expected replicas=R parts=P", sig);
    const char *r = strstr(p, " reduce=");
    if (r && (sscanf(r, " reduce=%15s", op) != 1 || nd_reduce_parse(op) < 0))
        return nd_fail(err, "signature '%s': expected reduce=sum|avg|max|min|product", sig);
    s->reduce = r ? (nd_reduce)nd_reduce_parse(op) : ND_REDUCE_SUM;
    return 0;
}

/* The fields a signature states, into s (no checks beyond each field's own). */
static int sig_spec(const char *sig, nd_dist_spec *s, nd_error *err)
{
    char dtype[16], shape[256], page[256], shard[256], cores[4096], orient[16], strategy[16], buffer[16];
    nd_dist_spec_init(s);
    s->page_kind = ND_PAGE_BOX;
    if (sscanf(sig, "%15s", dtype) != 1 || nd_parse_dtype("dtype", dtype, &s->dtype, err) ||
        sig_field(sig, "shape=", shape, sizeof shape, err) || sig_field(sig, "page=", page, sizeof page, err) ||
        sig_field(sig, "shard=", shard, sizeof shard, err) || sig_field(sig, "cores=", cores, sizeof cores, err))
        return -1;
    const char *tail = strstr(sig, "cores=") + 6 + strlen(cores);
    if (sscanf(tail, "%15s %15s %15s", orient, strategy, buffer) != 3)
        return nd_fail(err, "signature '%s': expected orientation, strategy and memory after the cores", sig);
    if (nd_parse_dims("shape", shape, s->shape, &s->rank, err) || nd_parse_dims("page", page, s->page, &s->page_rank, err) ||
        nd_parse_dims("shard", shard, s->shard, &s->shard_rank, err) ||
        nd_parse_orientation("orientation", orient, &s->cores.orientation, err) ||
        nd_parse_strategy("strategy", strategy, &s->strategy, err) || nd_parse_buffer("buffer", buffer, &s->buffer, err) ||
        nd_parse_cores("cores", cores, &s->cores, err) || sig_copies(sig, s, err))
        return -1;
    return 0;
}

int nd_dist_key_parse(const char *sig, nd_dist_key *key, nd_error *err)
{
    nd_dist_spec s;
    if (sig_spec(sig, &s, err))
        return -1;
    if (s.page_rank != s.rank || s.shard_rank != s.rank)
        return nd_fail(err, "signature '%s': shape, page and shard differ in rank", sig);
    nd_dist_key_of_spec(&s, key);
    char back[ND_SIGNATURE_LEN];
    nd_dist_key_print(key, back, sizeof back);
    if (strcmp(back, sig) != 0) /* keys are equal when signatures are: only the text ndgen writes */
        return nd_fail(err, "signature '%s': not as ndgen writes it ('%s')", sig, back);
    return 0;
}

int nd_dist_from_signature(const char *sig, nd_dist *out, int *grid_x, int *grid_y, nd_error *err)
{
    nd_dist_spec s;
    if (sig_spec(sig, &s, err))
        return -1;
    int gx = 1, gy = 1;
    for (int i = 0; i < s.cores.nranges; ++i) {
        gx = s.cores.ranges[i].hi.x + 1 > gx ? s.cores.ranges[i].hi.x + 1 : gx;
        gy = s.cores.ranges[i].hi.y + 1 > gy ? s.cores.ranges[i].hi.y + 1 : gy;
    }
    *grid_x = gx;
    *grid_y = gy;
    return nd_dist_make(&s, gx, gy, out, err);
}
