/*
 * bind.c - stage 3: each op of a spec bound to its template, before anything is emitted. The template
 * is analyzed with its own defaults, the op checked against it (operands bound, parameters declared),
 * the op's element types derived from its dtypes (NDT_T, NDT_LOAD, NDT_STORE per operand), the
 * template analyzed again with the op's parameters, and then what only the analysis can tell checked:
 * the element types the template reads pages as, and what a derived reference needs.
 */
#include <stdlib.h>
#include <string.h>

#include "nd_accessor.h"
#include "ndgen.h"

/* The op against its template (analyzed with its defaults): operands bound, parameters declared. */
static int check_op(const ndg_spec *spec, const ndg_op *op, const ndg_template *t, nd_error *err)
{
    const char *file = spec->path;
    if (op->noperands != t->noperands)
        return nd_fail(err, "%s:%d: op '%s': declares %d operands, but template %s binds %d (nda_operand 0..%d)",
                       file, op->line, op->name, op->noperands, t->path, t->noperands, t->noperands - 1);
    for (int i = 0; i < op->nparams; ++i) {
        if (strcmp(op->params[i].name, "INDICES") == 0)
            return nd_fail(err, "%s:%d: op '%s': parameter 'INDICES' comes from the operands' index notation; "
                                "set their 'index' fields instead", file, op->line, op->name);
        bool known = false;
        for (int k = 0; k < t->nparams && !known; ++k)
            known = strcmp(t->params[k].name, op->params[i].name) == 0;
        if (!known) {
            char list[256] = "";
            for (int k = 0; k < t->nparams; ++k)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", t->params[k].name);
            return nd_fail(err, "%s:%d: op '%s': unknown parameter '%s'; template %s declares: %s", file, op->line,
                           op->name, op->params[i].name, t->path, t->nparams ? list : "none");
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- element types from dtypes */

/* How a dtype is stored (NDT_T) and the functions that convert it to and from the type math is done
 * in (NDT_LOAD and NDT_STORE; "" for none): bf16 is stored as uint16_t and computed in f32. */
static void dtype_storage(nd_dtype dt, const char **type, const char **load, const char **store)
{
    *type = nd_dtype_ctype(dt); /* ND_DTYPES */
    *load = nd_dtype_load_name(dt);
    *store = nd_dtype_store_name(dt);
}

static const ndg_tparam *declared(const ndg_template *t, const char *name)
{
    for (int i = 0; i < t->nparams; ++i)
        if (strcmp(t->params[i].name, name) == 0)
            return &t->params[i];
    return NULL;
}

static ndg_param *op_param(ndg_op *op, const char *name)
{
    for (int i = 0; i < op->nparams; ++i)
        if (strcmp(op->params[i].name, name) == 0)
            return &op->params[i];
    return NULL;
}

/* The text between the parentheses of a one-argument macro's "(x)", or "v". */
static void macro_arg(const ndg_tparam *p, char *out, size_t len)
{
    const char *a = p->args;
    size_t n = strlen(a);
    if (n >= 3 && a[0] == '(' && a[n - 1] == ')' && !memchr(a, ',', n))
        snprintf(out, len, "%.*s", (int)(n - 2), a + 1);
    else
        snprintf(out, len, "v");
}

static int add_param(const ndg_spec *spec, ndg_op *op, const char *name, const char *value, nd_error *err)
{
    if (op->nparams == NDG_MAX_PARAMS)
        return nd_fail(err, "%s:%d: op '%s': more than %d parameters with the element types", spec->path, op->line,
                       op->name, NDG_MAX_PARAMS);
    op->params[op->nparams].name = ndg_strdup(name);
    op->params[op->nparams++].value = ndg_strdup(value);
    return 0;
}

/* T (or Tk), LOAD and STORE for dtype dt, unless the spec gives them; a T that disagrees is refused. */
static int derive_type(const ndg_spec *spec, ndg_op *op, const ndg_template *t, const char *suffix, int k, nd_error *err)
{
    const char *type, *conv[2];
    static const char *const names[2] = {"LOAD", "STORE"};
    char name[32];
    nd_dtype dt = op->operands[k].dtype;
    dtype_storage(dt, &type, &conv[0], &conv[1]);
    snprintf(name, sizeof name, "T%s", suffix);
    const ndg_param *given = op_param(op, name);
    if (given && strcmp(given->value, type) != 0)
        return nd_fail(err, "%s:%d: op '%s': parameter %s is '%s', but operand '%s' is %s, stored as %s; leave %s out "
                            "and ndgen derives it from the dtype", spec->path, op->line, op->name, name, given->value,
                       op->operands[k].name, nd_dtype_name(dt), type, name);
    if (!given && add_param(spec, op, name, type, err))
        return -1;
    for (int i = 0; i < 2; ++i) {
        char plain[48];
        snprintf(name, sizeof name, "%s%s", names[i], suffix);
        snprintf(plain, sizeof plain, "%s_PLAIN", name);
        if (op_param(op, plain))
            return nd_fail(err, "%s:%d: op '%s': parameter %s is ndgen's to set (0 where the spec gives its own %s); "
                                "leave it out", spec->path, op->line, op->name, plain, name);
        const ndg_tparam *p = declared(t, name);
        if (p && op_param(op, name) && declared(t, plain) && add_param(spec, op, plain, "0", err))
            return -1;
        if (!p || op_param(op, name))
            continue;
        char x[64], value[128];
        macro_arg(p, x, sizeof x);
        snprintf(value, sizeof value, "%s(%s)", conv[i], x);
        if (add_param(spec, op, name, value, err))
            return -1;
    }
    return 0;
}

/* Each variant's element types follow the operands' dtypes: NDT_T for a template whose operands share
 * one dtype, NDT_T<k> for operand k of a template that declares a type per operand. */
static int derive_types(const ndg_spec *spec, ndg_op *op, const ndg_template *t, nd_error *err)
{
    bool shared = declared(t, "T") != NULL;
    for (int k = 0; k < op->noperands; ++k) {
        char suffix[16];
        snprintf(suffix, sizeof suffix, "%d", k);
        char name[24];
        snprintf(name, sizeof name, "T%s", suffix);
        if (declared(t, name)) {
            if (derive_type(spec, op, t, suffix, k, err))
                return -1;
        } else if (shared && op->operands[k].dtype != op->operands[0].dtype) {
            return nd_fail(err, "%s:%d: op '%s': operands '%s' (%s) and '%s' (%s) differ in dtype, but template %s "
                                "declares one element type NDT_T; declare NDT_T%d (and NDT_T0, ...) for operands of "
                                "their own type", spec->path, op->line, op->name, op->operands[0].name,
                           nd_dtype_name(op->operands[0].dtype), op->operands[k].name,
                           nd_dtype_name(op->operands[k].dtype), t->path, k);
        }
    }
    return shared ? derive_type(spec, op, t, "", 0, err) : 0;
}

static const ndg_tparam *tparam(const ndg_template *t, const char *name)
{
    for (int i = 0; i < t->nparams; ++i)
        if (strcmp(t->params[i].name, name) == 0)
            return &t->params[i];
    return NULL;
}

/* Arguments of a function-like macro's "(x, y)": the count, or -1 for an object-like macro. */
static int macro_arity(const char *args)
{
    if (!args || args[0] != '(')
        return -1;
    int n = 1;
    for (const char *p = args; *p; ++p)
        n += *p == ',';
    return n;
}

/* reference = "elementwise" needs a template with one stored type NDT_T, its conversions and NDT_EXPR
 * taking one argument per input: the same macros the kernel computes with. */
static int check_reference(const ndg_spec *spec, const ndg_op *op, const ndg_template *t, nd_error *err)
{
    if (!op->reference || op->reference_source)
        return 0;
    int nin = op->noperands - 1;
    const ndg_tparam *e = tparam(t, "EXPR");
    if (!tparam(t, "T") || !tparam(t, "LOAD") || !tparam(t, "STORE") || !e || macro_arity(e->args) != nin)
        return nd_fail(err, "%s:%d: op '%s': reference \"elementwise\" is derived from the template's NDT_T, NDT_LOAD, "
                            "NDT_STORE and NDT_EXPR with one argument per input (%d here), but %s declares %s%s%s", spec->path,
                       op->line, op->name, nin, t->path, e ? "NDT_EXPR" : "no NDT_EXPR", e ? e->args : "",
                       tparam(t, "T") && tparam(t, "LOAD") && tparam(t, "STORE") ? "" : " and not all of NDT_T, NDT_LOAD, NDT_STORE");
    return 0;
}

/* Each op's template, analyzed with the op's parameters after its element types are derived, and
 * checked against the op. */
/* The first wall on element types: where the template converts a page pointer to a typed pointer, the
 * type must be the operand's (same size, floating or integer; bf16 reads as a 2-byte integer) or bytes. */
static int check_elem_types(const ndg_spec *spec, const ndg_op *op, const ndg_template *t, nd_error *err)
{
    for (int i = 0; i < t->ncalls; ++i) {
        const ndg_call *c = &t->calls[i];
        int k = c->kind == NDG_ITER_PTR ? t->loops[c->loop].operand : c->operand;
        if (!c->elem_class || c->elem_class == 'b' || k < 0 || k >= op->noperands)
            continue;
        nd_dtype dt = op->operands[k].dtype;
        char want = nd_dtype_stored_floating(dt) ? 'f' : 'i';
        if (c->elem_class != want || c->elem_size != nd_dtype_size(dt))
            return nd_fail(err, "%s:%d:%d: %s reads operand '%s' as %d-byte %s elements, but op '%s' (%s:%d) declares it "
                                "%s, %d-byte %s; use NDT_T (or NDT_T%d), which ndgen derives from the dtype, or read "
                                "bytes", t->path, c->line, c->col, ndg_call_names[c->kind], op->operands[k].name,
                           c->elem_size, c->elem_class == 'f' ? "floating" : "integer", op->name, spec->path, op->line,
                           nd_dtype_name(dt), nd_dtype_size(dt), want == 'f' ? "floating" : "integer", k);
    }
    return 0;
}

int ndg_bind_ops(ndg_spec *spec, ndg_analyzer *a, const ndg_template **tmpl, nd_error *err)
{
    for (int i = 0; i < spec->nops; ++i) {
        ndg_op *op = &spec->ops[i];
        const ndg_template *defaults;
        if (ndg_template_get(a, op->template_path, NULL, &defaults, err) || check_op(spec, op, defaults, err) ||
            derive_types(spec, op, defaults, err) || ndg_template_get(a, op->template_path, op, &tmpl[i], err))
            return -1;
        if (tmpl[i]->noperands != op->noperands) /* a parameter chose other bindings */
            return check_op(spec, op, tmpl[i], err);
        if (check_elem_types(spec, op, tmpl[i], err) || check_reference(spec, op, tmpl[i], err))
            return -1;
    }
    return 0;
}
