/*
 * emit.c - stage 4: one C file per spec, or with --parts N the spec's variants dealt in order to N files
 * balanced by size, holding for each op its generic kernel, one specialized kernel per target, and
 * (in the first file) a registry group listing them; plus a make-style depfile.
 *
 * Variants in one file share a translation unit. Each is the template text again, its file-scope names
 * renamed per variant and the kernel to its symbol. A template's head (its leading comments and
 * #includes) is printed once per file: the includes at the top, the comments before its first variant,
 * when that cannot change what the headers mean (template_head); otherwise each variant has it all.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nd_accessor.h"
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

void ndg_shown_path(char *out, size_t len, const char *path, const ndg_emit_options *o)
{
    size_t best = 0;
    const char *to = NULL;
    for (int i = 0; i < o->nprefix_maps; ++i) {
        const char *map = o->prefix_maps[i], *eq = strchr(map, '=');
        size_t n = eq ? (size_t)(eq - map) : 0;
        /* path[n] is read only once the first n bytes matched, so path is at least n long */
        if (n > best && strncmp(path, map, n) == 0 && (map[n - 1] == '/' || path[n] == '/' || path[n] == '\0'))
            best = n, to = eq + 1;
    }
    snprintf(out, len, "%s%s", to ? to : "", path + best);
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

/* ---------------------------------------------------------------- the template's head, once per file */

/* The offset after blanks and comments from i. */
static size_t skip_blank(const char *s, size_t n, size_t i)
{
    for (;;) {
        while (i < n && isspace((unsigned char)s[i]))
            ++i;
        if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
            for (i += 2; i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'); ++i)
                ;
            i = i + 1 < n ? i + 2 : n;
        } else if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                ++i;
        } else {
            return i;
        }
    }
}

/* Whether a line at i is `#include <x>` or `#include "x"` on one line; *eol gets its end. */
static bool include_line(const char *s, size_t n, size_t i, size_t *eol)
{
    if (i >= n || s[i] != '#')
        return false;
    size_t j = i + 1;
    while (j < n && (s[j] == ' ' || s[j] == '\t'))
        ++j;
    if (n - j < 7 || strncmp(s + j, "include", 7) != 0)
        return false;
    j += 7;
    while (j < n && (s[j] == ' ' || s[j] == '\t'))
        ++j;
    if (j >= n || (s[j] != '<' && s[j] != '"'))
        return false; /* a computed include depends on macros: left in place */
    size_t e = j;
    while (e < n && s[e] != '\n')
        ++e;
    if (memchr(s + i, '\\', e - i))
        return false; /* continued, or an escape: left in place */
    *eol = e;
    return true;
}

/* Stops the scan at a template parameter (NDT_*) named outside a macro body: text the header's
 * inclusion reads in place, which would take the first variant's value. In a macro body the name is
 * expanded where the macro is used, inside each variant, with that variant's value. */
static int parameter_outside_body(const ndg_ident *id, void *data)
{
    (void)data;
    return !id->body && id->n > 4 && strncmp(id->s, "NDT_", 4) == 0;
}

/* Whether the header at path can be included once at the top of a file instead of in each variant: it
 * names no template parameter outside its macro bodies (parameter_outside_body), and an include guard
 * makes every inclusion after the first a no-op, so the first one alone has effect. */
static bool hoistable_header(const char *path)
{
    char *s;
    size_t n;
    if (ndg_read_text(path, &s, &n))
        return false; /* included where used; the analysis has read it, or says why not */
    bool ok = strlen(s) == n && !ndg_each_ident(s, n, parameter_outside_body, NULL);
    if (ok && !strstr(s, "#pragma once")) { /* #ifndef G / #define G ... #endif, and nothing after */
        char guard[128] = "", def[128] = "";
        size_t i = skip_blank(s, n, 0);
        ok = sscanf(s + i, "#ifndef %127[A-Za-z0-9_]", guard) == 1;
        i = ok ? skip_blank(s, n, (size_t)(strchr(s + i, '\n') ? strchr(s + i, '\n') - s : (ptrdiff_t)n)) : n;
        ok = ok && sscanf(s + i, "#define %127[A-Za-z0-9_]", def) == 1 && strcmp(guard, def) == 0;
        int depth = 1;
        size_t end = n;
        for (size_t k = i; ok && k < n && depth > 0; ++k) { /* directives at line starts */
            if (k > 0 && s[k - 1] != '\n')
                continue;
            size_t j = k;
            while (j < n && (s[j] == ' ' || s[j] == '\t'))
                ++j;
            if (j >= n || s[j] != '#')
                continue;
            ++j;
            while (j < n && (s[j] == ' ' || s[j] == '\t'))
                ++j;
            if (strncmp(s + j, "if", 2) == 0)
                ++depth;
            else if (strncmp(s + j, "endif", 5) == 0 && --depth == 0)
                end = j + 5;
        }
        while (ok && end < n && s[end] != '\n') /* the rest of the #endif line */
            ++end;
        ok = ok && depth == 0 && skip_blank(s, n, end) == n;
    }
    free(s);
    return ok;
}

