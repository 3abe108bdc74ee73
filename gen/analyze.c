/*
 * analyze.c - stage 2: parse a kernel template with libclang and locate, by cursor, everything the
 * rewrite stage changes; and stage 5, translation validation of what it wrote.
 *
 * A template is parsed once per parameter set, with the op's parameters defined as the generated file
 * defines them, so bindings, tensor arguments and #if branches are the ones the compiler sees.
 *
 * What a template may do, and what it is refused for (each with the template's file:line:col):
 *   - bind operands in the kernel as  const nda_tensor *x = nda_operand(args, K);  with K an integer
 *     constant and args the kernel's own parameter; a bound variable is then used only as the tensor
 *     argument of nda_* calls: never assigned, stored, passed elsewhere or have its address taken;
 *   - call nda_* accessor functions (calls.def) directly, by name, with a bound variable as the tensor
 *     and a variable as the core; never through a pointer, a macro or a header of the template's own;
 *   - iterate its own pages with exactly
 *       for (nda_iter it = nda_iter_local(core, t); nda_iter_valid(&it); nda_iter_next(&it)) { ... }
 *     using the iterator only through nda_iter_page(&it) and nda_iter_ptr(&it), and with no break,
 *     return or goto leaving the body (the specialized loop nest could not honour them);
 *   - declare parameters as macros named NDT_*, with defaults under #ifndef, which specs override;
 *     its own headers use them and the template's own macros only inside macro bodies, and name no
 *     other header's macros in their directives (a header is read once per generated file, in the
 *     context of the first variant that includes it); __COUNTER__ and trigraphs appear nowhere;
 *   - define one external function, the kernel; everything else at file scope is static;
 *   - use no identifier starting with ndk and a digit: those are the generated code's.
 */
#include <clang-c/Index.h>
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ndgen.h"

const char *const ndg_call_names[NDG_CALL_KINDS] = {
#define NDG_SPECIALIZED(KIND, name, tensor_arg) #name,
#include "calls.def"
};

/* Which argument of each call is the tensor (-1: the iterator, argument 0, instead; -2: none). */
static const int tensor_arg[NDG_CALL_KINDS] = {
#define NDG_SPECIALIZED(KIND, name, tensor_arg) tensor_arg,
#include "calls.def"
};

static const char *const loop_calls[] = {
#define NDG_LOOP(name) #name,
#include "calls.def"
};

/* Kept as they are: calls.def's, and every dtype's conversions to and from f32 (ND_DTYPES; "" when
 * it has none, which names no call). */
#define NDG_DTYPE_CONVERSIONS(e, name, bytes, type, floating, load, store, tol, one) #load, #store,
static const char *const kept_calls[] = {
#define NDG_KEPT(name) #name,
#include "calls.def"
    ND_DTYPES(NDG_DTYPE_CONVERSIONS)
};
#undef NDG_DTYPE_CONVERSIONS

static bool listed(const char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; ++i)
        if (strcmp(list[i], name) == 0)
            return true;
    return false;
}

#define LISTED(list, name) listed(list, sizeof list / sizeof *list, name)

enum { MAX_BOUND = 64, MAX_LOOPS = 64 };

struct ndg_analyzer {
    CXIndex index;
    char *include_dir, *include_real, *resource_dir;
    int ndirs;
    char **dirs;                /* template folders, also searched for the templates' #includes */
    int ntemplates;
    ndg_template **templates;
};

typedef struct range {
    unsigned lo, hi;
} range;

typedef struct walk {
    ndg_analyzer *a;
    ndg_template *t;
    const char *path;           /* as the spec named it, for messages */
    nd_error *err;
    bool failed, defaults;      /* defaults: parsed without an op's parameters */
    CXCursor kernel, args;      /* the kernel's definition and its args parameter, once seen */
    int nbound;
    CXCursor bound_var[MAX_BOUND];
    int bound_operand[MAX_BOUND];
    CXCursor iter_var[MAX_LOOPS]; /* by loop index */
    int nallowed, nallowed_cap; /* where a bound variable, an iterator or args may be named */
    range *allowed;
    int ncallees, ncallees_cap; /* offsets of the names of direct calls to nda_ and nd_ functions */
    unsigned *callees;
    int nrenamed, nrenamed_cap; /* file-scope declarations of the template, canonical, and their names */
    CXCursor *renamed;
    char **renamed_names;
    int nrenamed_names, nrenamed_names_cap;
    int nmacro_refs, nmacro_refs_cap; /* references spelled in a macro body, which libclang cannot place */
    struct macro_ref {
        char *name;
        bool renamed;   /* to a renamed declaration, or to another of the same name */
        int line, col;
    } *macro_refs;
    int nspans, nspans_cap;     /* the template's own macro definitions */
    range *spans;
    const char *seeking;        /* the name find_body_ident looks for */
    int nhmacros, nhmacros_cap; /* macros its own headers define, and the real path of each one's header */
    struct header_macro {
        char *name, *file;
    } *hmacros;
    int ncasts, ncasts_cap;     /* the pointer type each page-returning call's value is converted to */
    struct cast {
        unsigned call;          /* the call's offset */
        int size;
        char cls;
    } *casts;
    int nifs, nifs_cap;         /* if statements whose condition is one nda_same_paging call */
    struct if_cond {
        unsigned call;          /* the call's offset */
        ndg_branch branch;
    } *ifs;
    bool jumps;                 /* the kernel has a label, goto or switch: no branch is folded */
    int ncalls_cap, nloops_cap, nrenames_cap, nundefs_cap, nmacros_cap, nscalar_refs_cap;
} walk;

#define GROW(arr, n, cap)                                                                                          \
    do {                                                                                                           \
        if ((n) == (cap)) {                                                                                        \
            (cap) = (cap) ? 2 * (cap) : 16;                                                                        \
            (arr) = ndg_realloc((arr), (size_t)(cap) * sizeof *(arr));                                                 \
        }                                                                                                          \
    } while (0)

/* ---------------------------------------------------------------- small cursor helpers */

static unsigned file_offset(CXSourceLocation loc)
{
    unsigned off;
    clang_getFileLocation(loc, NULL, NULL, NULL, &off);
    return off;
}

static void line_col_of(CXCursor c, int *line, int *col)
{
    unsigned l, k;
    clang_getFileLocation(clang_getCursorLocation(c), NULL, &l, &k, NULL);
    *line = (int)l;
    *col = (int)k;
}

static bool in_main_file(CXCursor c) { return clang_Location_isFromMainFile(clang_getCursorLocation(c)) != 0; }

/* "file:line:col" of c: the template as the spec named it, or the header it is in. */
static void where_of(const walk *w, CXCursor c, char *out, size_t len)
{
    CXFile f;
    unsigned l, k;
    clang_getFileLocation(clang_getCursorLocation(c), &f, &l, &k, NULL);
    if (in_main_file(c)) {
        snprintf(out, len, "%s:%u:%u", w->path, l, k);
    } else {
        CXString s = clang_getFileName(f);
        snprintf(out, len, "%s:%u:%u", clang_getCString(s) ? clang_getCString(s) : "?", l, k);
        clang_disposeString(s);
    }
}

__attribute__((format(printf, 3, 4))) static int fail_at(walk *w, CXCursor c, const char *fmt, ...)
{
    char msg[ND_ERROR_LEN], at[1200];
    va_list ap;
    if (w->failed)
        return -1; /* keep the first error */
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    where_of(w, c, at, sizeof at);
    w->failed = true;
    return nd_fail(w->err, "%s: %s", at, msg);
}

static char *spelling(CXCursor c)
{
    CXString s = clang_getCursorSpelling(c);
    char *out = ndg_strdup(clang_getCString(s));
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
    return ndg_strndup(w->t->text + s, e - s);
}

/* The variable a plain reference names (through casts and parentheses), or a null cursor. */
static CXCursor var_of(CXCursor expr)
{
    CXCursor e = unwrap(expr);
    if (clang_getCursorKind(e) != CXCursor_DeclRefExpr)
        return clang_getNullCursor();
    CXCursor v = clang_getCursorReferenced(e);
    enum CXCursorKind k = clang_getCursorKind(v);
    return k == CXCursor_VarDecl || k == CXCursor_ParmDecl ? v : clang_getNullCursor();
}

static bool accessor_name(const char *name) { return strncmp(name, "nda_", 4) == 0 || strncmp(name, "nd_", 3) == 0; }

/* ndk followed by a digit starts every name the generated code declares. */
static bool reserved_name(const char *name)
{
    return strncmp(name, "ndk", 3) == 0 && name[3] >= '0' && name[3] <= '9';
}

