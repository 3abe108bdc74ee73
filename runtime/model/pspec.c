/*
 * pspec.c - the JAX and PyTorch notations of a sharding: meshes ("dp=2,tp=4", printed by mesh.c),
 * PartitionSpecs ("P('dp', None, unreduced={'tp'})") and DTensor placements ("[Shard(0), Partial(sum)]"),
 * parsed and printed. Parse errors name the column.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dist_internal.h"

typedef struct lexer {
    const char *what; /* "mesh", "PartitionSpec" or "placements" */
    const char *text, *p;
    nd_error *err;
} lexer;

__attribute__((format(printf, 2, 3))) static int lex_fail(lexer *lx, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return nd_fail(lx->err, "%s '%s': %s at column %d", lx->what, lx->text, why, nd_column(lx->text, lx->p));
}

static void blanks(lexer *lx)
{
    while (isspace((unsigned char)*lx->p))
        ++lx->p;
}

/* Consumes c (after blanks) when it is next. */
static bool accept(lexer *lx, char c)
{
    blanks(lx);
    if (*lx->p != c)
        return false;
    ++lx->p;
    return true;
}

static int expect(lexer *lx, char c)
{
    return accept(lx, c) ? 0 : lex_fail(lx, "expected '%c'", c);
}

/* Bytes of the identifier character at p, or 0: ASCII letters, digits and '_', and beyond ASCII the
 * letters einshard's names take (nd_name_char_len), as a Python string name may hold them. */
static int ident_len(const char *p)
{
    unsigned char c = (unsigned char)*p;
    return c < 0x80 ? isalnum(c) || c == '_' : nd_name_char_len(p);
}

static bool ident_char(const char *p) { return ident_len(p) > 0; }

/* Consumes the keyword w when it is next as a whole word. */
static bool accept_word(lexer *lx, const char *w)
{
    size_t n = strlen(w);
    blanks(lx);
    if (strncmp(lx->p, w, n) != 0 || ident_char(lx->p + n))
        return false;
    lx->p += n;
    return true;
}

/* Skips a module path before a constructor's name, as pasted from code: "jax.sharding." before
 * PartitionSpec, "torch.distributed.tensor." before Shard. Nothing when no '.' follows a name. */
static void skip_qualifier(lexer *lx)
{
    blanks(lx);
    const char *p = lx->p, *after = NULL;
    while (ident_char(p) && !isdigit((unsigned char)*p)) { /* a name: a letter or '_' first */
        for (int k; (k = ident_len(p)) > 0;)
            p += k;
        if (*p != '.')
            break;
        after = ++p;
    }
    if (after && ident_char(after) && !isdigit((unsigned char)*after))
        lx->p = after;
}

/* A name, bare or in single or double quotes. */
static int take_ident(lexer *lx, char *out)
{
    blanks(lx);
    char q = *lx->p == '\'' || *lx->p == '"' ? *lx->p++ : 0;
    const char *start = lx->p;
    for (int k; (k = ident_len(lx->p)) > 0;)
        lx->p += k;
    size_t n = (size_t)(lx->p - start);
    if (n == 0 || isdigit((unsigned char)*start)) {
        lx->p = start;
        return lex_fail(lx, "expected a mesh axis name");
    }
    if (n >= ND_MESH_NAME) {
        lx->p = start;
        return lex_fail(lx, "name longer than %d bytes", ND_MESH_NAME - 1);
    }
    memcpy(out, start, n);
    out[n] = '\0';
    if (q && *lx->p++ != q) {
        --lx->p;
        return lex_fail(lx, "expected the closing quote %c", q);
    }
    return 0;
}

static int take_int(lexer *lx, int64_t lo, int64_t hi, int64_t *out)
{
    blanks(lx);
    const char *start = lx->p;
    bool neg = *lx->p == '-';
    lx->p += neg;
    int64_t v = 0;
    if (!isdigit((unsigned char)*lx->p))
        return lex_fail(lx, "expected a number");
    while (isdigit((unsigned char)*lx->p)) {
        v = v * 10 + (*lx->p++ - '0');
        if (v > ((int64_t)1 << 40)) {
            lx->p = start;
            return lex_fail(lx, "number out of range %lld..%lld", (long long)lo, (long long)hi);
        }
    }
    v = neg ? -v : v;
    if (v < lo || v > hi) {
        lx->p = start;
        return lex_fail(lx, "%lld is out of range %lld..%lld", (long long)v, (long long)lo, (long long)hi);
    }
    *out = v;
    return 0;
}