/* A header of the system or the compiler: guarded, and blind to template parameters. */
static bool system_header(const char *path)
{
    static const char *const dirs[] = {"/usr/include/", "/usr/local/include/", "/usr/lib/"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; ++i)
        if (strncmp(path, dirs[i], strlen(dirs[i])) == 0)
            return true;
    return false;
}

/*
 * Where the template's head ends: its leading comments and #include lines, which a file prints once
 * (the includes at the top, the comments before the template's first variant) instead of in every
 * variant. 0, the whole text in every variant, when a header it includes could mean something else
 * included once (see hoistable_header), or when anything ndgen edits lies in the head.
 */
static unsigned template_head(const ndg_template *t)
{
    const char *s = t->text;
    size_t n = t->len, i = 0, last = 0, eol;
    bool quoted = false;
    for (;;) {
        size_t j = skip_blank(s, n, i);
        if (include_line(s, n, j, &eol)) {
            quoted |= s[j + strcspn(s + j, "<\"")] == '"';
            i = last = eol < n ? eol + 1 : n;
            continue;
        }
        /* the head ends after the last comment or include that is followed by a line break */
        size_t k = j;
        while (k > last && isspace((unsigned char)s[k - 1]))
            --k;
        if (k > last) /* comments after the last include: the head's too */
            last = k;
        break;
    }
    while (last < n && (s[last] == ' ' || s[last] == '\t'))
        ++last;
    if (last < n && s[last] == '\n')
        ++last;
    else if (last > 0 && last < n && s[last - 1] != '\n')
        return 0; /* code on the line a comment ends: keep it whole */
    if (last == 0)
        return 0;
    for (int i2 = 0; i2 < t->ncalls; ++i2)
        if (t->calls[i2].start < last)
            return 0;
    for (int i2 = 0; i2 < t->nloops; ++i2)
        if (t->loops[i2].start < last)
            return 0;
    for (int i2 = 0; i2 < t->nrenames; ++i2)
        if (t->renames[i2].at < last)
            return 0;
    for (int i2 = 0; quoted && i2 < t->ndeps; ++i2)
        if (!system_header(t->deps[i2]) && !hoistable_header(t->deps[i2]))
            return 0;
    return (unsigned)last;
}

/* The #include lines of the head [0, head), appended to the list when new. */
static void collect_includes(const ndg_template *t, unsigned head, char ***list, int *n)
{
    size_t eol;
    for (size_t i = 0; i < head;) {
        size_t j = skip_blank(t->text, head, i);
        if (j >= head || !include_line(t->text, head, j, &eol))
            break;
        char *line = ndg_strndup(t->text + j, eol - j);
        bool seen = false;
        for (int k = 0; k < *n && !seen; ++k)
            seen = strcmp((*list)[k], line) == 0;
        if (seen) {
            free(line);
        } else {
            *list = ndg_realloc(*list, (size_t)(*n + 1) * sizeof **list);
            (*list)[(*n)++] = line;
        }
        i = eol + 1;
    }
}

/* The head's comments, without its #include lines and runs of blank lines. */
static void put_head_comments(ndg_buf *b, const ndg_template *t, unsigned head)
{
    size_t i = 0, eol;
    bool blank = false, printed = false;
    while (i < head) {
        size_t e = i;
        while (e < head && t->text[e] != '\n')
            ++e;
        size_t j = i;
        while (j < e && isspace((unsigned char)t->text[j]))
            ++j;
        if (j == e) {
            blank = true; /* printed before the next line of text, if any */
        } else if (!include_line(t->text, head, j, &eol)) {
            if (blank && b->len && b->data[b->len - 1] == '\n' && printed)
                ndg_buf_put(b, "\n", 1);
            ndg_buf_put(b, t->text + i, e - i);
            ndg_buf_put(b, "\n", 1);
            blank = false;
            printed = true;
        }
        i = e + 1;
    }
}