/* ---------------------------------------------------------------- where names may appear */

static void allow(walk *w, CXCursor arg)
{
    GROW(w->allowed, w->nallowed, w->nallowed_cap);
    extent(arg, &w->allowed[w->nallowed].lo, &w->allowed[w->nallowed].hi);
    ++w->nallowed;
}

static bool allowed_at(const walk *w, unsigned at)
{
    for (int k = 0; k < w->nallowed; ++k)
        if (at >= w->allowed[k].lo && at < w->allowed[k].hi)
            return true;
    return false;
}

/* ---------------------------------------------------------------- bindings and iterators */

static int bound_index(const walk *w, CXCursor var)
{
    for (int i = 0; i < w->nbound; ++i)
        if (clang_equalCursors(var, w->bound_var[i]))
            return i;
    return -1;
}

static int bound_operand(const walk *w, CXCursor expr)
{
    CXCursor v = var_of(expr);
    int i = clang_Cursor_isNull(v) ? -1 : bound_index(w, v);
    return i < 0 ? -1 : w->bound_operand[i];
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

static bool inside(CXCursor outer, CXCursor c)
{
    unsigned a, b, x, y;
    extent(outer, &a, &b);
    extent(c, &x, &y);
    return in_main_file(c) && x >= a && y <= b;
}

/* const nda_tensor *x = nda_operand(args, K);  in the kernel, with its own args. */
static int visit_var(walk *w, CXCursor var)
{
    kids k = children(var);
    for (int i = 0; i < k.n && i < 8; ++i) {
        if (!is_call_to(k.c[i], "nda_operand"))
            continue;
        CXCursor call = unwrap(k.c[i]);
        if (clang_Cursor_getNumArguments(call) != 2)
            return fail_at(w, call, "nda_operand takes (args, index)");
        CXCursor args = var_of(clang_Cursor_getArgument(call, 0));
        if (clang_Cursor_isNull(w->kernel) || !inside(w->kernel, call) || clang_Cursor_isNull(args) ||
            !clang_equalCursors(args, w->args))
            return fail_at(w, call, "bind operands in the kernel, as nda_operand(args, K) with the kernel's own args");
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
    int loop;  /* the nda_iter loop's index in w->t->loops */
    int depth; /* nested loops and switches: a break there stays inside the body */
    int loops; /* nested loops alone: a continue there stays inside the body (a switch passes it on) */
} body_scan;

static enum CXChildVisitResult scan_body(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    body_scan *b = data;
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_BreakStmt && b->depth == 0)
        fail_at(b->w, c, "'break' leaves an nda_iter loop; the specialized loop nest cannot honour it");
    else if (k == CXCursor_ContinueStmt && b->loops == 0)
        b->w->t->loops[b->loop].continues = true;
    else if (k == CXCursor_ReturnStmt || k == CXCursor_GotoStmt || k == CXCursor_IndirectGotoStmt)
        fail_at(b->w, c, "'%s' inside an nda_iter loop; the specialized loop nest cannot honour it",
                k == CXCursor_ReturnStmt ? "return" : "goto");
    if (b->w->failed)
        return CXChildVisit_Break;
    bool loop = k == CXCursor_ForStmt || k == CXCursor_WhileStmt || k == CXCursor_DoStmt;
    bool nest = loop || k == CXCursor_SwitchStmt;
    body_scan inner = {b->w, b->loop, b->depth + nest, b->loops + loop};
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

static unsigned decl_offset(CXCursor var) { return file_offset(clang_getCursorLocation(var)); }

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
    CXCursor core = var_of(clang_Cursor_getArgument(local, 0));
    if (clang_Cursor_isNull(core))
        return fail_at(w, local, "nda_iter_local's core must be a variable, such as the kernel's core");
    w->iter_var[idx] = var;
    GROW(w->t->loops, w->t->nloops, w->nloops_cap);
    ndg_loop *l = &w->t->loops[w->t->nloops++];
    memset(l, 0, sizeof *l);
    unsigned unused;
    extent(f, &l->start, &unused);
    extent(k.c[3], &l->body_start, &l->body_end);
    line_col_of(f, &l->line, &l->col);
    l->operand = operand;
    l->core_expr = text_of(w, clang_Cursor_getArgument(local, 0));
    l->core_decl = decl_offset(core);
    l->tensor_expr = text_of(w, clang_Cursor_getArgument(local, 1));
    allow(w, clang_Cursor_getArgument(local, 1));
    for (int i = 1; i <= 2; ++i) {
        CXCursor c = unwrap(k.c[i]);
        if (iterator_loop(w, clang_Cursor_getArgument(c, 0)) != idx)
            return fail_at(w, c, "%s", loop_form);
        allow(w, clang_Cursor_getArgument(c, 0));
    }
    body_scan b = {w, idx, 0, 0};
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

/* Every specialized call but the tensor-only ones takes the core first. */
static bool takes_core(ndg_call_kind kind) { return tensor_arg[kind] == 1; }

/* nda_scalar(args, "name"): the kernel's own args, and a name the emitter checks against the op's
 * declaration (a template serves every op that binds it, each with its own scalars). */
static int scalar_call(walk *w, CXCursor call, ndg_call *c)
{
    CXCursor args = var_of(clang_Cursor_getArgument(call, 0)), name = unwrap(clang_Cursor_getArgument(call, 1));
    if (clang_Cursor_isNull(args) || clang_Cursor_isNull(w->args) || !clang_equalCursors(args, w->args))
        return fail_at(w, call, "nda_scalar's first argument must be the kernel's own args");
    allow(w, clang_Cursor_getArgument(call, 0));
    char *lit = clang_getCursorKind(name) == CXCursor_StringLiteral ? spelling(name) : NULL;
    size_t n = lit ? strlen(lit) : 0;
    bool ok = n > 2 && n - 2 < ND_SCALAR_NAME && lit[0] == '"' && lit[n - 1] == '"' &&
              (isalpha((unsigned char)lit[1]) || lit[1] == '_');
    for (size_t i = 1; ok && i + 1 < n; ++i)
        ok = isalnum((unsigned char)lit[i]) || lit[i] == '_';
    if (ok) {
        c->scalar = ndg_strndup(lit + 1, n - 2);
        c->tensor_expr = text_of(w, clang_Cursor_getArgument(call, 0));
    }
    free(lit);
    return ok ? 0 : fail_at(w, call, "nda_scalar's name must be a string literal naming a declared scalar, such as \"eps\"");
}

static int record_call(walk *w, CXCursor call, int kind, unsigned start, unsigned end)
{
    const char *name = ndg_call_names[kind];
    ndg_call c = {.kind = (ndg_call_kind)kind, .start = start, .end = end, .operand = -1, .operand2 = -1, .loop = -1};
    c.name_end = start + (unsigned)strlen(name);
    line_col_of(call, &c.line, &c.col);
    if (tensor_arg[kind] == -2) {
        if (scalar_call(w, call, &c))
            return -1;
    } else if (tensor_arg[kind] < 0) {
        CXCursor it = clang_Cursor_getArgument(call, 0);
        c.loop = iterator_loop(w, it);
        if (c.loop < 0)
            return fail_at(w, call, "%s's argument must be &it, the iterator of an enclosing nda_iter loop", name);
        allow(w, it);
    } else {
        CXCursor tensor = clang_Cursor_getArgument(call, tensor_arg[kind]);
        c.operand = bound_operand(w, tensor);
        if (c.operand < 0)
            return fail_at(w, call, "%s's tensor must be a variable bound with nda_operand(args, N)", name);
        allow(w, tensor);
        c.tensor_expr = text_of(w, tensor);
        if (kind == NDG_SAME_PAGING) {
            CXCursor second = clang_Cursor_getArgument(call, 1);
            if ((c.operand2 = bound_operand(w, second)) < 0)
                return fail_at(w, call, "nda_same_paging's tensors must be variables bound with nda_operand(args, N)");
            allow(w, second);
            for (int i = 0; i < w->nifs; ++i)
                if (w->ifs[i].call == start)
                    c.branch = w->ifs[i].branch;
        }
        c.tensor_decl = decl_offset(var_of(tensor));
        if (takes_core((ndg_call_kind)kind)) {
            CXCursor core = var_of(clang_Cursor_getArgument(call, 0));
            if (clang_Cursor_isNull(core))
                return fail_at(w, call, "%s's core must be a variable, such as the kernel's core", name);
            c.core_decl = decl_offset(core);
        }
        if (kind == NDG_PAGE_READ || kind == NDG_PAGE_WRITE) {
            CXCursor page = unwrap(clang_Cursor_getArgument(call, 2));
            if (is_call_to(page, "nda_iter_page"))
                c.loop = iterator_loop(w, clang_Cursor_getArgument(page, 0));
        }
    }
    for (int i = 0; i < w->ncasts; ++i)
        if (w->casts[i].call == start) {
            c.elem_size = w->casts[i].size;
            c.elem_class = w->casts[i].cls;
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
    if (!accessor_name(name)) {
        free(name);
        return 0;
    }
    if (LISTED(kept_calls, name)) { /* no distribution involved: may stand anywhere, macros included */
        if (strcmp(name, "nda_operand") == 0)
            allow(w, clang_Cursor_getArgument(call, 0));
    } else if (check_not_macro(w, call, name, &start, &end)) {
        rc = -1;
    } else {
        GROW(w->callees, w->ncallees, w->ncallees_cap);
        w->callees[w->ncallees++] = start;
        int kind = classify(name);
        if (strncmp(name, "nd_", 3) == 0)
            rc = fail_at(w, call, "%s: templates reach distributions only through nda_* calls, which ndgen can specialize",
                         name);
        else if (kind >= 0)
            rc = record_call(w, call, kind, start, end);
        else if (LISTED(loop_calls, name))
            rc = loop_header_call(w, call, name, start);
        else
            rc = fail_at(w, call, "%s is not part of the accessor API ndgen specializes", name);
    }
    free(name);
    return rc;
}

/* Whether m's text is the template's own, where its cursor says (not a macro's, not a header's), and
 * ends with its member's name: then it can be edited at [start, end). */
static bool own_text(const walk *w, CXCursor m, unsigned *start, unsigned *end)
{
    unsigned exp;
    if (!in_main_file(m))
        return false;
    clang_getExpansionLocation(clang_getRangeStart(clang_getCursorExtent(m)), NULL, NULL, NULL, &exp);
    extent(m, start, end);
    return exp == *start && *end <= w->t->len && *end > *start + 7 &&
           strncmp(w->t->text + *end - 7, "scalars", 7) == 0 && memchr(w->t->text + *start, '>', *end - *start);
}

/* args->scalars and args->nscalars: the launch's scalars, which involve no distribution. */
static void visit_member(walk *w, CXCursor m)
{
    kids k = children(m);
    CXCursor base = k.n == 1 ? var_of(k.c[0]) : clang_getNullCursor();
    if (clang_Cursor_isNull(base) || clang_Cursor_isNull(w->args) || !clang_equalCursors(base, w->args) ||
        !(spelled(m, "scalars") || spelled(m, "nscalars")))
        return;
    allow(w, m);
    unsigned start, end;
    if (!own_text(w, m, &start, &end)) /* from a macro: left as written, which stays right */
        return;
    GROW(w->t->scalar_refs, w->t->nscalar_refs, w->nscalar_refs_cap);
    w->t->scalar_refs[w->t->nscalar_refs++] = (ndg_scalar_ref){start, end, spelled(m, "nscalars")};
}

static void add_name(char ***list, int *n, int *cap, const char *name)
{
    for (int i = 0; i < *n; ++i)
        if (strcmp((*list)[i], name) == 0)
            return;
    GROW(*list, *n, *cap);
    (*list)[(*n)++] = ndg_strdup(name);
}

/* ---------------------------------------------------------------- element types of page data */

/* The element a pointer type points to: 'f' floating, 'i' integer, 'b' bytes (void or a character
 * type: any data may be read as bytes), 0 for anything else; *size its bytes. */
static char pointee_class(CXType t, int *size)
{
    if (t.kind != CXType_Pointer)
        return 0;
    CXType e = clang_getCanonicalType(clang_getPointeeType(t));
    long long n = clang_Type_getSizeOf(e);
    *size = n > 0 ? (int)n : 0;
    switch (e.kind) {
    case CXType_Void: case CXType_Char_S: case CXType_Char_U: case CXType_SChar: case CXType_UChar: return 'b';
    case CXType_Float: case CXType_Double: case CXType_LongDouble: return 'f';
    case CXType_Short: case CXType_UShort: case CXType_Int: case CXType_UInt: case CXType_Long: case CXType_ULong:
    case CXType_LongLong: case CXType_ULongLong: case CXType_Bool: return 'i';
    default: return 0;
    }
}

/* A cast, written or implicit, of a call's value: remembered for the call, which is visited next. The
 * outermost conversion is the one the template reads the page through. */
static void visit_cast(walk *w, CXCursor c)
{
    kids k = children(c);
    CXCursor call = k.n >= 1 ? unwrap(k.c[k.n - 1]) : clang_getNullCursor();
    if (clang_Cursor_isNull(call) || clang_getCursorKind(call) != CXCursor_CallExpr)
        return;
    int size = 0;
    char cls = pointee_class(clang_getCursorType(c), &size);
    unsigned at, end;
    extent(call, &at, &end);
    for (int i = 0; i < w->ncasts; ++i)
        if (w->casts[i].call == at)
            return;
    if (cls) {
        GROW(w->casts, w->ncasts, w->ncasts_cap);
        w->casts[w->ncasts++] = (struct cast){at, size, cls};
    }
}

/* ---------------------------------------------------------------- renaming */

static bool is_renamed(const walk *w, CXCursor decl)
{
    CXCursor c = clang_getCanonicalCursor(decl);
    for (int i = 0; i < w->nrenamed; ++i)
        if (clang_equalCursors(c, w->renamed[i]))
            return true;
    return false;
}

static void macro_ref(walk *w, CXCursor c, const char *name, bool renamed)
{
    GROW(w->macro_refs, w->nmacro_refs, w->nmacro_refs_cap);
    struct macro_ref *r = &w->macro_refs[w->nmacro_refs++];
    r->name = ndg_strdup(name);
    r->renamed = renamed;
    line_col_of(c, &r->line, &r->col);
}

/* Records the identifier `name` at the location of c (after a struct/union/enum keyword). */
static int add_rename(walk *w, CXCursor c, const char *name, bool kernel)
{
    unsigned at = file_offset(clang_getCursorLocation(c)), n = (unsigned)strlen(name);
    const char *text = w->t->text;
    static const char *const tags[] = {"struct", "union", "enum"};
    for (size_t i = 0; i < 3; ++i) {
        size_t m = strlen(tags[i]);
        if (at + m < w->t->len && strncmp(text + at, tags[i], m) == 0 && (text[at + m] == ' ' || text[at + m] == '\t' ||
                                                                         text[at + m] == '\n')) {
            at += (unsigned)m;
            while (at < w->t->len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n'))
                ++at;
        }
    }
    bool ident_end = at + n >= w->t->len || !(isalnum((unsigned char)text[at + n]) || text[at + n] == '_');
    if (at + n > w->t->len || strncmp(text + at, name, n) != 0 || !ident_end) {
        macro_ref(w, c, name, true); /* spelled in a macro body: renamed there, after the walk */
        return 0;
    }
    GROW(w->t->renames, w->t->nrenames, w->nrenames_cap);
    w->t->renames[w->t->nrenames++] = (ndg_rename){at, n, kernel};
    return 0;
}

static bool is_kernel(const walk *w, CXCursor decl)
{
    return !clang_Cursor_isNull(w->kernel) &&
           clang_equalCursors(clang_getCanonicalCursor(decl), clang_getCanonicalCursor(w->kernel));
}

/* A file-scope declaration of the template: its name is made unique per variant. */
static int declare_renamed(walk *w, CXCursor c)
{
    char *name = spelling(c);
    int rc = 0;
    if (name[0]) {
        if (!is_renamed(w, c)) {
            GROW(w->renamed, w->nrenamed, w->nrenamed_cap);
            w->renamed[w->nrenamed++] = clang_getCanonicalCursor(c);
            add_name(&w->renamed_names, &w->nrenamed_names, &w->nrenamed_names_cap, name);
        }
        rc = add_rename(w, c, name, is_kernel(w, c));
    }
    free(name);
    return rc;
}

/* A reference: to a bound variable, an iterator, args, an accessor function, or a renamed name. */
static int visit_ref(walk *w, CXCursor ref)
{
    CXCursor d = clang_getCursorReferenced(ref);
    unsigned at = file_offset(clang_getCursorLocation(ref));
    enum CXCursorKind k = clang_getCursorKind(d);
    if (k == CXCursor_FunctionDecl) {
        char *name = spelling(d);
        bool direct = true;
        if (accessor_name(name) && !LISTED(kept_calls, name)) {
            direct = false;
            for (int i = 0; i < w->ncallees && !direct; ++i)
                direct = w->callees[i] == at;
        }
        int rc = direct ? 0 : fail_at(w, ref, "%s is used other than in a direct call; ndgen specializes only the "
                                              "calls it sees", name);
        free(name);
        if (rc)
            return rc;
    }
    int b = k == CXCursor_VarDecl ? bound_index(w, d) : -1;
    if (b >= 0 && !allowed_at(w, at)) {
        char *name = spelling(d);
        fail_at(w, ref, "'%s' is bound to operand %d: use it only as the tensor argument of nda_* calls (never "
                        "assign it, store it, pass it elsewhere or take its address)", name, w->bound_operand[b]);
        free(name);
        return -1;
    }
    for (int i = 0; i < w->t->nloops; ++i)
        if (clang_equalCursors(d, w->iter_var[i]) && !allowed_at(w, at))
            return fail_at(w, ref, "use the iterator only as nda_iter_page(&it) and nda_iter_ptr(&it)");
    if (!clang_Cursor_isNull(w->args) && clang_equalCursors(d, w->args) && !allowed_at(w, at))
        return fail_at(w, ref, "use the kernel's args only as nda_operand(args, K), args->scalars and args->nscalars");
    if (is_renamed(w, d)) {
        char *name = spelling(d);
        int rc = add_rename(w, ref, name, is_kernel(w, d));
        free(name);
        return rc;
    }
    unsigned exp;
    clang_getExpansionLocation(clang_getCursorLocation(ref), NULL, NULL, NULL, &exp);
    char *name = spelling(d);
    if (k == CXCursor_VarDecl || k == CXCursor_ParmDecl || k == CXCursor_FunctionDecl || k == CXCursor_TypedefDecl) {
        size_t n = strlen(name);
        if (exp + n > w->t->len || strncmp(w->t->text + exp, name, n) != 0)
            macro_ref(w, ref, name, false);
    }
    free(name);
    return 0;
}

/* ---------------------------------------------------------------- file scope */

static int visit_file_scope(walk *w, CXCursor c)
{
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_FunctionDecl && clang_getCursorLinkage(c) == CXLinkage_External) {
        char *name = spelling(c);
        bool def = clang_isCursorDefinition(c);
        int rc = 0;
        if (def && w->t->kernel && strcmp(w->t->kernel, name) != 0)
            rc = fail_at(w, c, "a second external function; make helpers static, the kernel is '%s'", w->t->kernel);
        else if (def && clang_Cursor_getNumArguments(c) != 2)
            rc = fail_at(w, c, "the kernel takes (const nda_core *core, const nda_args *args)");
        else if (def && !w->t->kernel) {
            w->t->kernel = ndg_strdup(name);
            w->kernel = c;
            w->args = clang_Cursor_getArgument(c, 1);
        }
        free(name);
        return rc ? rc : declare_renamed(w, c);
    }
    if (k == CXCursor_VarDecl && clang_getCursorLinkage(c) == CXLinkage_External)
        return fail_at(w, c, "file-scope variables must be static: a kernel library holds many variants");
    if (k == CXCursor_FunctionDecl || k == CXCursor_VarDecl || k == CXCursor_TypedefDecl || k == CXCursor_StructDecl ||
        k == CXCursor_UnionDecl || k == CXCursor_EnumDecl)
        return declare_renamed(w, c);
    return 0;
}

/* Whether the parameter set (lines "NDT_X=v" or "NDT_X(a)=v") defines macro name. */
static bool set_by(const char *defines, const char *name)
{
    size_t n = strlen(name);
    for (const char *d = defines; *d;) {
        if (strncmp(d, name, n) == 0 && (d[n] == '=' || d[n] == '('))
            return true;
        const char *eol = strchr(d, '\n');
        if (!eol)
            break;
        d = eol + 1;
    }
    return false;
}

/* Records macro c, named name, with where it is defined (once per name: the first definition). */
static void add_macro(walk *w, CXCursor c, const char *name)
{
    ndg_template *t = w->t;
    for (int i = 0; i < t->nmacros; ++i)
        if (strcmp(t->macros[i], name) == 0)
            return;
    CXFile f;
    unsigned line, col;
    clang_getSpellingLocation(clang_getCursorLocation(c), &f, &line, &col, NULL);
    CXString file = clang_getFileName(f);
    char at[PATH_MAX + 32];
    snprintf(at, sizeof at, "%s:%u:%u", clang_getCString(file) ? clang_getCString(file) : t->path, line, col);
    clang_disposeString(file);
    int cap = w->nmacros_cap;
    GROW(t->macros, t->nmacros, w->nmacros_cap);
    if (cap != w->nmacros_cap)
        t->macro_at = ndg_realloc(t->macro_at, (size_t)w->nmacros_cap * sizeof *t->macro_at);
    t->macro_at[t->nmacros] = ndg_strdup(at);
    t->macros[t->nmacros++] = ndg_strdup(name);
}

static void visit_macro(walk *w, CXCursor c)
{
    char *name = spelling(c);
    if (!in_main_file(c)) { /* a header of the template's own: generated code must not use its names */
        add_macro(w, c, name);
        CXFile f;
        clang_getFileLocation(clang_getCursorLocation(c), &f, NULL, NULL, NULL);
        CXString file = clang_getFileName(f);
        char real[PATH_MAX];
        GROW(w->hmacros, w->nhmacros, w->nhmacros_cap);
        w->hmacros[w->nhmacros].name = name;
        w->hmacros[w->nhmacros++].file = ndg_strdup(realpath(clang_getCString(file), real) ? real : "");
        clang_disposeString(file);
        return;
    }
    add_macro(w, c, name);
    add_name(&w->t->undefs, &w->t->nundefs, &w->nundefs_cap, name);
    GROW(w->spans, w->nspans, w->nspans_cap);
    extent(c, &w->spans[w->nspans].lo, &w->spans[w->nspans].hi);
    ++w->nspans;
    if (!w->defaults && strncmp(name, "NDT_", 4) == 0 && set_by(w->t->defines, name)) {
        fail_at(w, c, "%s is defined without #ifndef %s around it, so the spec's value for it would be replaced; "
                      "give the template's default as #ifndef %s / #define ... / #endif", name, name, name);
        free(name);
        return;
    }
    bool known = strncmp(name, "NDT_", 4) != 0 || !w->defaults;
    for (int i = 0; i < w->t->nparams && !known; ++i)
        known = strcmp(w->t->params[i].name, name + 4) == 0;
    if (!known) {
        w->t->params = ndg_realloc(w->t->params, (size_t)(w->t->nparams + 1) * sizeof *w->t->params);
        ndg_tparam *p = &w->t->params[w->t->nparams++];
        p->name = ndg_strdup(name + 4);
        p->args = ndg_strdup("");
        if (clang_Cursor_isMacroFunctionLike(c)) { /* the text after the name, up to its ')' */
            unsigned s, e;
            extent(c, &s, &e);
            const char *open = w->t->text + s + strlen(name);
            const char *close = memchr(open, ')', e - (unsigned)(open - w->t->text));
            if (close) {
                free(p->args);
                p->args = ndg_strndup(open, (size_t)(close - open + 1));
            }
        }
    }
    free(name);
}

/* Declarations whose names could collide with the generated code's. */
static int check_reserved(walk *w, CXCursor c)
{
    enum CXCursorKind k = clang_getCursorKind(c);
    if (!(clang_isDeclaration(k) || k == CXCursor_MacroDefinition || k == CXCursor_LabelStmt) || !in_main_file(c))
        return 0;
    char *name = spelling(c);
    int rc = reserved_name(name) ? fail_at(w, c, "'%s': names starting with ndk and a digit are the generated code's",
                                           name)
                                 : 0;
    free(name);
    return rc;
}

/* Whether file is a header of the template's own: not a system header, not the accessor API's. */
static bool own_header(const ndg_analyzer *a, CXFile file)
{
    CXString s = clang_getFileName(file);
    char real[PATH_MAX];
    bool own = clang_getCString(s) && realpath(clang_getCString(s), real) &&
               strncmp(real, a->include_real, strlen(a->include_real)) != 0;
    clang_disposeString(s);
    return own;
}

/* In a header of the template's own, accessor calls are refused: ndgen rewrites only the template. */
static enum CXChildVisitResult visit_header(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    walk *w = data;
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_DeclRefExpr) {
        CXCursor d = clang_getCursorReferenced(c);
        char *name = clang_getCursorKind(d) == CXCursor_FunctionDecl ? spelling(d) : NULL;
        if (name && accessor_name(name))
            fail_at(w, c, "%s in a header; accessor calls belong in the template, where ndgen specializes them", name);
        free(name);
    }
    return w->failed ? CXChildVisit_Break : CXChildVisit_Recurse;
}

/* Whether statement c always ends in a return: a return, or a block whose last statement is one. */
static bool ends_in_return(CXCursor c)
{
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_ReturnStmt)
        return true;
    if (k != CXCursor_CompoundStmt)
        return false;
    kids ch = children(c);
    return ch.n > 0 && ch.n <= 8 && clang_getCursorKind(ch.c[ch.n - 1]) == CXCursor_ReturnStmt;
}

typedef struct ref_search {
    CXCursor var;
    unsigned lo, hi;
    bool found;
} ref_search;

static enum CXChildVisitResult find_ref(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    ref_search *r = data;
    if (clang_getCursorKind(c) == CXCursor_DeclRefExpr && clang_equalCursors(clang_getCursorReferenced(c), r->var)) {
        unsigned at = file_offset(clang_getCursorLocation(c));
        r->found |= at >= r->lo && at < r->hi;
    }
    return r->found ? CXChildVisit_Break : CXChildVisit_Recurse;
}

/* Whether var is named in [lo, hi) of the statements under root. */
static bool named_in(CXCursor root, CXCursor var, unsigned lo, unsigned hi)
{
    ref_search r = {var, lo, hi, false};
    if (hi > lo)
        clang_visitChildren(root, find_ref, &r);
    return r.found;
}

typedef struct scope_vars {
    int n;
    CXCursor v[64];
    bool overflow;
    unsigned before; /* collect_block_vars: declarations before this offset */
} scope_vars;

static enum CXChildVisitResult collect_var(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    scope_vars *s = data;
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_VarDecl || k == CXCursor_ParmDecl) {
        if (s->n < 64)
            s->v[s->n++] = c;
        else
            s->overflow = true;
    }
    return CXChildVisit_Continue;
}

