/*
 * opsig.c - distributions against an op's contract: its operands' index notation, and what its
 * template assumes beyond that (requires). The generator checks every target with it when generating,
 * and the runtime every launch, so a kernel never runs on operands it was not written for.
 *
 * Each operand's index names its axes: letters, and at most one "..." standing for any number of
 * leading, trailing or middle axes. A letter has one size across all operands (an einsum whose axis
 * sizes disagree is refused). The "..." parts of the inputs broadcast numpy-style (aligned on the right,
 * each dim equal or 1), and an output's "..." part must be exactly the broadcast shape, unless the op
 * says its output shape through axis scalars (then the launch's scalars are checked instead).
 */
#include <stdio.h>
#include <string.h>

#include "nd_dist.h"

typedef struct letters {
    int64_t size[128]; /* by letter; 0 = unbound */
    int operand[128];  /* the operand that bound it */
} letters;

const char *nd_shape_text(char *buf, size_t len, const int64_t *d, int n)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n && k < len; ++i)
        k += (size_t)snprintf(buf + k, len - k, i ? ",%lld" : "%lld", (long long)d[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

/* Binds operand i's letters; writes its "..." dims to ell (count *nell). */
static int bind(const nd_op_sig *s, int i, const nd_dist *d, letters *ax, int64_t *ell, int *nell, nd_error *err)
{
    const char *ix = s->indices[i], *dots = strstr(ix, "...");
    int r = d->spec.rank, before = dots ? (int)(dots - ix) : (int)strlen(ix), after = dots ? (int)strlen(dots + 3) : 0;
    if (dots ? r < before + after : r != before)
        return nd_fail(err, "op '%s': operand '%s' has rank %d, but its index '%s' needs %s%d axes", s->op,
                       s->operands[i], r, ix, dots ? "at least " : "", before + after);
    *nell = r - before - after;
    memcpy(ell, d->spec.shape + before, (size_t)*nell * sizeof *ell);
    for (int k = 0; k < before + after; ++k) {
        unsigned char letter = (unsigned char)(k < before ? ix[k] : dots[3 + k - before]) & 127u;
        int64_t size = d->spec.shape[k < before ? k : r - after + (k - before)];
        if (ax->size[letter] && ax->size[letter] != size)
            return nd_fail(err, "op '%s': axis '%c' is %lld in operand '%s' but %lld in operand '%s'", s->op, letter,
                           (long long)ax->size[letter], s->operands[ax->operand[letter]], (long long)size,
                           s->operands[i]);
        ax->size[letter] = size;
        ax->operand[letter] = i;
    }
    return 0;
}

/* Folds input shape x (n dims) into the broadcast shape b (*nb dims), numpy-style. */
static int broadcast(const nd_op_sig *s, int i, const int64_t *x, int n, int64_t *b, int *nb, nd_error *err)
{
    char p[256], q[256];
    int64_t out[ND_MAX_RANK];
    int m = n > *nb ? n : *nb;
    for (int k = 0; k < m; ++k) {
        int64_t u = k < m - n ? 1 : x[k - (m - n)], v = k < m - *nb ? 1 : b[k - (m - *nb)];
        if (u != v && u != 1 && v != 1)
            return nd_fail(err, "op '%s': operand '%s' has '...' dims %s, which do not broadcast with %s", s->op,
                           s->operands[i], nd_shape_text(p, sizeof p, x, n), nd_shape_text(q, sizeof q, b, *nb));
        out[k] = u == 1 ? v : u;
    }
    memcpy(b, out, (size_t)m * sizeof *b);
    *nb = m;
    return 0;
}

static int operand_named(const nd_op_sig *s, const char *name, size_t len)
{
    for (int i = 0; i < s->noperands; ++i)
        if (strlen(s->operands[i]) == len && strncmp(s->operands[i], name, len) == 0)
            return i;
    return -1;
}

/* ---------------------------------------------------------------- requires */

/* The relations a template may require of its operands, by name. */
static const struct {
    const char *name;
    bool (*holds)(const nd_dist *, const nd_dist *);
    const char *meaning;
} relations[] = {
    {"same_paging", nd_dist_same_paging, "the same shape and page box"},
};

int nd_op_requires_parse(const char *text, const char *const *operands, int noperands, nd_op_require *out,
                         nd_error *err)
{
    const char *open = strchr(text, '('), *close = strrchr(text, ')');
    if (!open || !close || close[1] != '\0' || close < open)
        return nd_fail(err, "requires '%s': expected RELATION(a, b)", text);
    out->relation = -1;
    for (size_t i = 0; i < sizeof relations / sizeof *relations; ++i)
        if (strlen(relations[i].name) == (size_t)(open - text) && strncmp(text, relations[i].name, (size_t)(open - text)) == 0)
            out->relation = (int)i;
    if (out->relation < 0)
        return nd_fail(err, "requires '%s': unknown relation '%.*s'; known: same_paging", text, (int)(open - text), text);
    const char *p = open + 1;
    for (int k = 0; k < 2; ++k) {
        while (*p == ' ')
            ++p;
        size_t n = strcspn(p, ", )");
        nd_op_sig sig = {.noperands = noperands, .operands = operands};
        out->operand[k] = operand_named(&sig, p, n);
        if (out->operand[k] < 0)
            return nd_fail(err, "requires '%s': '%.*s' is not an operand", text, (int)n, p);
        p += n;
        while (*p == ' ')
            ++p;
        if (*p != (k == 0 ? ',' : ')'))
            return nd_fail(err, "requires '%s': expected RELATION(a, b)", text);
        ++p;
    }
    return 0;
}

/* Each ";"-separated requirement of s holds for d. */
static int check_requires(const nd_op_sig *s, const nd_dist *const *d, nd_error *err)
{
    char one[256];
    for (const char *r = s->requires; r && *r;) {
        size_t n = strcspn(r, ";");
        snprintf(one, sizeof one, "%.*s", (int)n, r);
        nd_op_require q;
        if (nd_op_requires_parse(one, s->operands, s->noperands, &q, err))
            return -1;
        if (!relations[q.relation].holds(d[q.operand[0]], d[q.operand[1]]))
            return nd_fail(err, "op '%s': operands '%s' and '%s' must have %s (the op requires %s)", s->op,
                           s->operands[q.operand[0]], s->operands[q.operand[1]], relations[q.relation].meaning, one);
        r += n + (r[n] == ';');
    }
    return 0;
}

int nd_op_check_shapes(const nd_op_sig *s, const nd_dist *const *d, nd_error *err)
{
    letters ax;
    int64_t b[ND_MAX_RANK], ell[ND_MAX_RANK];
    int nb = 0, nell = 0, n = s->noperands;
    char x[256], y[256];
    memset(&ax, 0, sizeof ax);
    for (int i = 0; i < n; ++i) {
        if (bind(s, i, d[i], &ax, ell, &nell, err))
            return -1;
        bool output = i >= n - s->noutputs;
        if (!output && strstr(s->indices[i], "...") && broadcast(s, i, ell, nell, b, &nb, err))
            return -1;
        if (output && !s->scalars && strstr(s->indices[i], "...") &&
            (nell != nb || memcmp(ell, b, (size_t)nb * sizeof *b) != 0))
            return nd_fail(err, "op '%s': output '%s' has '...' dims %s, but the result's are %s", s->op,
                           s->operands[i], nd_shape_text(x, sizeof x, ell, nell), nd_shape_text(y, sizeof y, b, nb));
    }
    return check_requires(s, d, err);
}
