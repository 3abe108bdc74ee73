/*
 * analyze.c - stage 2: parse a kernel template with libclang and locate, by cursor, everything the
 * rewrite stage changes.
 *
 * What a template may do, and what it is refused for (each with the template's file:line:col):
 *   - bind operands as  const nda_tensor *x = nda_operand(args, K);  with K an integer constant;
 *   - call nda_* accessor functions whose tensor argument is such a bound variable;
 *   - iterate its own pages with exactly
 *       for (nda_iter it = nda_iter_local(core, t); nda_iter_valid(&it); nda_iter_next(&it)) { ... }
 *     using the iterator only through nda_iter_page(&it) and nda_iter_ptr(&it), and with no break,
 *     return or goto leaving the body (the specialized loop nest could not honour them);
 *   - declare parameters as macros named NDT_*, with defaults, which specs override;
 *   - define one external function, the kernel; everything else at file scope is static.
 * Accessor calls inside macro expansions are refused: their text is not in the template to rewrite.
 */
#include <clang-c/Index.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ndgen.h"

const char *const ndg_call_names[NDG_CALL_KINDS] = {
    "nda_self",      "nda_locate",     "nda_page_addr",   "nda_is_local",  "nda_page_coord", "nda_page_id",
    "nda_page_read", "nda_page_write", "nda_shard_count", "nda_shard_id",  "nda_page_bytes", "nda_rank",
    "nda_dim",       "nda_page_dim",   "nda_elem_read",   "nda_same_paging", "nda_iter_page", "nda_iter_ptr",
    "nda_parts",     "nda_part",       "nda_part_range",  "nda_part_page_read",
};

/* Which argument of each call is the tensor (-1: the iterator, argument 0, instead). */
static const int tensor_arg[NDG_CALL_KINDS] = {1, 0, 0, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, -1, -1, 0, 1, 1, 1};

enum { MAX_BOUND = 64, MAX_LOOPS = 64 };

struct ndg_analyzer {
    CXIndex index;
    char *include_dir, *resource_dir;
    int ntemplates;
    ndg_template **templates;
};

typedef struct walk {
    ndg_template *t;
    const char *path;       /* as the spec named it, for messages */
    nd_error *err;
    bool failed;
    int nbound;
    CXCursor bound_var[MAX_BOUND];
    int bound_operand[MAX_BOUND];
    CXCursor iter_var[MAX_LOOPS]; /* by loop index */
    int nallowed;           /* byte ranges where a reference to an iterator variable is allowed */
    unsigned allowed[4 * MAX_LOOPS][2];
    int ncalls_cap, nloops_cap, nrenames_cap, nincludes_cap;
} walk;

/* ---------------------------------------------------------------- small cursor helpers */

static unsigned file_offset(CXSourceLocation loc)
{
    unsigned off;
    clang_getFileLocation(loc, NULL, NULL, NULL, &off);
    return off;
}

static void line_col(CXCursor c, int *line, int *col)
{
    unsigned l, k;
    clang_getFileLocation(clang_getCursorLocation(c), NULL, &l, &k, NULL);
    *line = (int)l;
    *col = (int)k;
}

__attribute__((format(printf, 3, 4))) static int fail_at(walk *w, CXCursor c, const char *fmt, ...)
{
    char msg[ND_ERROR_LEN];
    int line, col;
    va_list ap;
    if (w->failed)
        return -1; /* keep the first error */
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    line_col(c, &line, &col);
    w->failed = true;
    return nd_fail(w->err, "%s:%d:%d: %s", w->path, line, col, msg);
}

static bool in_main_file(CXCursor c) { return clang_Location_isFromMainFile(clang_getCursorLocation(c)) != 0; }

static char *spelling(CXCursor c)
{
    CXString s = clang_getCursorSpelling(c);
    char *out = strdup(clang_getCString(s));
    clang_disposeString(s);
    return out;
}

static bool spelled(CXCursor c, const char *name)
{
    CXString s = clang_getCursorSpelling(c);
    bool same = strcmp(clang_getCString(s), name) == 0;
    clang_disposeString(s);
    return same;
}