static enum CXChildVisitResult collect_block_vars(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    scope_vars *s = data;
    if (clang_getCursorKind(c) == CXCursor_DeclStmt && decl_offset(c) < s->before)
        clang_visitChildren(c, collect_var, s);
    return CXChildVisit_Continue;
}

/* Whether every variable in scope at the if (the kernel's parameters, and the declarations of the block
 * before it) stays named in what a fold keeps: kept[0..nkept) ranges. A fold that left one unnamed would
 * make a warning of an unused variable in the generated file. */
static bool fold_keeps_names(walk *w, CXCursor block, unsigned if_start, const range *kept, int nkept)
{
    scope_vars s = {.before = if_start};
    clang_visitChildren(w->kernel, collect_var, &s);
    clang_visitChildren(block, collect_block_vars, &s);
    if (s.overflow)
        return false;
    for (int i = 0; i < s.n; ++i) {
        bool named = false;
        for (int j = 0; j < nkept && !named; ++j)
            named = named_in(w->kernel, s.v[i], kept[j].lo, kept[j].hi);
        if (!named)
            return false;
    }
    return true;
}

/* Whether both folds keep every variable in scope named: what comes before the if, then, when the
 * condition holds, the then statement and what follows the if (nothing, when the then statement
 * returns); when it does not, the else statement and what follows. */
