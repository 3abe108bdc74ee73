/*
 * opcheck.c - a launch's tensors against its op's index notation and dtypes, and a kernel's fixed
 * scalars against the launch's, before any kernel runs.
 *
 * Dtypes and Partial operands are checked here; shapes against the index notation, and what the
 * template requires, by nd_op_check_shapes (nd_dist), which the generator runs on every target too.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime_internal.h"


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
        d[i] = &tensors[i]->dist;
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
        /* A Partial output's parts are stored in its dtype and combined later: in bf16 or f16 each part
         * is rounded first, and a sum (or product) of rounded parts is not the rounded sum; an op that
         * selects one part (max, min) commutes with rounding, which is monotonic. */
        bool output = i >= n - e->noutputs;
        if (output && s->parts > 1 && nd_dtype_floating(s->dtype) && nd_dtype_size(s->dtype) < 4 &&
            !nd_reduce_selects(s->reduce)) /* a narrow floating dtype: bf16, f16 */
            return nd_failc(err, ND_EREFUSED, "op '%s': output '%s' is %s Partial(%s): each of its %d parts would be "
                                              "rounded to %s before they are combined, so the result would not be "
                                              "the %s rounding of the whole %s; make the Partial output f32, or the "
                                              "output whole", e->op, e->operands[i], nd_dtype_name(s->dtype),
                            nd_reduce_name(s->reduce), (int)s->parts, nd_dtype_name(s->dtype), nd_dtype_name(s->dtype),
                            nd_reduce_name(s->reduce));
    }
    nd_op_sig sig = {e->op, e->noperands, e->noutputs, e->operands, e->indices, nd_op_axis_rule(e), e->requires};
    return nd_op_check_shapes(&sig, d, err);
}

/* ---------------------------------------------------------------- scalars */

/* The entry's declaration, parsed; the generator wrote it canonical, so a failure is a corrupt library. */
static int declared(const nda_kernel_entry *e, nd_scalars *s, nd_error *err)
{
    if (nd_scalars_parse(e->scalars, s, err))
        return nd_failc(err, ND_EINVAL, "op '%s': the library's scalar declaration '%s' does not parse", e->op,
                        e->scalars);
    return 0;
}

const char *nd_op_axis_rule(const nda_kernel_entry *e)
{
    nd_scalars s;
    return e->scalars && nd_scalars_parse(e->scalars, &s, NULL) == 0 && nd_scalars_list(&s) >= 0 ? e->scalars : NULL;
}

static int operand_named(const nda_kernel_entry *e, const char *name)
{
    for (int i = 0; i < e->noperands; ++i)
        if (strcmp(e->operands[i], name) == 0)
            return i;
    return -1;
}

int nd_op_check_scalars(const nda_kernel_entry *e, nd_tensor *const *tensors, int n, const double *scalars,
                        int nscalars, nd_error *err)
{
    nd_scalars s;
    if (declared(e, &s, err) || nd_scalars_check(&s, e->op, scalars, nscalars, err))
        return -1;
    int list = nd_scalars_list(&s);
    if (list < 0)
        return 0;
    int x = operand_named(e, s.d[list].of);
    if (x < 0 || n != e->noperands) /* ndgen checks both; a library built otherwise is refused, not trusted */
        return nd_failc(err, ND_EINVAL, "op '%s': the scalar list '%s' is of '%s', %s", e->op, s.d[list].name,
                        s.d[list].of, x < 0 ? "which is not one of the op's operands" : "but the launch's operands differ in number");
    return nd_scalars_check_list(&s.d[list], e->op, e->operands[n - 1], &tensors[x]->dist.spec,
                                 &tensors[n - 1]->dist.spec, scalars + list, nscalars - list, err);
}

int nd_op_scalar_names(const nda_kernel_entry *e, char *buf, size_t len, nd_error *err)
{
    nd_scalars s;
    if (declared(e, &s, err))
        return -1;
    nd_scalars_names(&s, buf, len);
    return 0;
}

/* A kernel that fixed scalar values (nda_kernel_entry.scalar_values) serves only launches giving them;
 * when its list is fixed, exactly that many values. Unknown scalars are served only by kernels fixing none. */
bool nd_kernel_serves_scalars(const nda_kernel_entry *e, const double *v, int n)
{
    if (!e->nscalar_values)
        return true;
    nd_scalars decl;
    if (n < 0 || nd_scalars_parse(e->scalars, &decl, NULL))
        return false;
    int list = nd_scalars_list(&decl), named = list < 0 ? decl.n : list;
    if (e->nscalar_values > named ? n != e->nscalar_values : n < e->nscalar_values)
        return false;
    for (int i = 0; i < e->nscalar_values; ++i) /* to the bit: -0.0 is not 0.0 to a kernel dividing by it */
        if (!isnan(e->scalar_values[i]) && memcmp(&e->scalar_values[i], &v[i], sizeof(double)) != 0)
            return false;
    return true;
}
