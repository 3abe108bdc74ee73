/*
 * emit.c - stage 4: one C file per spec, holding for each op its generic kernel, one specialized
 * kernel per target, and a registry group listing them; plus a make-style depfile.
 *
 * All variants share one translation unit. Each is the template text again, so every file-scope name
 * of the template is #defined to a per-variant name around it, and the kernel to its symbol; the
 * template's own #includes are hoisted to the top, before any renaming, so headers are seen once.
 */
#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ndgen.h"

void ndg_c_name(char *out, size_t len, const char *name)
{
    size_t i = 0;
    for (; name[i] && i + 1 < len; ++i)
        out[i] = isalnum((unsigned char)name[i]) ? name[i] : '_';
    out[i] = '\0';
}

void ndg_c_string(char *out, size_t len, const char *s)
{
    size_t n = 0;
    for (; *s && n + 5 < len; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            n += (size_t)snprintf(out + n, len - n, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            n += (size_t)snprintf(out + n, len - n, "\\%03o", c);
        else
            out[n++] = (char)c;
    }
    out[n] = '\0';
}

/* s inside a C comment: a "*" + "/" would end it, a control character would end the line. */
static void comment_text(char *out, size_t len, const char *s)
{
    size_t n = 0;
    for (; *s && n + 3 < len; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c == '*' && s[1] == '/')
            out[n++] = '*', out[n++] = ' ';
        else
            out[n++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    out[n] = '\0';
}

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
    *load = *store = "";
    switch (dt) {
    case ND_F32: *type = "float"; return;
    case ND_BF16:
        *type = "uint16_t";
        *load = "nda_bf16_to_f32";
        *store = "nda_f32_to_bf16";
        return;
    case ND_I32: *type = "int32_t"; return;
    case ND_U8: *type = "uint8_t"; return;
    }
    *type = "?";
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
    op->params[op->nparams].name = strdup(name);
    op->params[op->nparams++].value = strdup(value);
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
        snprintf(name, sizeof name, "%s%s", names[i], suffix);
        const ndg_tparam *p = declared(t, name);
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

static void emit_header(ndg_buf *b, const ndg_spec *spec, const ndg_template *const *tmpl)
{
    char text[4 * PATH_MAX];
    comment_text(text, sizeof text, spec->path);
    ndg_buf_printf(b, "/*\n * Generated by ndgen %s from the spec %s and the template%s", NDGEN_VERSION, text,
                   spec->nops > 1 ? "s" : "");
    for (int i = 0; i < spec->nops; ++i) {
        bool seen = false;
        for (int k = 0; k < i; ++k)
            seen |= strcmp(tmpl[k]->path, tmpl[i]->path) == 0;
        comment_text(text, sizeof text, spec->ops[i].template_path);
        if (!seen)
            ndg_buf_printf(b, "%s %s", i ? "," : "", text);
    }
    ndg_buf_printf(b, ".\n * Do not edit: edit the spec or the template, and rebuild.\n */\n#include \"nd_accessor.h\"\n");
}

/* nd_<op>__<dtype>__generic or __t<k>; <dtype> lists every operand's dtype when they differ. */
static void symbol_of(char *out, size_t len, const ndg_op *op, int target)
{
    char dt[128] = "";
    bool mixed = false;
    for (int k = 1; k < op->noperands; ++k)
        mixed |= op->operands[k].dtype != op->operands[0].dtype;
    for (int k = 0; k < (mixed ? op->noperands : 1); ++k)
        snprintf(dt + strlen(dt), sizeof dt - strlen(dt), "%s%s", k ? "_" : "", nd_dtype_name(op->operands[k].dtype));
    if (target < 0)
        snprintf(out, len, "nd_%s__%s__generic", op->name, dt);
    else
        snprintf(out, len, "nd_%s__%s__t%d", op->name, dt, target);
}

static void emit_registry_group(ndg_buf *b, const ndg_spec *spec)
{
    char cname[256], sym[256], sig[2048];
    ndg_c_name(cname, sizeof cname, spec->name);
    ndg_buf_printf(b, "\n/* ==== registry */\n");
    for (int i = 0; i < spec->nops; ++i) {
        const ndg_op *op = &spec->ops[i];
        ndg_buf_printf(b, "static const char *const ndk_operands_%d[] = {", i);
        for (int k = 0; k < op->noperands; ++k)
            ndg_buf_printf(b, "%s\"%s\"", k ? ", " : "", op->operands[k].name);
        ndg_buf_printf(b, "};\nstatic const char *const ndk_indices_%d[] = {", i);
        for (int k = 0; k < op->noperands; ++k)
            ndg_buf_printf(b, "%s\"%s\"", k ? ", " : "", op->operands[k].index);
        ndg_buf_printf(b, "};\nstatic const char *const ndk_dtypes_%d[] = {", i);
        for (int k = 0; k < op->noperands; ++k)
            ndg_buf_printf(b, "%s\"%s\"", k ? ", " : "", nd_dtype_name(op->operands[k].dtype));
        ndg_buf_printf(b, "};\n");
        for (int t = 0; t < op->ntargets; ++t) {
            ndg_buf_printf(b, "static const char *const ndk_signatures_%d_%d[] = {\n", i, t);
            for (int k = 0; k < op->noperands; ++k) {
                nd_dist_signature(&op->targets[t].dist[k], sig, sizeof sig);
                ndg_buf_printf(b, "    \"%s\",\n", sig);
            }
            ndg_buf_printf(b, "};\n");
        }
    }
    ndg_buf_printf(b, "static const nda_kernel_entry ndk_entries[] = {\n");
    int n = 0;
    for (int i = 0; i < spec->nops; ++i) {
        const ndg_op *op = &spec->ops[i];
        for (int t = -1; t < op->ntargets; ++t, ++n) {
            symbol_of(sym, sizeof sym, op, t);
            ndg_buf_printf(b, "    {\"%s\", \"%s\", \"%s\", %s, %d, ndk_operands_%d, ", op->name,
                           t < 0 ? "generic" : "specialized", sym, sym, op->noperands, i);
            if (t < 0)
                ndg_buf_printf(b, "NULL, ");
            else
                ndg_buf_printf(b, "ndk_signatures_%d_%d, ", i, t);
            int outputs = 0;
            for (int k = 0; k < op->noperands; ++k)
                outputs += op->operands[k].output;
            ndg_buf_printf(b, "ndk_indices_%d, ndk_dtypes_%d, %d, ", i, i, outputs);
            unsigned partial = 0;
            unsigned long long reduces = 0; /* 8 bits per operand: nda_kernel_entry.partial_reduce */
            for (int k = 0; k < op->noperands; ++k) {
                partial |= (unsigned)(op->operands[k].partial != 0) << k;
                reduces |= (unsigned long long)op->operands[k].partial << 8 * k;
            }
            if (op->scalars)
                ndg_buf_printf(b, "\"%s\", 0x%xu, ", op->scalars, partial);
            else
                ndg_buf_printf(b, "NULL, 0x%xu, ", partial);
            if (op->requires)
                ndg_buf_printf(b, "\"%s\", 0x%llxull},\n", op->requires, reduces);
            else
                ndg_buf_printf(b, "NULL, 0x%llxull},\n", reduces);
        }
    }
    char quoted[1024];
    ndg_c_string(quoted, sizeof quoted, spec->name);
    ndg_buf_printf(b, "};\nconst nda_kernel_group ndk_group_%s = {\"%s\", %d, ndk_entries};\n", cname, quoted, n);
}

/* The make-style dependencies of target, prepared in out (closed, not yet in place). */
static int write_depfile(ndg_output *out, const char *path, const char *target, const ndg_spec *spec,
                         const ndg_template *const *tmpl, nd_error *err)
{
    if (ndg_output_open(out, path, err))
        return -1;
    fprintf(out->fp, "%s:", target);
    for (int i = 0; i < spec->ndeps; ++i)
        fprintf(out->fp, " \\\n  %s", spec->deps[i]);
    for (int i = 0; i < spec->nops; ++i) {
        fprintf(out->fp, " \\\n  %s", tmpl[i]->path);
        for (int k = 0; k < tmpl[i]->ndeps; ++k)
            fprintf(out->fp, " \\\n  %s", tmpl[i]->deps[k]);
    }
    fputc('\n', out->fp);
    return ndg_output_close(out, err);
}

int ndg_touch(const char *path, nd_error *err)
{
    FILE *fp = fopen(path, "w");
    if (!fp || fclose(fp) != 0)
        return nd_fail(err, "%s: cannot write the stamp file", path);
    return 0;
}

static void registry_text(ndg_buf *b, char *const *spec_names, int n);

/* Every variant of every op, in order; ranges gets the byte range of each specialized one. */
static int build_text(ndg_buf *b, const ndg_spec *spec, const ndg_template *const *tmpl, const char *out_path,
                      const ndg_emit_options *o, unsigned (*ranges)[2], int *kernels, nd_error *err)
{
    char sym[256], prefix[32], out_c[4 * PATH_MAX], spec_c[4 * PATH_MAX];
    int nranges = 0;
    ndg_c_string(out_c, sizeof out_c, out_path ? out_path : "<stdout>");
    ndg_c_string(spec_c, sizeof spec_c, spec->path);
    emit_header(b, spec, tmpl);
    *kernels = 0;
    for (int i = 0; i < spec->nops; ++i) {
        const ndg_op *op = &spec->ops[i];
        for (int t = -1; t < op->ntargets; ++t) {
            symbol_of(sym, sizeof sym, op, t);
            snprintf(prefix, sizeof prefix, "ndk%d_", (*kernels)++);
            ndg_variant v = {op, t < 0 ? NULL : &op->targets[t], prefix, sym, out_c, spec_c, o->line_directives};
            unsigned start = (unsigned)b->len;
            if (ndg_rewrite(b, tmpl[i], &v, err))
                return -1;
            if (t >= 0) {
                ranges[nranges][0] = start;
                ranges[nranges++][1] = (unsigned)b->len;
            }
        }
    }
    emit_registry_group(b, spec);
    if (o->library) {
        char *name = spec->name;
        ndg_buf_printf(b, "\n/* ==== library root */\n");
        registry_text(b, &name, 1);
    }
    return nranges;
}

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
        char want = dt == ND_F32 ? 'f' : 'i';
        if (c->elem_class != want || c->elem_size != nd_dtype_size(dt))
            return nd_fail(err, "%s:%d:%d: %s reads operand '%s' as %d-byte %s elements, but op '%s' (%s:%d) declares it "
                                "%s, %d-byte %s; use NDT_T (or NDT_T%d), which ndgen derives from the dtype, or read "
                                "bytes", t->path, c->line, c->col, ndg_call_names[c->kind], op->operands[k].name,
                           c->elem_size, c->elem_class == 'f' ? "floating" : "integer", op->name, spec->path, op->line,
                           nd_dtype_name(dt), nd_dtype_size(dt), want == 'f' ? "floating" : "integer", k);
    }
    return 0;
}