static void check_fold_names(walk *w, CXCursor block, ndg_branch *b)
{
    bool has_else = b->else_end > 0, tail = !has_else && b->then_returns;
    unsigned start, end;
    extent(block, &start, &end);
    range when_true[3] = {{start, b->if_start}, {b->then_start, b->then_end},
                          {has_else ? b->else_end : b->then_end, tail ? b->then_end : b->tail_end}};
    range when_false[3] = {{start, b->if_start}, {b->else_start, b->else_end},
                           {has_else ? b->else_end : b->then_end, b->tail_end}};
    b->fold = fold_keeps_names(w, block, b->if_start, when_true, 3) &&
              fold_keeps_names(w, block, b->if_start, when_false, 3);
}

/* Records an if statement whose whole condition is an nda_same_paging call, written in the template
 * itself (not by a macro) among the kernel's top statements, so the rewriter can keep only the path a
 * specialized kernel takes. */
static void visit_if(walk *w, CXCursor c, CXCursor parent)
{
    kids k = children(c);
    if (k.n < 2 || k.n > 3 || !is_call_to(k.c[0], "nda_same_paging") || clang_Cursor_isNull(w->kernel))
        return;
    kids body = children(w->kernel);
    if (body.n < 1 || body.n > 8 || !clang_equalCursors(body.c[body.n - 1], parent))
        return; /* only an if among the kernel's own statements: the scope check below sees all it needs */
    ndg_branch b = {.fold = true};
    unsigned end, call_start, call_end, exp_off;
    extent(c, &b.if_start, &end);
    clang_getExpansionLocation(clang_getRangeStart(clang_getCursorExtent(c)), NULL, NULL, NULL, &exp_off);
    if (exp_off != b.if_start || b.if_start + 2 > w->t->len || strncmp(w->t->text + b.if_start, "if", 2) != 0)
        return; /* from a macro: its text is not where the cursor says */
    extent(unwrap(k.c[0]), &call_start, &call_end);
    extent(k.c[1], &b.then_start, &b.then_end);
    if (k.n == 3)
        extent(k.c[2], &b.else_start, &b.else_end);
    b.then_returns = ends_in_return(k.c[1]);
    if (clang_getCursorKind(parent) == CXCursor_CompoundStmt) {
        unsigned lo;
        extent(parent, &lo, &b.tail_end);
        b.tail_end -= 1; /* the block's closing brace */
    }
    if (b.then_end > b.then_start && b.then_end <= w->t->len && b.tail_end <= w->t->len) {
        check_fold_names(w, parent, &b);
        GROW(w->ifs, w->nifs, w->nifs_cap);
        w->ifs[w->nifs++] = (struct if_cond){call_start, b};
    }
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent, CXClientData data)
{
    walk *w = data;
    enum CXCursorKind k = clang_getCursorKind(c);
    bool top = clang_getCursorKind(parent) == CXCursor_TranslationUnit;
    if (top && !in_main_file(c)) {
        CXFile f;
        clang_getFileLocation(clang_getCursorLocation(c), &f, NULL, NULL, NULL);
        bool own = f && !clang_Location_isInSystemHeader(clang_getCursorLocation(c)) && own_header(w->a, f);
        if (own && k == CXCursor_MacroDefinition)
            visit_macro(w, c);
        else if (own)
            clang_visitChildren(c, visit_header, w);
        return w->failed ? CXChildVisit_Break : CXChildVisit_Continue;
    }
    /* Inside the template, a statement may start with a macro and so not be "from the main file"; its
     * children still are, so recurse. */
    if (check_reserved(w, c))
        return CXChildVisit_Break;
    if (top && k == CXCursor_MacroDefinition)
        visit_macro(w, c);
    else if (top)
        visit_file_scope(w, c);
    else if (k == CXCursor_EnumConstantDecl && clang_getCursorKind(clang_getCursorSemanticParent(
                                                   clang_getCursorSemanticParent(c))) == CXCursor_TranslationUnit)
        declare_renamed(w, c);
    if (k == CXCursor_CStyleCastExpr || k == CXCursor_UnexposedExpr)
        visit_cast(w, c);
    if (k == CXCursor_IfStmt)
        visit_if(w, c, parent);
    w->jumps |= k == CXCursor_LabelStmt || k == CXCursor_GotoStmt || k == CXCursor_IndirectGotoStmt ||
                k == CXCursor_SwitchStmt;
    if (k == CXCursor_VarDecl)
        visit_var(w, c);
    else if (k == CXCursor_ForStmt)
        visit_for(w, c);
    else if (k == CXCursor_CallExpr)
        visit_call(w, c);
    else if (k == CXCursor_MemberRefExpr)
        visit_member(w, c);
    else if (k == CXCursor_DeclRefExpr || k == CXCursor_TypeRef)
        visit_ref(w, c);
    return w->failed ? CXChildVisit_Break : CXChildVisit_Recurse;
}