static void emit_header(ndg_buf *b, const ndg_spec *spec, const ndg_template *const *tmpl, int part, int nparts,
                        const ndg_emit_options *o)
{
    char text[4 * PATH_MAX], shown[2 * PATH_MAX];
    ndg_shown_path(shown, sizeof shown, spec->path, o);
    comment_text(text, sizeof text, shown);
    ndg_buf_printf(b, "/*\n * Generated by ndgen %s from the spec %s and the template%s", NDGEN_VERSION, text,
                   spec->nops > 1 ? "s" : "");
    for (int i = 0; i < spec->nops; ++i) {
        bool seen = false;
        for (int k = 0; k < i; ++k)
            seen |= strcmp(tmpl[k]->path, tmpl[i]->path) == 0;
        ndg_shown_path(shown, sizeof shown, spec->ops[i].template_path, o);
        comment_text(text, sizeof text, shown);
        if (!seen)
            ndg_buf_printf(b, "%s %s", i ? "," : "", text);
    }
    if (nparts > 1)
        ndg_buf_printf(b, ";\n * part %d of %d%s", part, nparts, part == 1 ? ", with the spec's registry group" : "");
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

/* ---------------------------------------------------------------- references */

/* The derived reference of an elementwise op: the op's own parameter #defines (line'd to its op{} call)
 * around a loop over contiguous arrays, straight when no input broadcasts. */
static void emit_eltwise_reference(ndg_buf *b, const ndg_op *op, int i, const ndg_template *t, const char *spec_c,
                                   const char *out_c, bool lines)
{
    char def[4200], args[64] = "", straight[64] = "";
    int nin = op->noperands - 1;
    ndg_buf_printf(b, "\n/* ==== reference of %s (%s): its EXPR over contiguous arrays */\n", op->name,
                   nd_dtype_name(op->operands[nin].dtype));
    if (lines)
        ndg_buf_printf(b, "#line %d \"%s\"\n", op->line, spec_c);
    for (int k = 0; k < op->nparams; ++k) {
        ndg_param_define(def, sizeof def, t, op, k);
        char *eq = strchr(def, '=');
        *eq = ' ';
        ndg_buf_printf(b, "#define %s\n", def);
    }
    if (lines)
        ndg_buf_printf(b, "#line %d \"%s\"\n", b->lines + 2, out_c);
    for (int k = 0; k < nin; ++k) {
        snprintf(args + strlen(args), sizeof args - strlen(args), "%sNDT_LOAD(x%d[j%d])", k ? ", " : "", k, k);
        snprintf(straight + strlen(straight), sizeof straight - strlen(straight), "%sNDT_LOAD(x%d[e])", k ? ", " : "", k);
    }
    ndg_buf_printf(b, "static void ndk_ref_%d(const nda_ref_args *ra, int64_t lo, int64_t hi)\n{\n"
                      "    const nda_ref_operand *o = &ra->operands[%d];\n    NDT_T *y = (NDT_T *)o->data;\n"
                      "    int64_t n = 1;\n    for (int i = 0; i < o->rank; ++i)\n        n *= o->shape[i];\n"
                      "    int same = 1;\n", i, nin);
    for (int k = 0; k < nin; ++k)
        ndg_buf_printf(b, "    const NDT_T *x%d = (const NDT_T *)ra->operands[%d].data;\n    int64_t n%d = 1;\n"
                          "    for (int i = 0; i < ra->operands[%d].rank; ++i)\n        n%d *= ra->operands[%d].shape[i];\n"
                          "    same = same && n%d == n;\n", k, k, k, k, k, k, k);
    ndg_buf_printf(b, "    if (same) {\n        for (int64_t e = lo; e < hi; ++e)\n            y[e] = NDT_STORE(NDT_EXPR(%s));\n"
                      "        return;\n    }\n    for (int64_t e = lo; e < hi; ++e) {\n", straight);
    for (int k = 0; k < nin; ++k)
        ndg_buf_printf(b, "        const int64_t j%d = ndref_index(&ra->operands[%d], o, e);\n", k, k);
    ndg_buf_printf(b, "        y[e] = NDT_STORE(NDT_EXPR(%s));\n    }\n}\n", args);
    for (int k = 0; k < op->nparams; ++k)
        ndg_buf_printf(b, "#undef NDT_%s\n", op->params[k].name);
}

/* Each reference: derived ones per op, and each named source file's text once, line'd to it. */
static int emit_references(ndg_buf *b, const ndg_spec *spec, const ndg_template *const *tmpl, const char *spec_c,
                           const char *out_c, const ndg_emit_options *o, nd_error *err)
{
    bool lines = o->line_directives;
    for (int i = 0; i < spec->nops; ++i) {
        const ndg_op *op = &spec->ops[i];
        if (!op->reference)
            continue;
        if (!op->reference_source) {
            emit_eltwise_reference(b, op, i, tmpl[i], spec_c, out_c, lines);
            continue;
        }
        bool seen = false;
        for (int k = 0; k < i && !seen; ++k)
            seen = spec->ops[k].reference_source && strcmp(spec->ops[k].reference_source, op->reference_source) == 0;
        if (seen)
            continue;
        char *source;
        size_t source_len;
        if (ndg_read_text(op->reference_source, &source, &source_len))
            return nd_fail(err, "%s:%d: op '%s': reference source %s: cannot read it: %s", spec->path, op->line,
                           op->name, op->reference_source, ndg_read_why(errno));
        char text_c[4 * PATH_MAX], shown[2 * PATH_MAX];
        ndg_shown_path(shown, sizeof shown, op->reference_source, o);
        comment_text(text_c, sizeof text_c, shown);
        ndg_buf_printf(b, "\n/* ==== references from %s */\n", text_c);
        ndg_c_string(text_c, sizeof text_c, shown);
        if (lines)
            ndg_buf_printf(b, "#line 1 \"%s\"\n", text_c);
        size_t start = b->len;
        ndg_buf_put(b, source, source_len);
        free(source);
        if (b->len > start && b->data[b->len - 1] != '\n')
            ndg_buf_put(b, "\n", 1);
        if (lines)
            ndg_buf_printf(b, "#line %d \"%s\"\n", b->lines + 2, out_c);
        for (int k = i; k < spec->nops; ++k) { /* every function named from this file is in it */
            const ndg_op *q = &spec->ops[k];
            if (!q->reference_source || strcmp(q->reference_source, op->reference_source) != 0)
                continue;
            size_t len = strlen(q->reference);
            bool found = false;
            for (const char *p = b->data + start; !found && (p = strstr(p, q->reference)) && p < b->data + b->len; p += len)
                found = (p == b->data + start || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
                        !(isalnum((unsigned char)p[len]) || p[len] == '_');
            if (!found)
                return nd_fail(err, "%s:%d: op '%s': reference '%s': no such name in %s", spec->path, q->line, q->name,
                               q->reference, q->reference_source);
        }
    }
    return 0;
}

/* A path made absolute without resolving links; as given when that fails. */
static void absolute(char *out, size_t len, const char *path)
{
    char cwd[PATH_MAX];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
        snprintf(out, len, "%s", path);
    else
        snprintf(out, len, "%s/%s", cwd, path);
}

/* Where the spec and its templates are, for on-demand specialization: absolute, and relative to the
 * install prefix when the build says where they are installed. Declares the folder lists and fills
 * group with the rest of the group's initializer. */
static void emit_locations(ndg_buf *b, const ndg_spec *spec, const ndg_emit_options *o, char *group, size_t len)
{
    char path[4 * PATH_MAX], c[8 * PATH_MAX], real[PATH_MAX], spec_c[8 * PATH_MAX + 8], inst_c[8 * PATH_MAX + 8] = "NULL";
    if (o->relocatable) {
        ndg_buf_printf(b, "static const char *const ndk_template_dirs_none[] = {");
        for (int i = 0; i < o->ntemplate_dirs; ++i)
            ndg_buf_printf(b, "%sNULL", i ? ", " : "");
        ndg_buf_printf(b, "%s};\n", o->ntemplate_dirs ? "" : "NULL");
    } else
        ndg_buf_printf(b, "static const char *const ndk_template_dirs[] = {");
    for (int i = 0; i < o->ntemplate_dirs && !o->relocatable; ++i) {
        if (realpath(o->template_dirs[i], real))
            snprintf(path, sizeof path, "%s", real);
        else
            absolute(path, sizeof path, o->template_dirs[i]);
        ndg_c_string(c, sizeof c, path);
        ndg_buf_printf(b, "%s\"%s\"", i ? ", " : "", c);
    }
    if (!o->relocatable)
        ndg_buf_printf(b, "%s};\n", o->ntemplate_dirs ? "" : "NULL");
    bool installed = o->ninstalled_template_dirs > 0;
    if (installed) {
        ndg_buf_printf(b, "static const char *const ndk_template_dirs_installed[] = {");
        for (int i = 0; i < o->ntemplate_dirs; ++i) {
            int k = i < o->ninstalled_template_dirs ? i : o->ninstalled_template_dirs - 1;
            ndg_c_string(c, sizeof c, o->installed_template_dirs[k]);
            ndg_buf_printf(b, "%s\"%s\"", i ? ", " : "", c);
        }
        ndg_buf_printf(b, "};\n");
    }
    if (realpath(spec->path, real))
        snprintf(path, sizeof path, "%s", real);
    else
        absolute(path, sizeof path, spec->path);
    ndg_c_string(c, sizeof c, path);
    snprintf(spec_c, sizeof spec_c, "\"%s\"", c);
    if (o->installed_spec_dir) {
        const char *base = strrchr(spec->path, '/');
        snprintf(path, sizeof path, "%s/%s", o->installed_spec_dir, base ? base + 1 : spec->path);
        ndg_c_string(c, sizeof c, path);
        snprintf(inst_c, sizeof inst_c, "\"%s\"", c);
    }
    if (o->relocatable) /* a library to install: only the installed folders, no path of this machine */
        snprintf(group, len, "NULL, %s, %d, ndk_template_dirs_none, %s", inst_c, o->ntemplate_dirs,
                 installed ? "ndk_template_dirs_installed" : "NULL");
    else
        snprintf(group, len, "%s, %s, %d, ndk_template_dirs, %s", spec_c, inst_c, o->ntemplate_dirs,
                 installed ? "ndk_template_dirs_installed" : "NULL");
}

/* A target's fixed launch scalars, exact to the bit (hexadecimal floats keep -0.0 apart from 0.0, which
 * the pick tells apart); NAN where not fixed. */
static void emit_fixed_scalars(ndg_buf *b, const ndg_target *t, int op, int target)
{
    if (!t->nscalars)
        return;
    ndg_buf_printf(b, "static const double ndk_scalars_%d_%d[] = {", op, target);
    for (int k = 0; k < t->nscalars; ++k)
        ndg_buf_printf(b, isnan(t->scalars[k]) ? "%sNAN" : "%s%a", k ? ", " : "", t->scalars[k]);
    ndg_buf_printf(b, "};\n");
}

static void emit_registry_group(ndg_buf *b, const ndg_spec *spec, const ndg_emit_options *o)
{
    char cname[256], sym[256], sig[ND_SIGNATURE_LEN];
    ndg_c_name(cname, sizeof cname, spec->name);
    enum { WHERE_LEN = 2 * (8 * PATH_MAX + 8) + 128 };
    char where[WHERE_LEN]; /* the group's locations, filled by emit_locations */
    ndg_buf_printf(b, "\n/* ==== registry */\n");
    emit_locations(b, spec, o, where, WHERE_LEN);
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
            emit_fixed_scalars(b, &op->targets[t], i, t);
            unsigned free = ndreg_fixed_free(op->targets[t].fixed);
            if (!free)
                continue;
            char pat[ND_SIGNATURE_LEN];
            ndg_buf_printf(b, "static const char *const ndk_patterns_%d_%d[] = {\n", i, t);
            for (int k = 0; k < op->noperands; ++k) {
                nd_dist_signature(&op->targets[t].dist[k], sig, sizeof sig);
                ndreg_split_signature(sig, free, pat, sizeof pat, NULL, 0);
                ndg_buf_printf(b, "    \"%s\",\n", pat);
            }
            ndg_buf_printf(b, "};\nstatic const int ndk_classes_%d_%d[] = {", i, t);
            for (int k = 0; k < op->noperands; ++k)
                ndg_buf_printf(b, "%s%d", k ? ", " : "", ndg_class(&op->targets[t], k));
            ndg_buf_printf(b, "};\n");
        }
    }
    ndg_buf_printf(b, "static const nda_kernel_entry ndk_entries[] = {\n");
    int n = 0;
    for (int i = 0; i < spec->nops; ++i) {
        const ndg_op *op = &spec->ops[i];
        for (int t = o->specialized_only ? 0 : -1; t < op->ntargets; ++t, ++n) {
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
                ndg_buf_printf(b, "\"%s\", 0x%llxull, ", op->requires, reduces);
            else
                ndg_buf_printf(b, "NULL, 0x%llxull, ", reduces);
            if (!op->reference)
                ndg_buf_printf(b, "NULL, NULL, ");
            else if (op->reference_source)
                ndg_buf_printf(b, "%s, \"%s\", ", op->reference, op->reference);
            else
                ndg_buf_printf(b, "ndk_ref_%d, \"from EXPR\", ", i);
            if (t < 0)
                ndg_buf_printf(b, "NULL, NULL, NULL, ");
            else if (ndreg_fixed_free(op->targets[t].fixed))
                ndg_buf_printf(b, "\"%s\", ndk_patterns_%d_%d, ndk_classes_%d_%d, ",
                               ndreg_fixed_name(op->targets[t].fixed), i, t, i, t);
            else
                ndg_buf_printf(b, "\"all\", NULL, NULL, ");
            if (t < 0 || !op->targets[t].nscalars)
                ndg_buf_printf(b, "0, NULL, ");
            else
                ndg_buf_printf(b, "%d, ndk_scalars_%d_%d, ", op->targets[t].nscalars, i, t);
            ndg_buf_printf(b, "%d, %d, %d},\n", op->reads, op->moves_data, op->parts_chunked);
        }
    }
    char quoted[1024];
    ndg_c_string(quoted, sizeof quoted, spec->name);
    ndg_buf_printf(b, "};\nconst nda_kernel_group ndk_group_%s = {\"%s\", %d, ndk_entries, %s};\n", cname, quoted,
                   n, where);
}

