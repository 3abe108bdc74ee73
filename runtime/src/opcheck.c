/*
 * opcheck.c - a launch's tensors against its op's index notation and dtypes, before any kernel runs.
 *
 * Dtypes and Partial operands are checked here; shapes against the index notation, and what the
 * template requires, by nd_op_check_shapes (nd_dist), which the generator runs on every target too.
 */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "runtime_internal.h"

enum { ND_MAX_OPERANDS_CHECKED = 32 };

/* "sum or max": the reduce ops in mask. */
static const char *reduce_list(char *buf, size_t len, uint32_t mask)
{
    size_t n = 0;
    int seen = 0;
    buf[0] = '\0';
    for (int r = 0; r < ND_REDUCES && n < len; ++r)
        if (mask >> r & 1u)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", seen++ ? " or " : "", nd_reduce_name((nd_reduce)r));
    return seen ? buf : "nothing";
}

int nd_op_check(const nda_kernel_entry *e, nd_tensor *const *tensors, int n, nd_error *err)
{
    const nd_dist *d[ND_MAX_OPERANDS_CHECKED];
    char buf[64];
    if (n > ND_MAX_OPERANDS_CHECKED || n != e->noperands)
        return nd_fail(err, "op '%s': %d tensors for %d operands", e->op, n, e->noperands);
    for (int i = 0; i < n; ++i) {
        d[i] = nd_tensor_dist(tensors[i]);
        if (strcmp(nd_dtype_name(d[i]->spec.dtype), e->dtypes[i]) != 0)
            return nd_failc(err, ND_ENOENT, "op '%s': operand '%s' is %s, but the op takes %s there", e->op,
                            e->operands[i], nd_dtype_name(d[i]->spec.dtype), e->dtypes[i]);
        const nd_dist_spec *s = &d[i]->spec;
        if (s->parts > 1 && !(e->partial >> i & 1u))
            return nd_failc(err, ND_EREFUSED, "op '%s': operand '%s' is Partial, %d parts pending a %s, but the op "
                                              "takes it whole; resolve it first with all_reduce or reduce_scatter",
                            e->op, e->operands[i], (int)s->parts, nd_reduce_name(s->reduce));
        uint32_t takes = (uint32_t)(e->partial_reduce >> 8 * i & 0xffu);
        if (s->parts > 1 && !(takes >> s->reduce & 1u))
            return nd_failc(err, ND_EREFUSED, "op '%s': operand '%s' is Partial(%s), but the op takes Partial "
                                              "operands only pending %s; resolve it first with all_reduce or "
                                              "reduce_scatter", e->op, e->operands[i], nd_reduce_name(s->reduce),
                            reduce_list(buf, sizeof buf, takes));
    }
    nd_op_sig sig = {e->op, e->noperands, e->noutputs, e->operands, e->indices, e->scalars, e->requires};
    return nd_op_check_shapes(&sig, d, err);
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

/* Named scalars, "eps,alpha": exactly one value each. */
static int check_named(const nda_kernel_entry *e, int nscalars, nd_error *err)
{
    int want = 1;
    for (const char *p = e->scalars; *p; ++p)
        want += *p == ',';
    if (nscalars != want)
        return nd_fail(err, "op '%s' takes %d scalar%s (%s), but the launch gives %d", e->op, want, want == 1 ? "" : "s",
                       e->scalars, nscalars);
    return 0;
}

int nd_op_check_scalars(const nda_kernel_entry *e, nd_tensor *const *tensors, int n, const double *scalars,
                        int nscalars, nd_error *err)
{
    if (!e->scalars)
        return nscalars ? nd_fail(err, "op '%s' takes no scalars, but the launch gives %d", e->op, nscalars) : 0;
    if (!strchr(e->scalars, '('))
        return check_named(e, nscalars, err);
    const char *open = strchr(e->scalars, '(');
    int x = operand_named(e, open + 1, strlen(open + 1) - 1);
    assert(x >= 0 && x < n && n == e->noperands); /* the generator checked the rule names an operand */
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
                       e->operands[n - 1], nd_shape_text(a, sizeof a, out->shape, out->rank),
                       perm ? "permuting" : "reducing", e->operands[x], scalar_text(b, sizeof b, scalars, nscalars),
                       nd_shape_text(c, sizeof c, want, nw), perm ? "" : ", or with keepdims ",
                       perm ? "" : nd_shape_text(d, sizeof d, keep, r));
    return 0;
}