static int at_end(lexer *lx)
{
    blanks(lx);
    return *lx->p ? lex_fail(lx, "unexpected '%.*s'", nd_char_len(lx->p), lx->p) : 0;
}

static int axis_by_name(const nd_sharding *sh, const char *name)
{
    for (int i = 0; i < sh->naxes; ++i)
        if (strcmp(sh->axes[i].name, name) == 0)
            return i;
    return -1;
}

/* ---------------------------------------------------------------- mesh */

static int mesh_axis(lexer *lx, nd_sharding *sh, bool *named)
{
    nd_mesh_axis *a = &sh->axes[sh->naxes];
    blanks(lx);
    bool has_name = !isdigit((unsigned char)*lx->p);
    if (sh->naxes > 0 && has_name != *named)
        return lex_fail(lx, "name every mesh axis or none");
    *named = has_name;
    if (has_name && (take_ident(lx, a->name) || expect(lx, '=')))
        return -1;
    if (has_name && axis_by_name(sh, a->name) >= 0)
        return lex_fail(lx, "mesh axis '%s' named twice", a->name);
    if (take_int(lx, 1, 1 << 30, &a->size))
        return -1;
    a->kind = ND_MESH_REPLICATE;
    a->dim = -1;
    ++sh->naxes;
    return 0;
}

int nd_mesh_parse(const char *text, nd_sharding *out, nd_error *err)
{
    lexer lx = {"mesh", text, text, err};
    bool named = false;
    memset(out, 0, sizeof *out);
    blanks(&lx);
    if (!*lx.p) /* no axes: a mesh of one device */
        return 0;
    do {
        if (out->naxes == ND_MAX_MESH)
            return lex_fail(&lx, "more than %d mesh axes", ND_MAX_MESH);
        if (mesh_axis(&lx, out, &named))
            return -1;
    } while (accept(&lx, ',') || accept(&lx, 'x'));
    if (at_end(&lx))
        return -1;
    if (nd_sharding_devices(out) > (1 << 30))
        return nd_fail(err, "mesh '%s': more than 2^30 devices", text);
    return 0;
}

/* Every axis Replicate, no dim split: the state a PartitionSpec or placements start from. */
static void clear_roles(nd_sharding *sh, int rank)
{
    sh->rank = rank;
    memset(sh->nsplit, 0, sizeof sh->nsplit);
    for (int i = 0; i < sh->naxes; ++i) {
        sh->axes[i].kind = ND_MESH_REPLICATE;
        sh->axes[i].dim = -1;
        sh->axes[i].reduced = false;
    }
}

static int check_rank(const char *what, const char *text, int rank, nd_error *err)
{
    if (rank < 1 || rank > ND_MAX_RANK)
        return nd_fail(err, "%s '%s': rank %d is out of range 1..%d", what, text, rank, ND_MAX_RANK);
    return 0;
}

/* ---------------------------------------------------------------- PartitionSpec */

/* One mesh axis of a PartitionSpec entry or unreduced set, by name; each used once. */
static int pspec_axis(lexer *lx, nd_sharding *sh, int *axis)
{
    char name[ND_MESH_NAME];
    const char *at;
    blanks(lx);
    at = lx->p;
    if (take_ident(lx, name))
        return -1;
    *axis = axis_by_name(sh, name);
    if (*axis < 0) {
        char mesh[512];
        nd_mesh_format(sh, mesh, sizeof mesh);
        lx->p = at;
        return lex_fail(lx, "mesh axis '%s' is not in the mesh %s", name, mesh);
    }
    if (sh->axes[*axis].kind != ND_MESH_REPLICATE || sh->axes[*axis].reduced) {
        lx->p = at;
        return lex_fail(lx, "mesh axis '%s' used twice (a partition, unreduced and reduced cannot overlap)", name);
    }
    return 0;
}

static int pspec_split(lexer *lx, nd_sharding *sh, int dim)
{
    int axis;
    if (pspec_axis(lx, sh, &axis))
        return -1;
    sh->axes[axis].kind = ND_MESH_SHARD;
    sh->axes[axis].dim = dim;
    sh->split[dim][sh->nsplit[dim]++] = (int8_t)axis;
    return 0;
}