/* The make-style dependencies of the stamp, or of every part when there is none, prepared in out
 * (closed, not yet in place). */
/* Every file generating spec read, in the depfile's order: the spec and what it included, each op's
 * reference source, template and the template's headers. Calls f(path, data) for each. */
static void each_input(const ndg_spec *spec, const ndg_template *const *tmpl, void (*f)(const char *, void *),
                       void *data)
{
    for (int i = 0; i < spec->ndeps; ++i)
        f(spec->deps[i], data);
    for (int i = 0; i < spec->nops; ++i) {
        if (spec->ops[i].reference_source)
            f(spec->ops[i].reference_source, data);
        f(tmpl[i]->path, data);
        for (int k = 0; k < tmpl[i]->ndeps; ++k)
            f(tmpl[i]->deps[k], data);
    }
}

/* path as one word of a make rule, escaped as gcc -MD escapes it, which Make and Ninja both read: a
 * blank or '#' behind a backslash (and the backslashes just before a blank doubled), '$' doubled. */
static void depfile_word(FILE *fp, const char *path)
{
    for (const char *p = path; *p; ++p) {
        if (*p == ' ' || *p == '\t') {
            for (const char *q = p; q > path && q[-1] == '\\'; --q)
                fputc('\\', fp);
            fputc('\\', fp);
        } else if (*p == '#') {
            fputc('\\', fp);
        } else if (*p == '$') {
            fputc('$', fp);
        }
        fputc(*p, fp);
    }
}