/* ---------------------------------------------------------------- names in macro bodies */

/* Calls f(w, name, offset) for each identifier of macro definition span, with the macro's own name and
 * parameters left out, and members (after . or ->) too. Comments and strings are skipped. */
static int each_body_ident(walk *w, range span, int (*f)(walk *, const char *, unsigned, unsigned))
{
    const char *t = w->t->text;
    unsigned i = span.lo, hi = span.hi;
    char params[16][64];
    int nparams = 0;
    while (i < hi && ndg_ident_char(t[i])) /* the macro's name */
        ++i;
    if (i < hi && t[i] == '(') { /* a function-like macro's parameters */
        while (i < hi && t[i] != ')') {
            if (ndg_ident_char(t[i]) && !isdigit((unsigned char)t[i])) {
                unsigned j = i;
                while (j < hi && ndg_ident_char(t[j]))
                    ++j;
                if (nparams < 16)
                    snprintf(params[nparams++], sizeof params[0], "%.*s", (int)(j - i), t + i);
                i = j;
            } else {
                ++i;
            }
        }
    }
    for (; i < hi; ++i) {
        if (t[i] == '"' || t[i] == '\'') {
            char q = t[i];
            for (++i; i < hi && t[i] != q; ++i)
                i += t[i] == '\\';
        } else if (t[i] == '/' && i + 1 < hi && t[i + 1] == '*') {
            for (i += 2; i + 1 < hi && !(t[i] == '*' && t[i + 1] == '/'); ++i)
                ;
        } else if (isdigit((unsigned char)t[i])) {
            while (i + 1 < hi && ndg_ident_char(t[i + 1]))
                ++i;
        } else if (ndg_ident_char(t[i])) {
            unsigned j = i;
            while (j < hi && ndg_ident_char(t[j]))
                ++j;
            unsigned p = i;
            while (p > span.lo && (t[p - 1] == ' ' || t[p - 1] == '\t'))
                --p;
            bool member = (p > span.lo && t[p - 1] == '.') || (p > span.lo + 1 && t[p - 1] == '>' && t[p - 2] == '-');
            bool param = false;
            for (int k = 0; k < nparams && !param; ++k)
                param = strlen(params[k]) == j - i && strncmp(params[k], t + i, j - i) == 0;
            if (!member && !param && f(w, t + i, i, j - i))
                return -1;
            i = j - 1;
        }
    }
    return 0;
}