/* None, a name, or a tuple or list of names (major first; JAX makes a list a tuple). */
static int pspec_entry(lexer *lx, nd_sharding *sh, int dim)
{
    if (accept_word(lx, "None"))
        return 0;
    char close = accept(lx, '(') ? ')' : accept(lx, '[') ? ']' : 0;
    if (!close)
        return pspec_split(lx, sh, dim);
    while (!accept(lx, close)) {
        if (pspec_split(lx, sh, dim))
            return -1;
        if (!accept(lx, ',') && (blanks(lx), *lx->p != close))
            return lex_fail(lx, "expected ',' or '%c'", close);
    }
    return 0;
}

/* unreduced={'y', 'z'} (pending reductions) or reduced={'y'} (replicated): a set of mesh axes. */
static int pspec_axis_set(lexer *lx, nd_sharding *sh, bool unreduced)
{
    const char *what = unreduced ? "unreduced" : "reduced";
    bool frozen = accept_word(lx, "frozenset"); /* JAX takes a set or a frozenset, nothing else */
    if (frozen && expect(lx, '('))
        return -1;
    char close = accept(lx, '{') ? '}' : 0;
    if (!close)
        return lex_fail(lx, "%s= takes a set of mesh axes, such as {'tp'}", what);
    while (!accept(lx, close)) {
        int axis;
        if (accept_word(lx, "None"))
            return lex_fail(lx, "%s cannot contain None; name mesh axes", what);
        if (pspec_axis(lx, sh, &axis))
            return -1;
        if (unreduced) {
            sh->axes[axis].kind = ND_MESH_PARTIAL;
            sh->axes[axis].reduce = ND_REDUCE_SUM; /* unreduced_kind may change it */
        }
        sh->axes[axis].reduced = !unreduced;
        if (!accept(lx, ',') && (blanks(lx), *lx->p != close))
            return lex_fail(lx, "expected ',' or '%c'", close);
    }
    return frozen ? expect(lx, ')') : 0;
}

/* unreduced_kind=max: JAX's UnreducedKind, bare, quoted or qualified (UnreducedKind.max). */
static int pspec_unreduced_kind(lexer *lx, nd_reduce *kind)
{
    char name[ND_MESH_NAME];
    blanks(lx);
    const char *at = lx->p;
    for (const char *p = lx->p; ident_char(p) || *p == '.'; p += *p == '.' ? 1 : ident_len(p))
        if (*p == '.')
            lx->p = p + 1; /* jax.sharding.UnreducedKind.max: the last part */
    char quote = *lx->p == '\'' || *lx->p == '"' ? *lx->p++ : 0;
    if (take_ident(lx, name) || (quote && expect(lx, quote)))
        return -1;
    int r = nd_reduce_parse(name);
    if (r >= 0 && nd_reduce_jax((nd_reduce)r)) {
        *kind = (nd_reduce)r;
        return 0;
    }
    lx->p = at;
    char list[64];
    return lex_fail(lx, "unreduced_kind '%s': JAX's UnreducedKind is %s", name, nd_reduce_list(list, sizeof list, true));
}

typedef struct pspec_keywords {
    bool unreduced, reduced, kind; /* which were given */
    nd_reduce unreduced_kind;
} pspec_keywords;

/* One keyword argument of P(...), or 0 with nothing consumed when none is next. */
static int pspec_keyword(lexer *lx, nd_sharding *sh, pspec_keywords *kw, bool *taken)
{
    const char *at = (blanks(lx), lx->p);
    bool *given = accept_word(lx, "unreduced_kind") ? &kw->kind
                  : accept_word(lx, "unreduced")    ? &kw->unreduced
                  : accept_word(lx, "reduced")      ? &kw->reduced
                                                    : NULL;
    *taken = given != NULL;
    if (!given)
        return 0;
    if (*given) {
        lx->p = at;
        return lex_fail(lx, "keyword argument given twice");
    }
    *given = true;
    if (expect(lx, '='))
        return -1;
    if (given == &kw->kind)
        return pspec_unreduced_kind(lx, &kw->unreduced_kind);
    return pspec_axis_set(lx, sh, given == &kw->unreduced);
}

