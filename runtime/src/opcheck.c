/*
 * opcheck.c - a launch's tensors against its op's index notation and dtypes, before any kernel runs.
 *
 * Each operand's index names its axes: letters, and at most one "..." standing for any number of
 * leading, trailing or middle axes. A letter has one size across all operands (an einsum whose axis
 * sizes disagree is refused). The "..." parts of the inputs broadcast numpy-style (aligned on the right,
 * each dim equal or 1), and an output's "..." part must be exactly the broadcast shape.
 */
#include <stdio.h>
#include <string.h>

#include "runtime_internal.h"

typedef struct letters {
    int64_t size[128]; /* by letter; 0 = unbound */
    int operand[128];  /* the operand that bound it */
} letters;

static const char *shape_text(char *buf, size_t len, const int64_t *d, int n)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n && k < len; ++i)
        k += (size_t)snprintf(buf + k, len - k, i ? ",%lld" : "%lld", (long long)d[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

/* Binds operand i's letters; writes its "..." dims to ell (count *nell). */
static int bind(const nda_kernel_entry *e, int i, const nd_dist *d, letters *ax, int64_t *ell, int *nell, nd_error *err)
{
    const char *ix = e->indices[i], *dots = strstr(ix, "...");
    int r = d->spec.rank, before = dots ? (int)(dots - ix) : (int)strlen(ix), after = dots ? (int)strlen(dots + 3) : 0;
    if (dots ? r < before + after : r != before)
        return nd_fail(err, "op '%s': operand '%s' has rank %d, but its index '%s' needs %s%d axes", e->op,
                       e->operands[i], r, ix, dots ? "at least " : "", before + after);
    *nell = r - before - after;
    memcpy(ell, d->spec.shape + before, (size_t)*nell * sizeof *ell);
    for (int k = 0; k < before + after; ++k) {
        unsigned char letter = (unsigned char)(k < before ? ix[k] : dots[3 + k - before]);
        int64_t size = d->spec.shape[k < before ? k : r - after + (k - before)];
        if (ax->size[letter] && ax->size[letter] != size)
            return nd_fail(err, "op '%s': axis '%c' is %lld in operand '%s' but %lld in operand '%s'", e->op, letter,
                           (long long)ax->size[letter], e->operands[ax->operand[letter]], (long long)size,
                           e->operands[i]);
        ax->size[letter] = size;
        ax->operand[letter] = i;
    }
    return 0;
}

/* Folds input shape s (n dims) into the broadcast shape b (*nb dims), numpy-style. */
static int broadcast(const nda_kernel_entry *e, int i, const int64_t *s, int n, int64_t *b, int *nb, nd_error *err)
{
    char x[256], y[256];
    int64_t out[ND_MAX_RANK];
    int m = n > *nb ? n : *nb;
    for (int k = 0; k < m; ++k) {
        int64_t u = k < m - n ? 1 : s[k - (m - n)], v = k < m - *nb ? 1 : b[k - (m - *nb)];
        if (u != v && u != 1 && v != 1)
            return nd_fail(err, "op '%s': operand '%s' has '...' dims %s, which do not broadcast with %s", e->op,
                           e->operands[i], shape_text(x, sizeof x, s, n), shape_text(y, sizeof y, b, *nb));
        out[k] = u == 1 ? v : u;
    }
    memcpy(b, out, (size_t)m * sizeof *b);
    *nb = m;
    return 0;
}

int nd_op_check(const nda_kernel_entry *e, nd_tensor *const *tensors, int n, nd_error *err)
{
    letters ax;
    int64_t b[ND_MAX_RANK], ell[ND_MAX_RANK];
    int nb = 0, nell = 0;
    char x[256], y[256];
    memset(&ax, 0, sizeof ax);
    for (int i = 0; i < n; ++i) {
        const nd_dist *d = nd_tensor_dist(tensors[i]);
        if (strcmp(nd_dtype_name(d->spec.dtype), e->dtypes[i]) != 0)
            return nd_fail(err, "op '%s': operand '%s' is %s, but the op takes %s there", e->op, e->operands[i],
                           nd_dtype_name(d->spec.dtype), e->dtypes[i]);
        if (d->spec.parts > 1 && !(e->partial >> i & 1u))
            return nd_fail(err, "op '%s': operand '%s' is Partial, a pending sum of %d parts, but the op takes it "
                                "whole; resolve it first with all_reduce or reduce_scatter", e->op, e->operands[i],
                           (int)d->spec.parts);
        if (bind(e, i, d, &ax, ell, &nell, err))
            return -1;
        bool output = i >= n - e->noutputs;
        if (!output && strstr(e->indices[i], "...") && broadcast(e, i, ell, nell, b, &nb, err))
            return -1;
        /* an op with axis scalars says its output shape through them: see nd_op_check_scalars */
        if (output && !e->scalars && strstr(e->indices[i], "...") && (nell != nb || memcmp(ell, b, (size_t)nb * sizeof *b) != 0))
            return nd_fail(err, "op '%s': output '%s' has '...' dims %s, but the result's are %s", e->op,
                           e->operands[i], shape_text(x, sizeof x, ell, nell), shape_text(y, sizeof y, b, nb));
    }
    return 0;
}

/* ---------------------------------------------------------------- axis scalars */

/* The scalars as distinct axes of a rank-r tensor; -1 when they are not. */
static int read_axes(const double *scalars, int n, int r, int *axes)
{
    bool seen[ND_MAX_RANK] = {false};
    for (int i = 0; i < n; ++i) {
        double v = scalars[i];
        if (v != (double)(int)v || v < 0 || v >= r || seen[(int)v])
            return -1;
        axes[i] = (int)v;
        seen[axes[i]] = true;
    }
    return 0;
}

static const char *scalar_text(char *buf, size_t len, const double *s, int n)
{
    size_t k = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < n && k < len; ++i)
        k += (size_t)snprintf(buf + k, len - k, i ? ",%g" : "%g", s[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

static int operand_named(const nda_kernel_entry *e, const char *name, size_t len)
{
    for (int i = 0; i < e->noperands; ++i)
        if (strlen(e->operands[i]) == len && strncmp(e->operands[i], name, len) == 0)
            return i;
    return -1;
}

int nd_op_check_scalars(const nda_kernel_entry *e, nd_tensor *const *tensors, int n, const double *scalars,
                        int nscalars, nd_error *err)
{
    if (!e->scalars)
        return 0;
    const char *open = strchr(e->scalars, '(');
    int x = operand_named(e, open + 1, strlen(open + 1) - 1);
    bool perm = strncmp(e->scalars, "perm", 4) == 0;
    const nd_dist_spec *in = &nd_tensor_dist(tensors[x])->spec, *out = &nd_tensor_dist(tensors[n - 1])->spec;
    int axes[ND_MAX_RANK], r = in->rank;
    int64_t want[ND_MAX_RANK], keep[ND_MAX_RANK];
    char a[256], b[256], c[256], d[256];
    if (nscalars > r || read_axes(scalars, nscalars, r, axes) || (perm && nscalars != r) || (!perm && nscalars == 0))
        return nd_fail(err, "op '%s': scalars %s are not %s of the %d axes of '%s'", e->op,
                       scalar_text(a, sizeof a, scalars, nscalars), perm ? "a permutation" : "distinct axes", r,
                       e->operands[x]);
    int nw = 0;
    for (int i = 0; i < r; ++i) {
        bool reduced = false;
        for (int k = 0; k < nscalars && !perm; ++k)
            reduced |= axes[k] == i;
        keep[i] = reduced ? 1 : in->shape[i];
        if (perm)
            want[nw++] = in->shape[axes[i]];
        else if (!reduced)
            want[nw++] = in->shape[i];
    }
    bool ok = out->rank == nw && memcmp(out->shape, want, (size_t)nw * sizeof *want) == 0;
    ok = ok || (!perm && out->rank == r && memcmp(out->shape, keep, (size_t)r * sizeof *keep) == 0);
    if (!ok)
        return nd_fail(err, "op '%s': output '%s' has shape %s, but %s '%s' by %s gives %s%s%s", e->op,
                       e->operands[n - 1], shape_text(a, sizeof a, out->shape, out->rank),
                       perm ? "permuting" : "reducing", e->operands[x], scalar_text(b, sizeof b, scalars, nscalars),
                       shape_text(c, sizeof c, want, nw), perm ? "" : ", or with keepdims ",
                       perm ? "" : shape_text(d, sizeof d, keep, r));
    return 0;
}