/* Each op's template, analyzed with the op's parameters after its element types are derived. */
static int analyze_ops(ndg_spec *spec, ndg_analyzer *a, const ndg_template **tmpl, nd_error *err)
{
    for (int i = 0; i < spec->nops; ++i) {
        ndg_op *op = &spec->ops[i];
        const ndg_template *defaults;
        if (ndg_template_get(a, op->template_path, NULL, &defaults, err) || check_op(spec, op, defaults, err) ||
            derive_types(spec, op, defaults, err) || ndg_template_get(a, op->template_path, op, &tmpl[i], err))
            return -1;
        if (tmpl[i]->noperands != op->noperands) /* a parameter chose other bindings */
            return check_op(spec, op, tmpl[i], err);
        if (check_elem_types(spec, op, tmpl[i], err))
            return -1;
    }
    return 0;
}

int ndg_emit_spec(ndg_spec *spec, ndg_analyzer *a, const char *out_path, const ndg_emit_options *o,
                  ndg_emitted *out, nd_error *err)
{
    const ndg_template **tmpl = calloc((size_t)spec->nops, sizeof *tmpl);
    int nvariants = 0;
    for (int i = 0; i < spec->nops; ++i)
        nvariants += spec->ops[i].ntargets;
    unsigned (*ranges)[2] = calloc((size_t)nvariants + 1, sizeof *ranges);
    ndg_buf b = {0};
    memset(out, 0, sizeof *out);
    int rc = analyze_ops(spec, a, tmpl, err), nranges = 0;
    if (!rc)
        rc = (nranges = build_text(&b, spec, tmpl, out_path, o, ranges, &out->kernels, err)) < 0;
    /* Translation validation: what was written parses, and no generic accessor call is left in a
     * specialized kernel. */
    if (!rc)
        rc = ndg_validate(a, out_path ? out_path : "generated.c", b.data, b.len, nranges, (const unsigned(*)[2])ranges,
                          err);
    if (!rc && (rc = ndg_output_open(&out->c, out_path, err)) == 0) {
        fwrite(b.data, 1, b.len, out->c.fp);
        rc = ndg_output_close(&out->c, err);
    }
    if (!rc && o->depfile) {
        out->has_depfile = true;
        rc = write_depfile(&out->depfile, o->depfile, o->stamp ? o->stamp : out_path, spec, tmpl, err);
    }
    if (rc)
        ndg_emitted_abort(out);
    ndg_buf_free(&b);
    free(ranges);
    free(tmpl);
    return rc ? -1 : 0;
}