static int pspec_entries(lexer *lx, nd_sharding *sh, int rank, char close)
{
    int dim = 0;
    pspec_keywords kw = {false, false, false, ND_REDUCE_SUM};
    blanks(lx);
    while (*lx->p && *lx->p != close) {
        bool keyword;
        if (pspec_keyword(lx, sh, &kw, &keyword))
            return -1;
        if (keyword)
            ;
        else if (kw.unreduced || kw.reduced || kw.kind)
            return lex_fail(lx, "a dim's entry after keyword arguments");
        else if (dim == rank)
            return lex_fail(lx, "longer than the tensor's rank %d", rank);
        else if (pspec_entry(lx, sh, dim++))
            return -1;
        if (!accept(lx, ','))
            break;
        blanks(lx);
    }
    if (kw.kind && !kw.unreduced)
        return lex_fail(lx, "unreduced_kind without unreduced={...}: JAX requires an unreduced axis for it");
    for (int i = 0; i < sh->naxes; ++i)
        if (sh->axes[i].kind == ND_MESH_PARTIAL)
            sh->axes[i].reduce = kw.unreduced_kind;
    return 0;
}

int nd_pspec_parse(const char *text, int rank, nd_sharding *sh, nd_error *err)
{
    lexer lx = {"PartitionSpec", text, text, err};
    if (check_rank(lx.what, text, rank, err))
        return -1;
    clear_roles(sh, rank);
    sh->notation = ND_NOTATION_PSPEC;
    skip_qualifier(&lx); /* jax.sharding.PartitionSpec(...), jax.P(...) */
    bool wrapped = accept_word(&lx, "PartitionSpec") || accept_word(&lx, "P");
    if (wrapped && expect(&lx, '('))
        return -1;
    if (pspec_entries(&lx, sh, rank, wrapped ? ')' : '\0') || (wrapped && expect(&lx, ')')))
        return -1;
    return at_end(&lx);
}

static void put(char *buf, size_t len, int *n, const char *s) { nd_appendf(buf, len, n, "%s", s); }

/* ", unreduced={'a', 'b'}" or ", reduced={'c'}": the axes with that role, in mesh order; their count. */
static int pspec_format_set(const nd_sharding *sh, bool unreduced, char *buf, size_t len, int *n)
{
    char name[ND_MESH_NAME + 8], item[ND_MESH_NAME + 24];
    int count = 0;
    for (int i = 0; i < sh->naxes; ++i) {
        const nd_mesh_axis *a = &sh->axes[i];
        if (unreduced ? a->kind != ND_MESH_PARTIAL : a->kind != ND_MESH_REPLICATE || !a->reduced)
            continue;
        snprintf(item, sizeof item, "%s'%s'", count++ ? ", " : unreduced ? ", unreduced={" : ", reduced={",
                 nd_mesh_axis_name(sh, i, name, sizeof name));
        put(buf, len, n, item);
    }
    put(buf, len, n, count ? "}" : "");
    return count;
}

/* The one UnreducedKind of the Partial axes, or -1 with err set when they have none. */
static int pspec_kind(const nd_sharding *sh, nd_error *err)
{
    char name[ND_MESH_NAME + 8];
    int kind = -1;
    for (int i = 0; i < sh->naxes; ++i) {
        const nd_mesh_axis *a = &sh->axes[i];
        if (a->kind != ND_MESH_PARTIAL)
            continue;
        char list[64];
        if (!nd_reduce_jax(a->reduce))
            return nd_fail(err, "Partial(%s) on mesh axis '%s' has no PartitionSpec form: JAX's unreduced_kind is "
                                "%s", nd_reduce_name(a->reduce), nd_mesh_axis_name(sh, i, name, sizeof name),
                           nd_reduce_list(list, sizeof list, true));
        if (kind >= 0 && (int)a->reduce != kind)
            return nd_fail(err, "mesh axes pending %s and %s: a PartitionSpec has one unreduced_kind",
                           nd_reduce_name((nd_reduce)kind), nd_reduce_name(a->reduce));
        kind = (int)a->reduce;
    }
    return kind < 0 ? ND_REDUCE_SUM : kind;
}

int nd_pspec_format(const nd_sharding *sh, char *buf, size_t len, nd_error *err)
{
    char name[ND_MESH_NAME + 8], item[ND_MESH_NAME + 16];
    int n = 0, kind = pspec_kind(sh, err);
    if (kind < 0)
        return -1;
    put(buf, len, &n, "P(");
    for (int d = 0; d < sh->rank; ++d) {
        put(buf, len, &n, d ? ", " : "");
        put(buf, len, &n, sh->nsplit[d] == 0 ? "None" : sh->nsplit[d] > 1 ? "(" : "");
        for (int k = 0; k < sh->nsplit[d]; ++k) {
            snprintf(item, sizeof item, "%s'%s'", k ? ", " : "", nd_mesh_axis_name(sh, sh->split[d][k], name, sizeof name));
            put(buf, len, &n, item);
        }
        put(buf, len, &n, sh->nsplit[d] > 1 ? ")" : "");
    }
    int unreduced = pspec_format_set(sh, true, buf, len, &n);
    pspec_format_set(sh, false, buf, len, &n);
    if (unreduced) /* JAX prints the kind with every unreduced set */
        nd_appendf(buf, len, &n, ", unreduced_kind=%s", nd_reduce_name((nd_reduce)kind));
    put(buf, len, &n, ")");
    return n;
}