static void depfile_line(const char *path, void *fp)
{
    fputs(" \\\n  ", fp);
    depfile_word(fp, path);
}

/* A newline cannot be written in a make rule: sets *bad to a path holding one. */
static void no_newline(const char *path, void *bad)
{
    if (strchr(path, '\n'))
        *(const char **)bad = path;
}

static void add_input(const char *path, void *emitted)
{
    ndg_emitted *e = emitted;
    e->inputs = ndg_realloc(e->inputs, (size_t)(e->ninputs + 1) * sizeof *e->inputs);
    e->inputs[e->ninputs++] = ndg_strdup(path);
}

static int write_depfile(ndf_output *out, const char *path, const char *stamp, const char *out_path, int nparts,
                         const ndg_spec *spec, const ndg_template *const *tmpl, nd_error *err)
{
    const char *bad = stamp && strchr(stamp, '\n') ? stamp : out_path && strchr(out_path, '\n') ? out_path : NULL;
    each_input(spec, tmpl, no_newline, &bad);
    if (bad)
        return nd_fail(err, "--depfile %s: a make rule cannot name %s, whose name holds a newline", path, bad);
    if (ndf_open(out, path, err))
        return -1;
    if (stamp) {
        depfile_word(out->fp, stamp);
    } else {
        for (int p = 1; p <= nparts; ++p) {
            char part[4096];
            ndg_part_path(part, sizeof part, out_path ? out_path : "-", p, nparts);
            if (p > 1)
                fputc(' ', out->fp);
            depfile_word(out->fp, part);
        }
    }
    fputc(':', out->fp);
    each_input(spec, tmpl, depfile_line, out->fp);
    fputc('\n', out->fp);
    return ndf_close(out, err);
}