static int rename_body_ident(walk *w, const char *id, unsigned at, unsigned n)
{
    for (int i = 0; i < w->nrenamed_names; ++i)
        if (strlen(w->renamed_names[i]) == n && strncmp(w->renamed_names[i], id, n) == 0) {
            bool kernel = strcmp(w->renamed_names[i], w->t->kernel ? w->t->kernel : "") == 0;
            GROW(w->t->renames, w->t->nrenames, w->nrenames_cap);
            w->t->renames[w->t->nrenames++] = (ndg_rename){at, n, kernel};
        }
    return 0;
}

static int find_body_ident(walk *w, const char *id, unsigned at, unsigned n)
{
    (void)at;
    return strlen(w->seeking) == n && strncmp(w->seeking, id, n) == 0;
}

/* A file-scope name spelled in the template's macro bodies is renamed there, token by token; refused
 * when a macro body could mean another declaration of that name at some use, or when the name was
 * pasted together or comes from a header's macro (then it is in no body of the template's to rename). */
static int rename_in_macros(walk *w)
{
    for (int i = 0; i < w->nmacro_refs; ++i) {
        const struct macro_ref *r = &w->macro_refs[i];
        bool in_body = false, clash = false;
        w->seeking = r->name;
        for (int k = 0; k < w->nspans && !in_body; ++k)
            in_body = each_body_ident(w, w->spans[k], find_body_ident) != 0;
        for (int k = 0; k < w->nrenamed_names && !r->renamed; ++k)
            clash |= strcmp(w->renamed_names[k], r->name) == 0;
        if (r->renamed && !in_body)
            return nd_fail(w->err, "%s:%d:%d: '%s', a file-scope name of the template, comes from a macro that pastes "
                                   "it together or from a header; ndgen gives each kernel its own copy of such names and "
                                   "cannot rename it there: name it in the template itself", w->path, r->line, r->col,
                           r->name);
        if (clash && in_body)
            return nd_fail(w->err, "%s:%d:%d: a macro body names '%s', which here means a local declaration but is also "
                                   "a file-scope name of the template; rename one of them", w->path, r->line, r->col,
                           r->name);
    }
    for (int k = 0; k < w->nspans; ++k)
        each_body_ident(w, w->spans[k], rename_body_ident);
    return 0;
}

/* ---------------------------------------------------------------- text read once per generated file */

/*
 * A template's own header is read once per generated file, in the context of the first variant that
 * includes it, while each variant's code is expanded in its own. So outside its macro bodies a header
 * may depend on nothing a variant changes: no template parameter (NDT_*); no macro of the template's
 * own, which one variant may define before the #include and another not; and in its directives no
 * macro of another header of the template's, which one template includes before it and another
 * after. __COUNTER__ may appear nowhere, template or header: each variant would count on from the last.
 */

/* Trigraphs: ??/ is a backslash in ISO C modes and plain text in GNU modes, the compilers' defaults, so
 * ndgen (which parses as C17) and the compiler could read a line, a comment or a string differently. */
static int no_trigraphs(const char *path, const char *text, size_t len, nd_error *err)
{
    int line = 1, col = 1;
    for (size_t i = 0; i + 2 < len; ++i, ++col) {
        if (text[i] == '\n')
            ++line, col = 0;
        else if (text[i] == '?' && text[i + 1] == '?' && text[i + 2] && strchr("=/'()!<>-", text[i + 2]))
            return nd_fail(err, "%s:%d:%d: the trigraph ??%c means one thing in ISO C modes and another in GNU modes, "
                                "so the compiler could read this text otherwise than ndgen; write it another way", path,
                           line, col, text[i + 2]);
    }
    return 0;
}

static bool is_ident(const ndg_ident *id, const char *name) { return strlen(name) == id->n && !strncmp(id->s, name, id->n); }

typedef struct text_check {
    const char *path; /* the file, as messages name it */
    const char *real; /* its real path, to tell its own macros from another header's */
    const walk *w;
    nd_error *err;
} text_check;

static int no_counter(const ndg_ident *id, void *data)
{
    const text_check *c = data;
    if (!is_ident(id, "__COUNTER__"))
        return 0;
    return nd_fail(c->err, "%s:%d:%d: __COUNTER__ counts on through the generated file, so each kernel made from the "
                           "template would see another value", c->path, id->line, id->col);
}

static int header_ident(const ndg_ident *id, void *data)
{
    const text_check *c = data;
    const char *why = NULL, *whose = "";
    if (no_counter(id, data))
        return -1;
    if (id->body)
        return 0;
    if (id->n > 4 && strncmp(id->s, "NDT_", 4) == 0)
        why = "a template parameter";
    for (int i = 0; i < c->w->t->nundefs && !why; ++i)
        if (is_ident(id, c->w->t->undefs[i]))
            why = "a macro of the template's own";
    for (int i = 0; i < c->w->nhmacros && !why && id->directive; ++i)
        if (is_ident(id, c->w->hmacros[i].name) && strcmp(c->w->hmacros[i].file, c->real) != 0) {
            why = "a macro of the header ";
            whose = c->w->hmacros[i].file;
        }
    if (!why)
        return 0;
    return nd_fail(c->err, "%s:%d:%d: %.*s, %s%s, is named outside a macro body; a header is read once per generated "
                           "file, in the first variant that includes it, so only its macro bodies may use parameters, "
                           "the template's macros or, in directives, other headers' macros", c->path, id->line, id->col,
                   (int)id->n, id->s, why, whose);
}

/* Checks a header of the template's own (see above). */
static int check_header(const walk *w, const char *path, nd_error *err)
{
    char *text, real[PATH_MAX];
    size_t len;
    if (!realpath(path, real))
        return 0; /* libclang read it; nothing new to say */
    if (ndg_read_text(path, &text, &len))
        return nd_fail(err, "%s:1: cannot read the header: %s", path, ndg_read_why(errno));
    text_check c = {path, real, w, err};
    int rc = no_trigraphs(path, text, len, err) || ndg_each_ident(text, len, header_ident, &c) ? -1 : 0;
    free(text);
    return rc;
}

/* Whether real (a real path) is under folder dir. */
static bool under(const char *dir, const char *real)
{
    char d[PATH_MAX];
    size_t n;
    if (!realpath(dir, d))
        return false;
    n = strlen(d);
    return strncmp(real, d, n) == 0 && real[n] == '/';
}

/* A header of the template's own: in its folder or a template folder, and not the accessor API's. */
static bool own_dep(const walk *w, const char *path)
{
    char real[PATH_MAX], dir[PATH_MAX];
    if (!realpath(path, real) || strncmp(real, w->a->include_real, strlen(w->a->include_real)) == 0)
        return false;
    snprintf(dir, sizeof dir, "%s", w->t->path);
    if (strrchr(dir, '/'))
        *strrchr(dir, '/') = '\0';
    bool own = under(dir, real);
    for (int i = 0; i < w->a->ndirs && !own; ++i)
        own = under(w->a->dirs[i], real);
    return own;
}