/* ---------------------------------------------------------------- DTensor placements */

/* Partial's reduce op: "", "sum", "reduce_op=sum" or "reduce_op='sum'" (DTensor's printed form). */
static int reduce_op(lexer *lx, nd_reduce *out)
{
    char name[ND_MESH_NAME];
    *out = ND_REDUCE_SUM;
    blanks(lx);
    if (*lx->p == ')')
        return 0;
    if (accept_word(lx, "reduce_op") && expect(lx, '='))
        return -1;
    const char *at = (blanks(lx), lx->p);
    char quote = *lx->p == '\'' || *lx->p == '"' ? *lx->p++ : 0;
    if (take_ident(lx, name) || (quote && expect(lx, quote)))
        return -1;
    int r = nd_reduce_parse(name);
    if (r >= 0) {
        *out = (nd_reduce)r;
        return 0;
    }
    lx->p = at;
    char list[64];
    return lex_fail(lx, "unknown reduction '%s'; expected %s", name, nd_reduce_list(list, sizeof list, false));
}

/* _StridedShard's arguments after the dim: ", sf=k" (its repr), ", split_factor=k" or ", k". */
static int split_factor(lexer *lx, int64_t *sf)
{
    if (expect(lx, ','))
        return -1;
    if ((accept_word(lx, "sf") || accept_word(lx, "split_factor")) && expect(lx, '='))
        return -1;
    return take_int(lx, 1, 1 << 30, sf);
}

/* One placement; sf[axis] receives a _StridedShard's split factor (0 for the others). Names may be
 * qualified (torch.distributed.tensor.Shard). */
static int placement(lexer *lx, nd_sharding *sh, int axis, int64_t *sf)
{
    nd_mesh_axis *a = &sh->axes[axis];
    sf[axis] = 0;
    skip_qualifier(lx);
    if (accept_word(lx, "Replicate"))
        return expect(lx, '(') || expect(lx, ')');
    if (accept_word(lx, "Partial")) {
        a->kind = ND_MESH_PARTIAL;
        return expect(lx, '(') || reduce_op(lx, &a->reduce) || expect(lx, ')');
    }
    bool strided = accept_word(lx, "_StridedShard");
    if (!strided && !accept_word(lx, "Shard"))
        return lex_fail(lx, "expected Shard(d), _StridedShard(d, sf=k), Replicate() or Partial()");
    int64_t d;
    if (expect(lx, '(') || (accept_word(lx, "dim") && expect(lx, '=')) || /* DTensor prints Shard(dim=0) */
        take_int(lx, -sh->rank, sh->rank - 1, &d) || (strided && split_factor(lx, &sf[axis])) || expect(lx, ')'))
        return -1;
    a->kind = ND_MESH_SHARD;
    a->dim = (int)(d < 0 ? d + sh->rank : d);
    sh->split[a->dim][sh->nsplit[a->dim]++] = (int8_t)axis; /* in mesh order, as DTensor splits */
    return 0;
}

/*
 * _StridedShard(dim=d, sf=k) on mesh axis a (DTensor, for FSDP2 over tensor parallelism): the dim is cut
 * into size(a) * k chunks and a's coordinate i holds chunks i, i + size(a), ...; the Shard(d) axes after
 * a then split that, so the axes after a are major and a is minor, the split P((later..., a)) states.
 * ndgen places it when k is the product of the sizes of the Shard(d) axes after a, as FSDP2 prints it
 * (k = the tensor-parallel size), one per dim; split[d] is reordered to (earlier..., later..., a).
 */