static void registry_text(ndg_buf *b, char *const *spec_names, int n, const char *cflags);

typedef struct vref {
    int op, target; /* target -1: the generic kernel */
} vref;

/* One file: the variants [v0, v1) of vs, and the registry group when registry; ranges gets the byte
 * range of each specialized variant. heads: each op's template head (template_head). */
static int build_text(ndg_buf *b, const ndg_spec *spec, const ndg_template *const *tmpl, const unsigned *heads,
                      const vref *vs, int nvs, int v0, int v1, int part, int nparts, const char *out_path,
                      const ndg_emit_options *o, unsigned (*ranges)[2], nd_error *err)
{
    char sym[256], prefix[32], out_c[4 * PATH_MAX], spec_c[4 * PATH_MAX], tmpl_c[4 * PATH_MAX], shown[2 * PATH_MAX];
    int nranges = 0, nincludes = 0;
    char **includes = NULL;
    ndg_shown_path(shown, sizeof shown, out_path ? out_path : "<stdout>", o);
    ndg_c_string(out_c, sizeof out_c, shown);
    ndg_shown_path(shown, sizeof shown, spec->path, o);
    ndg_c_string(spec_c, sizeof spec_c, shown);
    emit_header(b, spec, tmpl, part, nparts, o);
    for (int g = v0; g < v1; ++g)
        if (heads[vs[g].op])
            collect_includes(tmpl[vs[g].op], heads[vs[g].op], &includes, &nincludes);
    for (int k = 0; k < nincludes; ++k) {
        if (strcmp(includes[k], "#include \"nd_accessor.h\"") != 0)
            ndg_buf_printf(b, "%s\n", includes[k]);
        free(includes[k]);
    }
    free(includes);
    for (int g = v0; g < v1; ++g) {
        const ndg_op *op = &spec->ops[vs[g].op];
        const ndg_template *t = tmpl[vs[g].op];
        unsigned head = heads[vs[g].op];
        bool first = true; /* of its template in this file */
        for (int h = v0; h < g && first; ++h)
            first = strcmp(tmpl[vs[h].op]->path, t->path) != 0;
        ndg_shown_path(shown, sizeof shown, t->path, o);
        ndg_c_string(tmpl_c, sizeof tmpl_c, shown);
        if (head && first) {
            char text[4 * PATH_MAX];
            comment_text(text, sizeof text, shown);
            ndg_buf_printf(b, "\n/* ==== template %s: its head, once (its #includes are at the top) */\n", text);
            put_head_comments(b, t, head);
        }
        symbol_of(sym, sizeof sym, op, vs[g].target);
        snprintf(prefix, sizeof prefix, "ndk%d_", g);
        ndg_variant v = {op, vs[g].target < 0 ? NULL : &op->targets[vs[g].target], prefix, sym, out_c, spec_c,
                         tmpl_c, o->line_directives, head};
        unsigned start = (unsigned)b->len;
        if (ndg_rewrite(b, t, &v, err))
            return -1;
        if (vs[g].target >= 0) {
            ranges[nranges][0] = start;
            ranges[nranges++][1] = (unsigned)b->len;
        }
    }
    if (part == 1) {
        if (nparts > 1) {
            ndg_buf_printf(b, "\n/* ==== the kernels of the other parts */\n");
            for (int g = 0; g < nvs; ++g)
                if (g < v0 || g >= v1) {
                    symbol_of(sym, sizeof sym, &spec->ops[vs[g].op], vs[g].target);
                    ndg_buf_printf(b, "nda_kernel_fn %s;\n", sym);
                }
        }
        if (emit_references(b, spec, tmpl, spec_c, out_c, o, err))
            return -1;
        emit_registry_group(b, spec, o);
        if (o->library) {
            char *name = spec->name;
            ndg_buf_printf(b, "\n/* ==== library root */\n");
            registry_text(b, &name, 1, o->kernel_cflags);
        }
    }
    return nranges;
}