/* The template's text and each header of its own, once the walk has listed their macros. */
static int check_texts(const walk *w)
{
    text_check c = {w->path, "", w, w->err};
    if (no_trigraphs(w->path, w->t->text, w->t->len, w->err) || ndg_each_ident(w->t->text, w->t->len, no_counter, &c))
        return -1;
    for (int i = 0; i < w->t->ndeps; ++i)
        if (own_dep(w, w->t->deps[i]) && check_header(w, w->t->deps[i], w->err))
            return -1;
    return 0;
}

static void free_list(char **list, int n)
{
    for (int i = 0; i < n; ++i)
        free(list[i]);
    free(list);
}

/* ---------------------------------------------------------------- parsing */

static int read_file(const char *path, char **text, size_t *len, nd_error *err)
{
    return ndg_read_text(path, text, len) ? nd_fail(err, "%s:1: cannot read the template: %s", path, ndg_read_why(errno))
                                          : 0;
}

/* Appends d, formatted "file:line:col: error: ...", after sep; returns the new length. */
static size_t append_diagnostic(nd_error *err, size_t used, CXDiagnostic d, const char *sep)
{
    CXString s = clang_formatDiagnostic(d, CXDiagnostic_DisplaySourceLocation | CXDiagnostic_DisplayColumn);
    if (used < sizeof err->msg)
        used += (size_t)snprintf(err->msg + used, sizeof err->msg - used, "%s%s", sep, clang_getCString(s));
    clang_disposeString(s);
    return used;
}

/* Every error diagnostic, "file:line:col: error: ...", one per line with its notes; -1 if there was any. */
static int check_diagnostics(CXTranslationUnit tu, nd_error *err)
{
    unsigned n = clang_getNumDiagnostics(tu), errors = 0;
    size_t used = 0;
    err->msg[0] = '\0';
    for (unsigned i = 0; i < n; ++i) {
        CXDiagnostic d = clang_getDiagnostic(tu, i);
        if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
            used = append_diagnostic(err, used, d, errors ? "\n" : "");
            CXDiagnosticSet notes = clang_getChildDiagnostics(d); /* "expanded from macro ..." and the like */
            for (unsigned k = 0; k < clang_getNumDiagnosticsInSet(notes); ++k) {
                CXDiagnostic note = clang_getDiagnosticInSet(notes, k);
                CXFile file;
                clang_getFileLocation(clang_getDiagnosticLocation(note), &file, NULL, NULL, NULL);
                if (file) /* a note with no place (a command-line macro) says nothing */
                    used = append_diagnostic(err, used, note, "\n");
                clang_disposeDiagnostic(note);
            }
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
    t->deps = ndg_realloc(t->deps, (size_t)(t->ndeps + 1) * sizeof *t->deps);
    t->deps[t->ndeps++] = ndg_strdup(clang_getCString(name));
    clang_disposeString(name);
}

enum { MAX_ARGS = 8 + 8 + 2 * NDG_MAX_TEMPLATE_DIRS + NDG_MAX_PARAMS + 2 }; /* 8: NDGEN_KERNEL_ERRORS */

typedef struct clang_args {
    int n;
    const char *v[MAX_ARGS];
    char store[MAX_ARGS][4200];
} clang_args;

/* One argument: prefix then s. */
static void arg(clang_args *c, const char *prefix, const char *s)
{
    snprintf(c->store[c->n], sizeof c->store[c->n], "%s%s", prefix, s);
    c->v[c->n] = c->store[c->n];
    ++c->n;
}

#ifndef NDGEN_KERNEL_ERRORS
#define NDGEN_KERNEL_ERRORS "" /* set by the build: cmake/NdgenKernels.cmake */
#endif

/* The compiler's view: C17, the accessor's and the template folders' headers, and each define; for a
 * template (kernel_errors), the warnings that are always bugs as errors (NDGEN_KERNEL_ERRORS, as the
 * kernels are compiled: so a template calling an undeclared function is refused here, at its line).
 * Generated code is read without them: its own checks (a generic call left in it) name what went
 * wrong better, and the compiler holds it to them after. */
static void clang_args_init(clang_args *c, const ndg_analyzer *a, const char *defines, bool kernel_errors)
{
    c->n = 0;
    arg(c, "", "-xc");
    arg(c, "", "-std=c17");
    for (const char *e = kernel_errors ? NDGEN_KERNEL_ERRORS : ""; *e;) {
        const size_t n = strcspn(e, " ");
        if (n > 0 && n < sizeof c->store[0] && c->n < MAX_ARGS) {
            snprintf(c->store[c->n], sizeof c->store[c->n], "%.*s", (int)n, e);
            c->v[c->n] = c->store[c->n];
            ++c->n;
        }
        e += n + (e[n] == ' ');
    }
    arg(c, "-I", a->include_dir);
    for (int i = 0; i < a->ndirs; ++i)
        arg(c, "-I", a->dirs[i]);
    if (a->resource_dir) {
        arg(c, "", "-resource-dir");
        arg(c, "", a->resource_dir);
    }
    for (const char *d = defines; d && *d && c->n < MAX_ARGS;) {
        const char *eol = strchr(d, '\n');
        size_t n = eol ? (size_t)(eol - d) : strlen(d);
        snprintf(c->store[c->n], sizeof c->store[c->n], "-D%.*s", (int)n, d);
        c->v[c->n] = c->store[c->n];
        ++c->n;
        d += n + (eol != NULL);
    }
}

static int rename_cmp(const void *x, const void *y)
{
    const ndg_rename *a = x, *b = y;
    return (a->at > b->at) - (a->at < b->at);
}

/* Sorts renames by offset and drops repeats (a location may be reached twice). */
static void sort_renames(ndg_template *t)
{
    if (t->nrenames == 0)
        return; /* renames is NULL, which qsort may not be given */
    qsort(t->renames, (size_t)t->nrenames, sizeof *t->renames, rename_cmp);
    int n = 0;
    for (int i = 0; i < t->nrenames; ++i)
        if (n == 0 || t->renames[n - 1].at != t->renames[i].at)
            t->renames[n++] = t->renames[i];
    t->nrenames = n;
    for (int i = 1; i < n; ++i) /* in offset order, none inside another: rewrite.c applies them in turn */
        assert(t->renames[i - 1].at + t->renames[i - 1].len <= t->renames[i].at);
}

static int parse(ndg_analyzer *a, const char *path, ndg_template *t, nd_error *err)
{
    clang_args args;
    clang_args_init(&args, a, t->defines, true);
    struct CXUnsavedFile unsaved = {path, t->text, (unsigned long)t->len};
    CXTranslationUnit tu;
    enum CXErrorCode rc = clang_parseTranslationUnit2(a->index, path, args.v, args.n, &unsaved, 1,
                                                      CXTranslationUnit_DetailedPreprocessingRecord, &tu);
    if (rc != CXError_Success)
        return nd_fail(err, "%s:1: libclang could not parse the template (error %d)", path, (int)rc);
    int result = check_diagnostics(tu, err);
    if (result == 0) {
        walk w = {.a = a, .t = t, .path = path, .err = err, .defaults = !t->defines[0],
                  .kernel = clang_getNullCursor(), .args = clang_getNullCursor()};
        clang_visitChildren(clang_getTranslationUnitCursor(tu), visit, &w);
        if (!w.failed && !t->kernel)
            result = nd_fail(err, "%s:1: the template defines no kernel: one external function "
                                  "void NAME(const nda_core *core, const nda_args *args)", path);
        result = w.failed ? -1 : result;
        for (int i = 0; i < t->ncalls && w.jumps; ++i) /* a jump could reach a path thought dead */
            t->calls[i].branch.fold = false;
        if (result == 0)
            result = rename_in_macros(&w);
        clang_getInclusions(tu, inclusion, t);
        if (result == 0)
            result = check_texts(&w);
        free(w.allowed);
        free(w.ifs);
        free(w.casts);
        free(w.callees);
        free(w.renamed);
        free_list(w.renamed_names, w.nrenamed_names);
        for (int i = 0; i < w.nmacro_refs; ++i)
            free(w.macro_refs[i].name);
        free(w.macro_refs);
        free(w.spans);
        for (int i = 0; i < w.nhmacros; ++i) {
            free(w.hmacros[i].name);
            free(w.hmacros[i].file);
        }
        free(w.hmacros);
        sort_renames(t);
    }
    clang_disposeTranslationUnit(tu);
    return result;
}

static void template_free(ndg_template *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->ncalls; ++i) {
        free(t->calls[i].tensor_expr);
        free(t->calls[i].scalar);
    }
    for (int i = 0; i < t->nloops; ++i) {
        free(t->loops[i].core_expr);
        free(t->loops[i].tensor_expr);
    }
    for (int i = 0; i < t->nparams; ++i) {
        free(t->params[i].name);
        free(t->params[i].args);
    }
    free_list(t->undefs, t->nundefs);
    free_list(t->macro_at, t->nmacros);
    free_list(t->macros, t->nmacros);
    free_list(t->deps, t->ndeps);
    free(t->renames);
    free(t->scalar_refs);
    free(t->params);
    free(t->loops);
    free(t->calls);
    free(t->kernel);
    free(t->text);
    free(t->defines);
    free(t->path);
    free(t);
}