static int resolve_strided(lexer *lx, nd_sharding *sh, const int64_t *sf)
{
    for (int d = 0; d < sh->rank; ++d) {
        int at = -1, n = sh->nsplit[d];
        for (int k = 0; k < n; ++k) {
            int axis = sh->split[d][k];
            if (sf[axis] == 0)
                continue;
            if (at >= 0)
                return nd_fail(lx->err, "placements '%s': dim %d has two _StridedShard placements; ndgen (as "
                                        "DTensor's redistribution) takes one per dim", lx->text, d);
            at = k;
        }
        if (at < 0)
            continue;
        int axis = sh->split[d][at];
        int64_t later = 1;
        for (int k = at + 1; k < n; ++k)
            later *= sh->axes[sh->split[d][k]].size;
        if (later != sf[axis])
            return nd_fail(lx->err, "placements '%s': _StridedShard(dim=%d, sf=%lld) on mesh axis %d: the Shard(%d) "
                                    "axes after it have %lld pieces in all, not %lld; ndgen places a _StridedShard "
                                    "whose split factor is that product (as FSDP2 over tensor parallelism prints it)",
                           lx->text, d, (long long)sf[axis], axis, d, (long long)later, (long long)sf[axis]);
        memmove(&sh->split[d][at], &sh->split[d][at + 1], (size_t)(n - at - 1) * sizeof sh->split[d][0]);
        sh->split[d][n - 1] = (int8_t)axis;
    }
    return 0;
}

int nd_placements_parse(const char *text, int rank, nd_sharding *sh, nd_error *err)
{
    lexer lx = {"placements", text, text, err};
    int64_t sf[ND_MAX_MESH];
    if (check_rank(lx.what, text, rank, err))
        return -1;
    clear_roles(sh, rank);
    sh->notation = ND_NOTATION_PLACEMENTS;
    char close = accept(&lx, '[') ? ']' : accept(&lx, '(') ? ')' : '\0';
    int axis = 0;
    for (blanks(&lx); *lx.p && *lx.p != close; blanks(&lx)) {
        if (axis == sh->naxes)
            return lex_fail(&lx, "more placements than the mesh's %d axes", sh->naxes);
        if (placement(&lx, sh, axis++, sf))
            return -1;
        if (!accept(&lx, ','))
            break;
    }
    if ((close && expect(&lx, close)) || at_end(&lx))
        return -1;
    if (axis != sh->naxes)
        return nd_fail(err, "placements '%s': %d placements for a mesh of %d axes; give one per mesh axis", text,
                       axis, sh->naxes);
    return resolve_strided(&lx, sh, sf);
}

/* The axis of dim d's split that DTensor gives as _StridedShard, and in *sf its split factor; -1 when the
 * split is in mesh order (plain Shards); -2 when no placements say it. The inverse of resolve_strided:
 * the split is (earlier..., later..., a), ascending but for a, every earlier axis below a and every
 * later one above. */
static int strided_axis(const nd_sharding *sh, int d, int64_t *sf)
{
    int n = sh->nsplit[d];
    const int8_t *L = sh->split[d];
    bool ascending = true;
    for (int k = 1; k < n; ++k)
        ascending &= L[k - 1] < L[k];
    if (ascending)
        return -1;
    int a = L[n - 1], p = 0;
    for (int k = 1; k < n - 1; ++k)
        if (L[k - 1] > L[k])
            return -2;
    while (p < n - 1 && L[p] < a)
        ++p;
    *sf = 1;
    for (int k = p; k < n - 1; ++k)
        *sf *= sh->axes[L[k]].size;
    return a;
}

int nd_placements_format(const nd_sharding *sh, char *buf, size_t len, nd_error *err)
{
    char item[64];
    int n = 0, strided[ND_MAX_RANK];
    int64_t sf[ND_MAX_RANK];
    for (int d = 0; d < sh->rank; ++d)
        if ((strided[d] = strided_axis(sh, d, &sf[d])) == -2)
            return nd_fail(err, "dim %d is split by its mesh axes in an order DTensor placements cannot state (in "
                                "mesh order, or with one _StridedShard last)", d);
    put(buf, len, &n, "[");
    for (int i = 0; i < sh->naxes; ++i) {
        const nd_mesh_axis *a = &sh->axes[i];
        if (a->kind == ND_MESH_SHARD && strided[a->dim] == i)
            snprintf(item, sizeof item, "_StridedShard(dim=%d, sf=%lld)", a->dim, (long long)sf[a->dim]);
        else if (a->kind == ND_MESH_SHARD)
            snprintf(item, sizeof item, "Shard(%d)", a->dim);
        else if (a->kind == ND_MESH_PARTIAL)
            snprintf(item, sizeof item, "Partial(%s)", nd_reduce_name(a->reduce));
        else
            snprintf(item, sizeof item, "Replicate()");
        put(buf, len, &n, i ? ", " : "");
        put(buf, len, &n, item);
    }
    put(buf, len, &n, "]");
    return n;
}