void ndg_part_path(char *out, size_t len, const char *out_path, int i, int n)
{
    size_t k = strlen(out_path);
    if (n <= 1)
        snprintf(out, len, "%s", out_path);
    else if (k > 2 && strcmp(out_path + k - 2, ".c") == 0)
        snprintf(out, len, "%.*s.%d.c", (int)(k - 2), out_path, i);
    else
        snprintf(out, len, "%s.%d.c", out_path, i);
}

int ndg_emit_spec(ndg_spec *spec, ndg_analyzer *a, const char *out_path, const ndg_emit_options *o,
                  ndg_emitted *out, nd_error *err)
{
    const ndg_template **tmpl = ndg_calloc((size_t)spec->nops, sizeof *tmpl);
    unsigned *heads = ndg_calloc((size_t)spec->nops, sizeof *heads);
    int nvs = 0, nparts = o->parts > 1 ? o->parts : 1;
    int first = o->specialized_only ? 0 : -1; /* the first target of each op; -1, its generic kernel */
    for (int i = 0; i < spec->nops; ++i)
        nvs += spec->ops[i].ntargets - first;
    vref *vs = ndg_calloc((size_t)nvs + 1, sizeof *vs);
    unsigned (*ranges)[2] = ndg_calloc((size_t)nvs + 1, sizeof *ranges);
    int *bounds = ndg_calloc((size_t)nparts + 1, sizeof *bounds); /* part p holds variants [bounds[p-1], bounds[p]) */
    nvs = 0;
    for (int i = 0; i < spec->nops; ++i)
        for (int t = first; t < spec->ops[i].ntargets; ++t)
            vs[nvs++] = (vref){i, t};
    memset(out, 0, sizeof *out);
    out->kernels = nvs;
    out->nparts = nparts;
    int rc = ndg_bind_ops(spec, a, tmpl, err);
    for (int i = 0; i < spec->nops && !rc; ++i)
        heads[i] = template_head(tmpl[i]);
    if (!rc && nparts > 1 && (!out_path || strcmp(out_path, "-") == 0))
        rc = nd_fail(err, "--parts %d: give --output FILE or --output-dir, not standard output", nparts);
    /* Parts balanced by size: the variants are printed once to measure them, then dealt out in order. */
    bounds[nparts] = nvs;
    if (!rc && nparts > 1) {
        ndg_buf m = {0};
        size_t *end = ndg_calloc((size_t)nvs, sizeof *end);
        for (int g = 0; g < nvs && !rc; ++g) {
            rc = build_text(&m, spec, tmpl, heads, vs, nvs, g, g + 1, 0, nparts, out_path, o, ranges, err) < 0;
            end[g] = (g ? end[g - 1] : 0) + m.len;
            m.len = 0;
        }
        for (int p = 1, g = 0; p < nparts && !rc; ++p) {
            while (g < nvs && end[g] * (size_t)nparts < end[nvs - 1] * (size_t)p)
                ++g;
            bounds[p] = g;
        }
        ndg_buf_free(&m);
        free(end);
    }
    for (int p = 1; p <= nparts && !rc; ++p) {
        char path[4096];
        ndg_part_path(path, sizeof path, out_path ? out_path : "-", p, nparts);
        const char *where = out_path ? path : NULL;
        ndg_buf b = {0};
        int nranges = build_text(&b, spec, tmpl, heads, vs, nvs, bounds[p - 1], bounds[p], p, nparts, where, o,
                                 ranges, err);
        rc = nranges < 0;
        /* Translation validation: what was written parses, and no generic accessor call is left in a
         * specialized kernel. */
        if (!rc)
            rc = ndg_validate(a, where ? where : "generated.c", b.data, b.len, nranges,
                              (const unsigned(*)[2])ranges, err);
        if (!rc && (rc = ndf_open(&out->c[p - 1], where, err)) == 0) {
            fwrite(b.data, 1, b.len, out->c[p - 1].fp);
            rc = ndf_close(&out->c[p - 1], err);
        }
        ndg_buf_free(&b);
    }
    if (!rc)
        each_input(spec, tmpl, add_input, out);
    if (!rc && o->depfile) {
        out->has_depfile = true;
        rc = write_depfile(&out->depfile, o->depfile, o->stamp, out_path, nparts, spec, tmpl, err);
    }
    if (rc)
        ndg_emitted_abort(out);
    free(bounds);
    free(ranges);
    free(vs);
    free(heads);
    free(tmpl);
    return rc ? -1 : 0;
}