void ndg_emitted_abort(ndg_emitted *e)
{
    ndg_output_abort(&e->c);
    if (e->has_depfile)
        ndg_output_abort(&e->depfile);
    e->has_depfile = false;
}

/* The root registry's text: the symbol nda_kernel_registry over one group per spec name. */
static void registry_text(ndg_buf *b, char *const *spec_names, int n)
{
    char cname[256];
    for (int i = 0; i < n; ++i) {
        ndg_c_name(cname, sizeof cname, spec_names[i]);
        ndg_buf_printf(b, "extern const nda_kernel_group ndk_group_%s;\n", cname);
    }
    ndg_buf_printf(b, "\nstatic const nda_kernel_group *const groups[] = {\n");
    for (int i = 0; i < n; ++i) {
        ndg_c_name(cname, sizeof cname, spec_names[i]);
        ndg_buf_printf(b, "    &ndk_group_%s,\n", cname);
    }
    ndg_buf_printf(b, "};\n\n__attribute__((visibility(\"default\")))\nconst nda_kernel_library nda_kernel_registry = "
                      "{NDA_ABI_VERSION, \"%s\", %d, groups};\n", NDGEN_VERSION, n);
}

int ndg_emit_registry(const char *out_path, char *const *spec_names, int n, nd_error *err)
{
    ndg_buf b = {0};
    ndg_output out;
    ndg_buf_printf(&b, "/* Generated by ndgen %s: the kernel library's registry. Do not edit. */\n"
                       "#include \"nd_accessor.h\"\n\n", NDGEN_VERSION);
    registry_text(&b, spec_names, n);
    int rc = ndg_output_open(&out, out_path, err);
    if (!rc) {
        fwrite(b.data, 1, b.len, out.fp);
        rc = ndg_output_commit(&out, NULL, err);
    }
    ndg_buf_free(&b);
    return rc;
}