int ndg_analyzer_open(const char *include_dir, const char *resource_dir, int ntemplate_dirs,
                      const char *const *template_dirs, ndg_analyzer **out, nd_error *err)
{
    char real[PATH_MAX];
    if (!realpath(include_dir, real))
        return nd_fail(err, "--include %s: no such folder", include_dir);
    ndg_analyzer *a = ndg_calloc(1, sizeof *a);
    a->index = clang_createIndex(0, 0);
    a->include_dir = ndg_strdup(include_dir);
    size_t n = strlen(real);
    a->include_real = ndg_malloc(n + 2);
    snprintf(a->include_real, n + 2, "%s/", real);
    a->resource_dir = resource_dir ? ndg_strdup(resource_dir) : NULL;
    a->dirs = ndg_calloc((size_t)(ntemplate_dirs ? ntemplate_dirs : 1), sizeof *a->dirs);
    for (int i = 0; i < ntemplate_dirs; ++i)
        a->dirs[a->ndirs++] = ndg_strdup(template_dirs[i]);
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
    free_list(a->dirs, a->ndirs);
    free(a->include_dir);
    free(a->include_real);
    free(a->resource_dir);
    clang_disposeIndex(a->index);
    free(a);
}

void ndg_param_define(char *out, size_t len, const ndg_template *defaults, const ndg_op *op, int i)
{
    const char *args = "";
    for (int k = 0; k < defaults->nparams; ++k)
        if (strcmp(defaults->params[k].name, op->params[i].name) == 0)
            args = defaults->params[k].args;
    snprintf(out, len, "NDT_%s%s=%s", op->params[i].name, args, op->params[i].value);
}

void ndg_indices_define(char *out, size_t len, const ndg_op *op)
{
    size_t n = (size_t)snprintf(out, len, "NDT_INDICES={");
    for (int k = 0; k < op->noperands && n < len; ++k)
        n += (size_t)snprintf(out + n, len - n, "%s\"%s\"", k ? ", " : "", op->operands[k].index);
    if (n < len)
        snprintf(out + n, len - n, "}");
}

static bool declares(const ndg_template *t, const char *param)
{
    for (int i = 0; i < t->nparams; ++i)
        if (strcmp(t->params[i].name, param) == 0)
            return true;
    return false;
}

/* The op's parameter set: one define per line, in the op's order, then INDICES. */
static char *defines_of(const ndg_template *defaults, const ndg_op *op)
{
    ndg_buf b = {0};
    char line[4200];
    ndg_buf_put(&b, "", 0);
    for (int i = 0; op && i < op->nparams; ++i) {
        ndg_param_define(line, sizeof line, defaults, op, i);
        ndg_buf_printf(&b, "%s\n", line);
    }
    if (op && declares(defaults, "INDICES")) {
        ndg_indices_define(line, sizeof line, op);
        ndg_buf_printf(&b, "%s\n", line);
    }
    return b.data;
}

static int lookup(ndg_analyzer *a, const char *real, const char *defines, const ndg_template **out)
{
    for (int i = 0; i < a->ntemplates; ++i)
        if (strcmp(a->templates[i]->path, real) == 0 && strcmp(a->templates[i]->defines, defines) == 0) {
            *out = a->templates[i];
            return 1;
        }
    return 0;
}

static int analyze(ndg_analyzer *a, const char *path, const char *real, char *defines, const ndg_template *defaults,
                   const ndg_template **out, nd_error *err)
{
    ndg_template *t = ndg_calloc(1, sizeof *t);
    t->path = ndg_strdup(real);
    t->defines = defines;
    if (defaults) { /* parameters are what the template declares, whatever this set hides with #ifndef */
        t->params = ndg_calloc((size_t)(defaults->nparams ? defaults->nparams : 1), sizeof *t->params);
        for (int i = 0; i < defaults->nparams; ++i, ++t->nparams) {
            t->params[i].name = ndg_strdup(defaults->params[i].name);
            t->params[i].args = ndg_strdup(defaults->params[i].args);
        }
    }
    if (read_file(path, &t->text, &t->len, err) || parse(a, path, t, err)) {
        template_free(t);
        return -1;
    }
    a->templates = ndg_realloc(a->templates, (size_t)(a->ntemplates + 1) * sizeof *a->templates);
    a->templates[a->ntemplates++] = t;
    *out = t;
    return 0;
}

int ndg_template_get(ndg_analyzer *a, const char *path, const ndg_op *op, const ndg_template **out, nd_error *err)
{
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(path, real) || stat(real, &st) != 0)
        return nd_fail(err, "%s:1: cannot read the template", path);
    if (!S_ISREG(st.st_mode))
        return nd_fail(err, "%s:1: the template is not a regular file", path);
    const ndg_template *defaults;
    if (!lookup(a, real, "", &defaults) && analyze(a, path, real, ndg_strdup(""), NULL, &defaults, err))
        return -1;
    if (!op) {
        *out = defaults;
        return 0;
    }
    char *defines = defines_of(defaults, op);
    if (lookup(a, real, defines, out)) {
        free(defines);
        return 0;
    }
    return analyze(a, path, real, defines, defaults, out, err);
}

/* ---------------------------------------------------------------- translation validation */

typedef struct validation {
    walk w;
    int nranges;
    const unsigned (*ranges)[2];
} validation;

static enum CXChildVisitResult visit_generated(CXCursor c, CXCursor parent, CXClientData data)
{
    (void)parent;
    validation *v = data;
    if (clang_getCursorKind(c) != CXCursor_DeclRefExpr || !in_main_file(c))
        return CXChildVisit_Recurse;
    CXCursor d = clang_getCursorReferenced(c);
    if (clang_getCursorKind(d) != CXCursor_FunctionDecl)
        return CXChildVisit_Recurse;
    char *name = spelling(d);
    unsigned at;
    clang_getExpansionLocation(clang_getCursorLocation(c), NULL, NULL, NULL, &at);
    bool specialized = false;
    for (int i = 0; i < v->nranges && !specialized; ++i)
        specialized = at >= v->ranges[i][0] && at < v->ranges[i][1];
    if (specialized && accessor_name(name) && !LISTED(kept_calls, name)) {
        CXString file;
        unsigned line, col;
        clang_getPresumedLocation(clang_getCursorLocation(c), &file, &line, &col);
        nd_fail(v->w.err, "%s:%u:%u: %s is left in a specialized kernel; ndgen refuses to emit it (a generator bug: "
                          "please report it with the spec and template)", clang_getCString(file), line, col, name);
        clang_disposeString(file);
        v->w.failed = true;
    }
    free(name);
    return v->w.failed ? CXChildVisit_Break : CXChildVisit_Recurse;
}

int ndg_validate(ndg_analyzer *a, const char *name, const char *text, size_t len, int nranges,
                 const unsigned (*ranges)[2], nd_error *err)
{
    clang_args args;
    clang_args_init(&args, a, NULL, false);
    struct CXUnsavedFile unsaved = {name, text, (unsigned long)len};
    CXTranslationUnit tu;
    enum CXErrorCode rc = clang_parseTranslationUnit2(a->index, name, args.v, args.n, &unsaved, 1,
                                                      CXTranslationUnit_None, &tu);
    if (rc != CXError_Success)
        return nd_fail(err, "%s:1: libclang could not parse the generated file (error %d)", name, (int)rc);
    int result = check_diagnostics(tu, err);
    if (result == 0) {
        validation v = {.w = {.a = a, .path = name, .err = err}, .nranges = nranges, .ranges = ranges};
        clang_visitChildren(clang_getTranslationUnitCursor(tu), visit_generated, &v);
        result = v.w.failed ? -1 : 0;
    }
    clang_disposeTranslationUnit(tu);
    return result;
}