typedef struct kids {
    int n;
    CXCursor c[8];
} kids;

static enum CXChildVisitResult collect_kid(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    kids *k = data;
    if (k->n < 8)
        k->c[k->n] = c;
    ++k->n;
    return CXChildVisit_Continue;
}

static kids children(CXCursor c)
{
    kids k = {0};
    clang_visitChildren(c, collect_kid, &k);
    return k;
}

/* Strips implicit casts and parentheses. */
static CXCursor unwrap(CXCursor c)
{
    for (;;) {
        enum CXCursorKind k = clang_getCursorKind(c);
        if (k != CXCursor_UnexposedExpr && k != CXCursor_ParenExpr)
            return c;
        kids ch = children(c);
        if (ch.n != 1)
            return c;
        c = ch.c[0];
    }
}

/* The name of the function a call expression calls, or NULL. */
static CXCursor callee(CXCursor call) { return clang_getCursorReferenced(call); }

static bool is_call_to(CXCursor c, const char *name)
{
    c = unwrap(c);
    return clang_getCursorKind(c) == CXCursor_CallExpr && spelled(callee(c), name);
}

static void extent(CXCursor c, unsigned *start, unsigned *end)
{
    CXSourceRange r = clang_getCursorExtent(c);
    *start = file_offset(clang_getRangeStart(r));
    *end = file_offset(clang_getRangeEnd(r));
}

static char *text_of(const walk *w, CXCursor c)
{
    unsigned s, e;
    extent(c, &s, &e);
    return strndup(w->t->text + s, e - s);
}

#define GROW(arr, n, cap)                                                                                          \
    do {                                                                                                           \
        if ((n) == (cap)) {                                                                                        \
            (cap) = (cap) ? 2 * (cap) : 16;                                                                        \
            (arr) = realloc((arr), (size_t)(cap) * sizeof *(arr));                                                 \
        }                                                                                                          \
    } while (0)

/* ---------------------------------------------------------------- bindings and iterators */

static int bound_operand(const walk *w, CXCursor expr)
{
    CXCursor e = unwrap(expr);
    if (clang_getCursorKind(e) != CXCursor_DeclRefExpr)
        return -1;
    CXCursor var = clang_getCursorReferenced(e);
    for (int i = 0; i < w->nbound; ++i)
        if (clang_equalCursors(var, w->bound_var[i]))
            return w->bound_operand[i];
    return -1;
}

/* The loop whose iterator `&it` (expr) names, or -1. */
static int iterator_loop(const walk *w, CXCursor expr)
{
    CXCursor e = unwrap(expr);
    if (clang_getCursorKind(e) != CXCursor_UnaryOperator)
        return -1;
    kids k = children(e);
    if (k.n != 1)
        return -1;
    CXCursor ref = unwrap(k.c[0]);
    if (clang_getCursorKind(ref) != CXCursor_DeclRefExpr)
        return -1;
    CXCursor var = clang_getCursorReferenced(ref);
    for (int i = 0; i < w->t->nloops; ++i)
        if (clang_equalCursors(var, w->iter_var[i]))
            return i;
    return -1;
}

static void allow_iterator_use(walk *w, CXCursor arg)
{
    if (w->nallowed < 4 * MAX_LOOPS) {
        extent(arg, &w->allowed[w->nallowed][0], &w->allowed[w->nallowed][1]);
        ++w->nallowed;
    }
}