void ndg_emitted_abort(ndg_emitted *e)
{
    for (int p = 0; p < e->nparts; ++p)
        ndf_abort(&e->c[p]);
    if (e->has_depfile)
        ndf_abort(&e->depfile);
    e->has_depfile = false;
    for (int i = 0; i < e->ninputs; ++i)
        free(e->inputs[i]);
    free(e->inputs);
    e->inputs = NULL;
    e->ninputs = 0;
}

/* The root registry's text: the symbol nda_kernel_registry over one group per spec name. */
static void registry_text(ndg_buf *b, char *const *spec_names, int n, const char *cflags)
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
    char flags[4 * NDG_MAX_CFLAGS + 16] = "NULL", text[4 * NDG_MAX_CFLAGS + 8]; /* each byte escaped to 4 */
    if (cflags) { /* at most NDG_MAX_CFLAGS bytes (the options check): escaped whole */
        ndg_c_string(text, sizeof text, cflags);
        snprintf(flags, sizeof flags, "\"%s\"", text);
    }
    ndg_buf_printf(b, "};\n\n__attribute__((visibility(\"default\")))\nconst nda_kernel_library nda_kernel_registry = "
                      "{NDA_ABI_VERSION, \"%s\", %d, groups, %s};\n", NDGEN_VERSION, n, flags);
}

int ndg_emit_registry(const char *out_path, char *const *spec_names, int n, const char *cflags, nd_error *err)
{
    ndg_buf b = {0};
    ndf_output out;
    ndg_buf_printf(&b, "/* Generated by ndgen %s: the kernel library's registry. Do not edit. */\n"
                       "#include \"nd_accessor.h\"\n\n", NDGEN_VERSION);
    registry_text(&b, spec_names, n, cflags);
    int rc = ndf_open(&out, out_path, err);
    if (!rc) {
        fwrite(b.data, 1, b.len, out.fp);
        rc = ndf_commit(&out, NULL, err);
    }
    ndg_buf_free(&b);
    return rc;
}