/* const nda_tensor *x = nda_operand(args, K); */
static int visit_var(walk *w, CXCursor var)
{
    kids k = children(var);
    for (int i = 0; i < k.n && i < 8; ++i) {
        if (!is_call_to(k.c[i], "nda_operand"))
            continue;
        CXCursor call = unwrap(k.c[i]);
        if (clang_Cursor_getNumArguments(call) != 2)
            return fail_at(w, call, "nda_operand takes (args, index)");
        CXEvalResult r = clang_Cursor_Evaluate(clang_Cursor_getArgument(call, 1));
        bool ok = r && clang_EvalResult_getKind(r) == CXEval_Int;
        long long idx = ok ? clang_EvalResult_getAsLongLong(r) : -1;
        if (r)
            clang_EvalResult_dispose(r);
        if (!ok || idx < 0 || idx >= NDG_MAX_OPERANDS)
            return fail_at(w, call, "nda_operand's index must be an integer constant from 0 to %d", NDG_MAX_OPERANDS - 1);
        if (w->nbound == MAX_BOUND)
            return fail_at(w, call, "more than %d operand bindings", MAX_BOUND);
        w->bound_var[w->nbound] = var;
        w->bound_operand[w->nbound++] = (int)idx;
        w->t->noperands = w->t->noperands > idx + 1 ? w->t->noperands : (int)idx + 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- loop bodies */

typedef struct body_scan {
    walk *w;
    int depth; /* nested loops and switches: a break there stays inside the body */
} body_scan;

static enum CXChildVisitResult scan_body(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    body_scan *b = data;
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_BreakStmt && b->depth == 0)
        fail_at(b->w, c, "'break' leaves an nda_iter loop; the specialized loop nest cannot honour it");
    else if (k == CXCursor_ReturnStmt || k == CXCursor_GotoStmt || k == CXCursor_IndirectGotoStmt)
        fail_at(b->w, c, "'%s' inside an nda_iter loop; the specialized loop nest cannot honour it",
                k == CXCursor_ReturnStmt ? "return" : "goto");
    if (b->w->failed)
        return CXChildVisit_Break;
    bool nest = k == CXCursor_ForStmt || k == CXCursor_WhileStmt || k == CXCursor_DoStmt || k == CXCursor_SwitchStmt;
    body_scan inner = {b->w, b->depth + nest};
    clang_visitChildren(c, scan_body, &inner);
    return b->w->failed ? CXChildVisit_Break : CXChildVisit_Continue;
}

static const char loop_form[] =
    "write the loop as for (nda_iter it = nda_iter_local(core, t); nda_iter_valid(&it); nda_iter_next(&it)) { ... }";

/* The init of for statement `f` declares `nda_iter it = nda_iter_local(core, t)`: returns the VarDecl. */
static bool iter_init(CXCursor init, CXCursor *var, CXCursor *call)
{
    if (clang_getCursorKind(init) != CXCursor_DeclStmt)
        return false;
    kids d = children(init);
    if (d.n != 1 || clang_getCursorKind(d.c[0]) != CXCursor_VarDecl)
        return false;
    kids v = children(d.c[0]);
    for (int i = 0; i < v.n && i < 8; ++i)
        if (is_call_to(v.c[i], "nda_iter_local")) {
            *var = d.c[0];
            *call = unwrap(v.c[i]);
            return true;
        }
    return false;
}

static int visit_for(walk *w, CXCursor f)
{
    kids k = children(f);
    CXCursor var, local;
    if (k.n < 1 || !iter_init(k.c[0], &var, &local))
        return 0; /* an ordinary loop */
    int idx = w->t->nloops;
    if (k.n != 4 || !is_call_to(k.c[1], "nda_iter_valid") || !is_call_to(k.c[2], "nda_iter_next"))
        return fail_at(w, f, "%s", loop_form);
    if (clang_getCursorKind(k.c[3]) != CXCursor_CompoundStmt)
        return fail_at(w, k.c[3], "the body of an nda_iter loop must be a { } block");
    if (idx == MAX_LOOPS)
        return fail_at(w, f, "more than %d nda_iter loops", MAX_LOOPS);
    int operand = bound_operand(w, clang_Cursor_getArgument(local, 1));
    if (operand < 0)
        return fail_at(w, local, "nda_iter_local's tensor must be a variable bound with nda_operand(args, N)");
    w->iter_var[idx] = var;
    GROW(w->t->loops, w->t->nloops, w->nloops_cap);
    ndg_loop *l = &w->t->loops[w->t->nloops++];
    memset(l, 0, sizeof *l);
    unsigned unused;
    extent(f, &l->start, &unused);
    extent(k.c[3], &l->body_start, &l->body_end);
    line_col(f, &l->line, &l->col);
    l->operand = operand;
    l->core_expr = text_of(w, clang_Cursor_getArgument(local, 0));
    l->tensor_expr = text_of(w, clang_Cursor_getArgument(local, 1));
    for (int i = 1; i <= 2; ++i) {
        CXCursor c = unwrap(k.c[i]);
        if (iterator_loop(w, clang_Cursor_getArgument(c, 0)) != idx)
            return fail_at(w, c, "%s", loop_form);
        allow_iterator_use(w, clang_Cursor_getArgument(c, 0));
    }
    body_scan b = {w, 0};
    clang_visitChildren(k.c[3], scan_body, &b);
    return w->failed ? -1 : 0;
}

/* ---------------------------------------------------------------- calls */

/* Refuses a call whose text is not where its cursor says: a macro body or a macro argument. */
static int check_not_macro(walk *w, CXCursor call, const char *name, unsigned *start, unsigned *end)
{
    CXSourceLocation at = clang_getRangeStart(clang_getCursorExtent(call));
    unsigned exp_off;
    clang_getExpansionLocation(at, NULL, NULL, NULL, &exp_off);
    extent(call, start, end);
    size_t n = strlen(name);
    if (exp_off != *start || *start + n > w->t->len || strncmp(w->t->text + *start, name, n) != 0)
        return fail_at(w, call, "%s is called inside a macro expansion; ndgen cannot rewrite it there", name);
    return 0;
}

static int loop_header_call(walk *w, CXCursor call, const char *name, unsigned start)
{
    for (int i = 0; i < w->t->nloops; ++i)
        if (start >= w->t->loops[i].start && start < w->t->loops[i].body_start)
            return 0;
    return fail_at(w, call, "%s outside an nda_iter loop header; %s", name, loop_form);
}

static int classify(const char *name)
{
    for (int k = 0; k < NDG_CALL_KINDS; ++k)
        if (strcmp(name, ndg_call_names[k]) == 0)
            return k;
    return -1;
}

static int record_call(walk *w, CXCursor call, int kind, unsigned start, unsigned end)
{
    ndg_call c = {.kind = (ndg_call_kind)kind, .start = start, .end = end, .operand = -1, .operand2 = -1, .loop = -1};
    c.name_end = start + (unsigned)strlen(ndg_call_names[kind]);
    line_col(call, &c.line, &c.col);
    if (tensor_arg[kind] < 0) {
        CXCursor it = clang_Cursor_getArgument(call, 0);
        c.loop = iterator_loop(w, it);
        if (c.loop < 0)
            return fail_at(w, call, "%s's argument must be &it, the iterator of an enclosing nda_iter loop",
                           ndg_call_names[kind]);
        allow_iterator_use(w, it);
    } else {
        CXCursor tensor = clang_Cursor_getArgument(call, tensor_arg[kind]);
        c.operand = bound_operand(w, tensor);
        if (c.operand < 0)
            return fail_at(w, call, "%s's tensor must be a variable bound with nda_operand(args, N)",
                           ndg_call_names[kind]);
        c.tensor_expr = text_of(w, tensor);
        if (kind == NDG_SAME_PAGING && (c.operand2 = bound_operand(w, clang_Cursor_getArgument(call, 1))) < 0)
            return fail_at(w, call, "nda_same_paging's tensors must be variables bound with nda_operand(args, N)");
        c.tensor_decl = file_offset(clang_getCursorLocation(clang_getCursorReferenced(unwrap(tensor))));
        if (kind == NDG_PAGE_READ || kind == NDG_PAGE_WRITE) {
            CXCursor page = unwrap(clang_Cursor_getArgument(call, 2));
            if (is_call_to(page, "nda_iter_page"))
                c.loop = iterator_loop(w, clang_Cursor_getArgument(page, 0));
        }
    }
    GROW(w->t->calls, w->t->ncalls, w->ncalls_cap);
    w->t->calls[w->t->ncalls++] = c;
    return 0;
}

static int visit_call(walk *w, CXCursor call)
{
    CXCursor fn = callee(call);
    if (clang_Cursor_isNull(fn) || clang_getCursorKind(fn) != CXCursor_FunctionDecl)
        return 0;
    char *name = spelling(fn);
    int rc = 0;
    unsigned start, end;
    bool accessor = strncmp(name, "nda_", 4) == 0, model = strncmp(name, "nd_", 3) == 0;
    if ((accessor || model) && check_not_macro(w, call, name, &start, &end)) {
        rc = -1;
    } else if (model) {
        rc = fail_at(w, call, "%s: templates reach distributions only through nda_* calls, which ndgen can specialize",
                     name);
    } else if (accessor && strcmp(name, "nda_operand") != 0 && strcmp(name, "nda_bf16_to_f32") != 0 &&
               strcmp(name, "nda_f32_to_bf16") != 0) { /* binding and element conversions stay as written */
        int kind = classify(name);
        if (kind >= 0)
            rc = record_call(w, call, kind, start, end);
        else if (strcmp(name, "nda_iter_local") == 0 || strcmp(name, "nda_iter_valid") == 0 ||
                 strcmp(name, "nda_iter_next") == 0)
            rc = loop_header_call(w, call, name, start);
        else
            rc = fail_at(w, call, "%s is not part of the accessor API ndgen specializes", name);
    }
    free(name);
    return rc;
}

/* A reference to an iterator variable anywhere but inside an allowed nda_iter_* argument. */
static int visit_ref(walk *w, CXCursor ref)
{
    CXCursor var = clang_getCursorReferenced(ref);
    unsigned at = file_offset(clang_getCursorLocation(ref));
    for (int i = 0; i < w->t->nloops; ++i) {
        if (!clang_equalCursors(var, w->iter_var[i]))
            continue;
        for (int k = 0; k < w->nallowed; ++k)
            if (at >= w->allowed[k][0] && at < w->allowed[k][1])
                return 0;
        return fail_at(w, ref, "use the iterator only as nda_iter_page(&it) and nda_iter_ptr(&it)");
    }
    return 0;
}

/* ---------------------------------------------------------------- file scope */

static void add_unique(char ***list, int *n, int *cap, char *name)
{
    for (int i = 0; i < *n; ++i)
        if (strcmp((*list)[i], name) == 0) {
            free(name);
            return;
        }
    GROW(*list, *n, *cap);
    (*list)[(*n)++] = name;
}

static int visit_file_scope(walk *w, CXCursor c)
{
    enum CXCursorKind k = clang_getCursorKind(c);
    char *name = spelling(c);
    if (k == CXCursor_FunctionDecl && clang_getCursorLinkage(c) == CXLinkage_External) {
        bool def = clang_isCursorDefinition(c);
        if (def && w->t->kernel && strcmp(w->t->kernel, name) != 0) {
            free(name);
            return fail_at(w, c, "a second external function; make helpers static, the kernel is '%s'", w->t->kernel);
        }
        if (def && clang_Cursor_getNumArguments(c) != 2) {
            free(name);
            return fail_at(w, c, "the kernel takes (const nda_core *core, const nda_args *args)");
        }
        if (def && !w->t->kernel)
            w->t->kernel = strdup(name);
        free(name);
        return 0;
    }
    if (k == CXCursor_VarDecl && clang_getCursorLinkage(c) == CXLinkage_External) {
        free(name);
        return fail_at(w, c, "file-scope variables must be static: a kernel library holds many variants");
    }
    bool named = name[0] != '\0' && strncmp(name, "NDT_", 4) != 0;
    if (named && (k == CXCursor_FunctionDecl || k == CXCursor_VarDecl || k == CXCursor_TypedefDecl ||
                  k == CXCursor_StructDecl || k == CXCursor_UnionDecl || k == CXCursor_EnumDecl))
        add_unique(&w->t->renames, &w->t->nrenames, &w->nrenames_cap, name);
    else
        free(name);
    return 0;
}

static void visit_macro(walk *w, CXCursor c)
{
    char *name = spelling(c);
    if (strncmp(name, "NDT_", 4) != 0) {
        free(name);
        return;
    }
    for (int i = 0; i < w->t->nparams; ++i)
        if (strcmp(w->t->params[i].name, name + 4) == 0) {
            free(name);
            return;
        }
    w->t->params = realloc(w->t->params, (size_t)(w->t->nparams + 1) * sizeof *w->t->params);
    ndg_tparam *p = &w->t->params[w->t->nparams++];
    p->name = strdup(name + 4);
    p->args = strdup("");
    if (clang_Cursor_isMacroFunctionLike(c)) { /* the text after the name, up to its ')' */
        unsigned s, e;
        extent(c, &s, &e);
        const char *open = w->t->text + s + strlen(name), *close = memchr(open, ')', e - (unsigned)(open - w->t->text));
        if (close) {
            free(p->args);
            p->args = strndup(open, (size_t)(close - open + 1));
        }
    }
    free(name);
}

static void visit_include(walk *w, CXCursor c)
{
    unsigned s, e;
    extent(c, &s, &e);
    while (s > 0 && w->t->text[s - 1] != '\n')
        --s;
    const char *eol = strchr(w->t->text + s, '\n');
    add_unique(&w->t->includes, &w->t->nincludes, &w->nincludes_cap,
               strndup(w->t->text + s, eol ? (size_t)(eol - w->t->text - s) : strlen(w->t->text + s)));
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent, CXClientData data)
{
    walk *w = data;
    enum CXCursorKind k = clang_getCursorKind(c);
    bool top = clang_getCursorKind(parent) == CXCursor_TranslationUnit;
    /* Headers' declarations are not the template's. Inside the template, a statement may start with a
     * macro and so not be "from the main file"; its children still are, so recurse. */
    if (top && !in_main_file(c))
        return CXChildVisit_Continue;
    if (top) {
        if (k == CXCursor_MacroDefinition)
            visit_macro(w, c);
        else if (k == CXCursor_InclusionDirective)
            visit_include(w, c);
        else
            visit_file_scope(w, c);
    }
    if (k == CXCursor_EnumConstantDecl)
        add_unique(&w->t->renames, &w->t->nrenames, &w->nrenames_cap, spelling(c));
    else if (k == CXCursor_VarDecl)
        visit_var(w, c);
    else if (k == CXCursor_ForStmt)
        visit_for(w, c);
    else if (k == CXCursor_CallExpr)
        visit_call(w, c);
    else if (k == CXCursor_DeclRefExpr)
        visit_ref(w, c);
    return w->failed ? CXChildVisit_Break : CXChildVisit_Recurse;
}

/* ---------------------------------------------------------------- parsing */

static int read_file(const char *path, char **text, size_t *len, nd_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return nd_fail(err, "%s:1: cannot read the template", path);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    *text = malloc((size_t)n + 1);
    size_t got = fread(*text, 1, (size_t)n, fp);
    fclose(fp);
    (*text)[got] = '\0';
    *len = got;
    return 0;
}

/* Every error diagnostic, "file:line:col: error: ...", one per line; -1 if there was any. */
static int check_diagnostics(CXTranslationUnit tu, nd_error *err)
{
    unsigned n = clang_getNumDiagnostics(tu), errors = 0;
    size_t used = 0;
    err->msg[0] = '\0';
    for (unsigned i = 0; i < n; ++i) {
        CXDiagnostic d = clang_getDiagnostic(tu, i);
        if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
            CXString s = clang_formatDiagnostic(d, CXDiagnostic_DisplaySourceLocation | CXDiagnostic_DisplayColumn);
            if (used < sizeof err->msg)
                used += (size_t)snprintf(err->msg + used, sizeof err->msg - used, "%s%s", errors ? "\n" : "",
                                         clang_getCString(s));
            clang_disposeString(s);
            ++errors;
        }
        clang_disposeDiagnostic(d);
    }
    return errors ? -1 : 0;
}

static void inclusion(CXFile file, CXSourceLocation *stack, unsigned depth, CXClientData data)
{
    ndg_template *t = data;
    if (depth == 0 || clang_Location_isInSystemHeader(stack[0]))
        return;
    CXString name = clang_getFileName(file);
    t->deps = realloc(t->deps, (size_t)(t->ndeps + 1) * sizeof *t->deps);
    t->deps[t->ndeps++] = strdup(clang_getCString(name));
    clang_disposeString(name);
}

static int parse(ndg_analyzer *a, const char *path, ndg_template *t, nd_error *err)
{
    const char *args[8];
    int nargs = 0;
    char inc[4200];
    snprintf(inc, sizeof inc, "-I%s", a->include_dir);
    args[nargs++] = "-xc";
    args[nargs++] = "-std=c17";
    args[nargs++] = inc;
    if (a->resource_dir) {
        args[nargs++] = "-resource-dir";
        args[nargs++] = a->resource_dir;
    }
    struct CXUnsavedFile unsaved = {path, t->text, (unsigned long)t->len};
    CXTranslationUnit tu;
    enum CXErrorCode rc = clang_parseTranslationUnit2(a->index, path, args, nargs, &unsaved, 1,
                                                      CXTranslationUnit_DetailedPreprocessingRecord, &tu);
    if (rc != CXError_Success)
        return nd_fail(err, "%s:1: libclang could not parse the template (error %d)", path, (int)rc);
    int result = check_diagnostics(tu, err);
    if (result == 0) {
        walk w = {.t = t, .path = path, .err = err};
        clang_visitChildren(clang_getTranslationUnitCursor(tu), visit, &w);
        if (!w.failed && !t->kernel)
            result = nd_fail(err, "%s:1: the template defines no kernel: one external function "
                                  "void NAME(const nda_core *core, const nda_args *args)", path);
        result = w.failed ? -1 : result;
        clang_getInclusions(tu, inclusion, t);
    }
    clang_disposeTranslationUnit(tu);
    return result;
}

static void template_free(ndg_template *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->ncalls; ++i)
        free(t->calls[i].tensor_expr);
    for (int i = 0; i < t->nloops; ++i) {
        free(t->loops[i].core_expr);
        free(t->loops[i].tensor_expr);
    }
    for (int i = 0; i < t->nparams; ++i) {
        free(t->params[i].name);
        free(t->params[i].args);
    }
    for (int i = 0; i < t->nrenames; ++i)
        free(t->renames[i]);
    for (int i = 0; i < t->nincludes; ++i)
        free(t->includes[i]);
    for (int i = 0; i < t->ndeps; ++i)
        free(t->deps[i]);
    free(t->renames);
    free(t->includes);
    free(t->deps);
    free(t->params);
    free(t->loops);
    free(t->calls);
    free(t->kernel);
    free(t->text);
    free(t->path);
    free(t);
}

int ndg_analyzer_open(const char *include_dir, const char *resource_dir, ndg_analyzer **out, nd_error *err)
{
    ndg_analyzer *a = calloc(1, sizeof *a);
    if (!a)
        return nd_fail(err, "analyzer: out of memory");
    a->index = clang_createIndex(0, 0);
    a->include_dir = strdup(include_dir);
    a->resource_dir = resource_dir ? strdup(resource_dir) : NULL;
    *out = a;
    return 0;
}

void ndg_analyzer_close(ndg_analyzer *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->ntemplates; ++i)
        template_free(a->templates[i]);
    free(a->templates);
    free(a->include_dir);
    free(a->resource_dir);
    clang_disposeIndex(a->index);
    free(a);
}

int ndg_template_get(ndg_analyzer *a, const char *path, const ndg_template **out, nd_error *err)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return nd_fail(err, "%s:1: cannot read the template", path);
    for (int i = 0; i < a->ntemplates; ++i)
        if (strcmp(a->templates[i]->path, real) == 0) {
            *out = a->templates[i];
            return 0;
        }
    ndg_template *t = calloc(1, sizeof *t);
    t->path = strdup(real);
    if (read_file(path, &t->text, &t->len, err) || parse(a, path, t, err)) {
        template_free(t);
        return -1;
    }
    a->templates = realloc(a->templates, (size_t)(a->ntemplates + 1) * sizeof *a->templates);
    a->templates[a->ntemplates++] = t;
    *out = t;
    return 0;
}
