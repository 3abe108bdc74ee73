/* ndgen.h - the generator's internal interface: one section per source file. */
#ifndef NDGEN_H
#define NDGEN_H

#include <stdbool.h>
#include <stdio.h>

#include "nd_accessor.h"
#include "nd_dist.h"
#include "nd_files.h"

/* NDG_MAX_NAME: op, operand and parameter names, so every symbol made from them fits. */
enum { NDG_MAX_OPERANDS = 8, NDG_MAX_PARAMS = 32, NDG_MAX_TEMPLATE_DIRS = 8, NDG_MAX_NAME = 64 };
_Static_assert(NDG_MAX_OPERANDS * 8 <= 64 && ND_REDUCES <= 8, "nda_kernel_entry.partial_reduce: 8 bits per operand");

/* ---- spec.c: stage 1, op specs in sandboxed Lua 5.4. */
typedef struct ndg_param {
    char *name;  /* template parameter, without the NDT_ prefix */
    char *value; /* C text */
} ndg_param;

typedef struct ndg_operand {
    char *name;
    char *index; /* index notation, such as "ij" */
    nd_dtype dtype;
    bool output;
    unsigned partial; /* bit r: the kernel takes it as a Partial tensor pending nd_reduce r (0: only whole) */
} ndg_operand;

enum { NDG_MAX_SCALAR_VALUES = ND_MAX_SCALARS + ND_MAX_RANK };

typedef struct ndg_target {
    int line;                        /* of the op{} call that declared it */
    nd_dist dist[NDG_MAX_OPERANDS];  /* one per operand, in operand order */
    nda_fixed fixed;                 /* the parameters its kernel takes as constants (a target's `fixed`) */
    /* Launch scalars the target fixes (its `scalars` key): the launch's values, one per named scalar and
     * then a list's, NaN where a named scalar is not fixed (no launch value is NaN, nd_scalars_check);
     * a fixed list is all of them. nscalars 0: none fixed. The kernel has them as constants, and serves
     * only launches giving them. */
    int nscalars;
    double scalars[NDG_MAX_SCALAR_VALUES];
} ndg_target;

/* A partial target's kernel assumes that operands whose free parameters (the shape, and the core list
 * when free) are equal in the target are equal at launch, and nothing of ones that differ: the index of
 * the first operand j <= k whose free parameters are operand k's. The registry records these classes;
 * the runtime checks them. */
int ndg_class(const ndg_target *t, int k);

/* ---- fixed.c: a target's `fixed`, as a set's name ("pattern"), "all but shape,grid", or the list of
 * parameters to fix; ND_EREFUSED with the reason for a set no row of NDA_FIXED_SETS offers. */
int ndg_fixed_parse(const char *text, nda_fixed *out, nd_error *err);

typedef struct ndg_op {
    char *name;
    char *template_path;             /* resolved */
    int line;                        /* of its op{} call in the spec file */
    int noperands;
    ndg_operand operands[NDG_MAX_OPERANDS];
    int nparams;
    ndg_param params[NDG_MAX_PARAMS];
    int ntargets;
    ndg_target *targets;
    char *scalars;                   /* launch scalars: the canonical declaration (nd_scalars_text), or NULL */
    nd_scalars decl;                 /* and parsed */
    char *requires;                  /* what the template assumes beyond the indices: nd_op_sig.requires */
    char *reference;                 /* the plain reference: NULL none, "elementwise" from EXPR, else a function */
    char *reference_source;          /* the C file defining that function (resolved), or NULL */
    int reads;                       /* nda_reads: what its reference reads, so what the kernels may read */
    bool parts_chunked;              /* nda_kernel_entry.parts_chunked: a bundled NDA_CHUNKED_TEMPLATES file */
    bool moves_data;                 /* the spec's moves_data: outputs are input bytes, compared exactly */
} ndg_op;

typedef struct ndg_spec {
    char *path;  /* as given */
    char *name;  /* file name without directory and .lua: names the output and its registry */
    int nops;
    ndg_op *ops;
    int ndeps;
    char **deps; /* every spec file read: the spec and what it included */
} ndg_spec;

enum { NDG_SPEC_MEMORY_DEFAULT = 1024 << 20 }; /* bytes a spec's Lua state may hold */
enum { NDG_SPEC_SECONDS_DEFAULT = 60 };        /* wall-clock seconds a spec may run; the bundled take < 1 */
enum { NDG_SPEC_SECONDS_MAX = 86400 };

typedef struct ndg_spec_env {
    const char *spec_dir;                        /* include() resolves here; NULL: the spec's own dir */
    size_t memory_limit;                         /* bytes; 0: NDG_SPEC_MEMORY_DEFAULT */
    double seconds;                              /* wall clock; 0: NDG_SPEC_SECONDS_DEFAULT */
    int ntemplate_dirs;
    const char *template_dirs[NDG_MAX_TEMPLATE_DIRS];
} ndg_spec_env;

/* Runs one spec file; errors read "file:line: message". */
int ndg_spec_load(const char *path, const ndg_spec_env *env, ndg_spec *out, nd_error *err);
void ndg_spec_free(ndg_spec *s);
/* Keeps only the op named op whose operand dtypes are dtypes (comma-separated; NULL: the first of that
 * name). With nsigs > 0, its targets become the one target whose operands have these signatures, its
 * kernel fixing the parameters of set `fixed`. */
int ndg_spec_select(ndg_spec *s, const char *op, const char *dtypes, char *const *sigs, int nsigs, nda_fixed fixed,
                    nd_error *err);

/* ---- analyze.c: stage 2, a template parsed with libclang, its accessor calls located by cursor. */
typedef enum ndg_call_kind {
#define NDG_SPECIALIZED(KIND, name, tensor_arg) NDG_##KIND,
#include "calls.def"
    NDG_CALL_KINDS
} ndg_call_kind;
_Static_assert(NDG_CALL_KINDS <= 32, "rewrite.c keeps sets of call kinds in 32-bit masks");

extern const char *const ndg_call_names[NDG_CALL_KINDS]; /* "nda_self", ...: calls.def */

/* An if statement whose whole condition is one nda_same_paging call, which a specialized kernel knows:
 * its byte offsets, so the rewriter keeps only the path taken. Its then statement is [then_start,
 * then_end), its else statement [else_start, else_end) (both 0 when it has none); when the then
 * statement ends in a return, the rest of the enclosing block, up to tail_end (its closing brace), is
 * dead once the condition holds. fold is false when the statement cannot be folded safely (it comes
 * from a macro, or the kernel jumps with goto or switch). */
typedef struct ndg_branch {
    bool fold, then_returns;
    unsigned if_start, then_start, then_end, else_start, else_end, tail_end;
} ndg_branch;

typedef struct ndg_call {
    ndg_call_kind kind;
    unsigned start, end;  /* byte range of the whole call in the template text */
    unsigned name_end;    /* [start, name_end) is the callee's name */
    int line, col;
    int operand;          /* the operand its tensor argument is bound to; -1 for iterator calls */
    int operand2;         /* NDG_SAME_PAGING: the second tensor's operand; else -1 */
    int loop;             /* ITER_*: the loop it reads; PAGE_READ/PAGE_WRITE: the loop whose current page it
                             is given as nda_iter_page(&it), else -1 */
    char *tensor_expr;    /* text of the tensor argument (NULL for iterator calls); NDG_SCALAR: of args */
    char *scalar;         /* NDG_SCALAR: the scalar's name; else NULL */
    unsigned tensor_decl; /* where that variable is declared */
    unsigned core_decl;   /* where its core argument's variable is declared; 0 when it has none */
    char elem_class;      /* calls returning page data: the element type the template converts the pointer
                             to, 'f' floating, 'i' integer, 'b' bytes; 0 when not seen */
    int elem_size;        /* and its size in bytes */
    ndg_branch branch;    /* NDG_SAME_PAGING: the if statement it is the whole condition of */
} ndg_call;

typedef struct ndg_loop {
    unsigned start;       /* the 'for' keyword */
    unsigned body_start;  /* the body's '{' */
    unsigned body_end;    /* just after the body's '}' */
    int line, col;
    int operand;          /* the tensor it iterates */
    char *core_expr;      /* text of nda_iter_local's core argument: a variable */
    unsigned core_decl;   /* where that variable is declared */
    char *tensor_expr;    /* text of its tensor argument */
    bool continues;       /* its body holds a continue that targets it, found in the parsed code (macros
                             expanded): the specialized nest must keep its innermost loop for it */
} ndg_loop;

typedef struct ndg_tparam {
    char *name;           /* without the NDT_ prefix */
    char *args;           /* "(x)" for a function-like macro, "" otherwise */
} ndg_tparam;

/* An identifier of the template to rewrite in each variant: a file-scope name gets the variant's
 * prefix, the kernel's name becomes the variant's symbol. Renaming is done by editing the text at
 * these offsets, never by #define, so no header and no generated code can be touched by it. */
typedef struct ndg_rename {
    unsigned at, len;
    bool kernel;
} ndg_rename;

/* args->scalars or args->nscalars in the template's own text (not from a macro): a kernel whose target
 * fixed every launch scalar reads constants there instead. */
typedef struct ndg_scalar_ref {
    unsigned start, end;
    bool count;           /* nscalars */
} ndg_scalar_ref;

/*
 * A template analyzed for one parameter set: with each of an op's parameters defined exactly as the
 * generated file defines them, so that bindings, tensor arguments and #if branches are those the
 * compiler will see. The defaults (no op) give the parameters a template declares.
 */
typedef struct ndg_template {
    char *path;           /* absolute */
    char *text;
    size_t len;
    char *defines;        /* the parameter set: "NDT_X=v" lines; "" for the defaults */
    char *kernel;         /* the one external function: the kernel */
    int noperands;        /* 1 + the highest operand index bound */
    int nparams;
    ndg_tparam *params;   /* declared by the template (from its defaults) */
    int ncalls, nloops, nrenames, nundefs, nmacros, ndeps, nscalar_refs;
    ndg_call *calls;
    ndg_loop *loops;
    ndg_rename *renames;  /* in offset order */
    ndg_scalar_ref *scalar_refs;
    char **undefs;        /* macros the template text defines: #undef after each variant */
    char **macros;        /* macros defined by the template and its own headers: generated code avoids them */
    char **macro_at;      /* [nmacros]: where each is defined, "file:line:col" */
    char **deps;          /* files the template includes, outside system headers */
} ndg_template;

typedef struct ndg_analyzer ndg_analyzer;
/* include_dir: where nd_accessor.h lives. resource_dir: clang's, so stddef.h is found (NULL: built-in).
 * template_dirs: also searched for the templates' own #includes. */
int ndg_analyzer_open(const char *include_dir, const char *resource_dir, int ntemplate_dirs,
                      const char *const *template_dirs, ndg_analyzer **out, nd_error *err);
void ndg_analyzer_close(ndg_analyzer *a);
/* Parses path once per analyzer and parameter set: op NULL for the template's defaults, else with
 * op's parameters defined (see ndg_param_define). Later calls return the same template. */
int ndg_template_get(ndg_analyzer *a, const char *path, const ndg_op *op, const ndg_template **out, nd_error *err);
/* Parameter i of op as a -D argument body "NDT_NAME(args)=value", given the template's defaults. */
void ndg_param_define(char *out, size_t len, const ndg_template *defaults, const ndg_op *op, int i);
/* "NDT_INDICES={"ij", "jk"}": the operands' index notation, for templates that declare INDICES. */
void ndg_indices_define(char *out, size_t len, const ndg_op *op);
/* Parses generated text as one translation unit and refuses (with the template's file:line:col, through
 * its #line directives) any accessor call other than NDG_KEPT ones whose offset lies in one of the
 * nranges [start, end) byte ranges: the specialized kernels. */
int ndg_validate(ndg_analyzer *a, const char *name, const char *text, size_t len, int nranges,
                 const unsigned (*ranges)[2], nd_error *err);

/* ---- rewrite.c: stage 3, one variant of a template as C text, specialized or generic. */
typedef struct ndg_buf {
    char *data;
    size_t len, cap;
    int lines; /* newlines written so far */
} ndg_buf;

/* The generator's one allocation path (text.c): memory, or a message and exit(1); never NULL. */
void *ndg_malloc(size_t bytes);
void *ndg_calloc(size_t count, size_t size);
void *ndg_realloc(void *p, size_t bytes);
char *ndg_strdup(const char *s);
char *ndg_strndup(const char *s, size_t n);

void ndg_buf_put(ndg_buf *b, const char *s, size_t n);
void ndg_buf_printf(ndg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ndg_buf_free(ndg_buf *b);

/* Every source ndgen reads whole (templates, their headers, reference sources) is read by
 * ndg_read_text: a regular file of at most NDG_MAX_INPUT_BYTES, NUL-terminated in *text (malloc'd; the
 * caller frees), its length in *len. 0, or -1 with errno: EFBIG past the limit, EINVAL for what is not
 * a regular file. */
enum { NDG_MAX_INPUT_BYTES = 16 << 20 }; /* a template is kilobytes; the bundled ones are under 30 KiB */
int ndg_read_text(const char *path, char **text, size_t *len);
/* Why ndg_read_text failed, for a message: "larger than 16 MiB", "not a regular file" or strerror. */
const char *ndg_read_why(int e);

/* An identifier of C text, as ndg_each_ident finds it: where it is and what reads it. */
typedef struct ndg_ident {
    const char *s;
    size_t n;
    int line, col;
    bool body;      /* in a #define after the macro's name: expanded where the macro is used */
    bool directive; /* elsewhere in a preprocessor line, the name a #define defines included */
} ndg_ident;
/* Whether c can be part of an identifier. */
bool ndg_ident_char(char c);
/* Calls f for each identifier of C text outside comments, strings, numbers and #include lines, until
 * f returns nonzero (which it returns). */
int ndg_each_ident(const char *text, size_t len, int (*f)(const ndg_ident *, void *), void *data);

typedef struct ndg_variant {
    const ndg_op *op;
    const ndg_target *target; /* NULL: the generic kernel */
    const char *prefix;       /* makes generated and template file-scope names unique in the file */
    const char *symbol;       /* the kernel's name in the library */
    const char *out_path;     /* for #line directives back to the output itself */
    const char *spec_path;    /* escaped for a C string: the op's parameters are #line'd to its op{} call */
    const char *template_path; /* the template, escaped for a C string, as #line names it */
    bool line_directives;
    unsigned body_start;      /* where the template text starts: after its leading comments and #includes,
                                 which the file prints once (emit.c), or 0 for the whole text */
} ndg_variant;

/* Appends one variant: specialized helpers, the op's parameters, the template with its edits (renames,
 * and for a target its accessor calls and loops), type assertions, #undefs. t is analyzed with the
 * op's parameters. Fails when a macro of the template would change the generated code's meaning. */
int ndg_rewrite(ndg_buf *out, const ndg_template *t, const ndg_variant *v, nd_error *err);

/* ---- emit.c: stage 4, one C file per spec (or per part of a spec), plus its depfile. */
enum { NDG_MAX_PARTS = 64, NDG_MAX_PREFIX_MAPS = 16, NDG_MAX_CFLAGS = 4096 /* bytes of --kernel-cflags */ };

typedef struct ndg_emit_options {
    bool line_directives;
    int parts;                /* C files per spec (1: one file; 0 counts as 1): see ndg_part_path */
    const char *depfile;      /* NULL: none */
    const char *stamp;        /* NULL: none; else touched on success and the depfile's target */
    bool library;             /* also the root registry: the file alone builds a kernel library */
    bool specialized_only;    /* no generic kernels: for a library loaded beside one that has them (the
                                 JIT's), which need not compile them again */
    int ntemplate_dirs;       /* recorded in the registry group, made absolute */
    const char *const *template_dirs;
    const char *installed_spec_dir;  /* the spec folder relative to the install prefix, or NULL */
    int ninstalled_template_dirs;    /* and the template folders; 0: none recorded */
    const char *const *installed_template_dirs;
    bool relocatable;                /* record only the installed folders: no absolute path */
    int nprefix_maps;                /* --prefix-map OLD=NEW: paths shown in comments and #line */
    const char *const *prefix_maps;
    const char *kernel_cflags;       /* --library: the kernels' compile flags, recorded in the root; or NULL */
} ndg_emit_options;

/* One spec's outputs, written and closed but not yet in place: ndg_emit_spec prepares them, and the
 * caller puts every spec's in place only when all succeeded (generate.c), or aborts them all. */
typedef struct ndg_emitted {
    int kernels;
    int nparts;
    ndf_output c[NDG_MAX_PARTS]; /* the generated files */
    ndf_output depfile;       /* when has_depfile */
    bool has_depfile;
    int ninputs;              /* every file the spec's generation read: the depfile's list */
    char **inputs;
} ndg_emitted;

/* Binds each op of spec to its template (bind.c): tmpl[i] is op i's, analyzed with the op's parameters. */
int ndg_bind_ops(ndg_spec *spec, ndg_analyzer *a, const ndg_template **tmpl, nd_error *err);
int ndg_emit_spec(ndg_spec *spec, ndg_analyzer *a, const char *out_path, const ndg_emit_options *o,
                  ndg_emitted *out, nd_error *err);
void ndg_emitted_abort(ndg_emitted *e);
/* The path of part i (from 1) of n for the output out_path: out_path itself when n is 1, else out_path
 * with its ".c" replaced by ".<i>.c" (eltwise.c: eltwise.1.c ... eltwise.<n>.c). Kernels are dealt to the
 * parts in order, balanced by size; part 1 also holds the spec's registry group. */
void ndg_part_path(char *out, size_t len, const char *out_path, int i, int n);
/* The library's root registry: one group per spec name, and the flags its kernels are compiled with
 * (NULL: not recorded), which the JIT compiles their specializations with by default. */
int ndg_emit_registry(const char *out_path, char *const *spec_names, int n, const char *cflags, nd_error *err);
/* A C identifier from a spec file name. */
void ndg_c_name(char *out, size_t len, const char *name);
/* s as the inside of a C string literal ("\\", "\"", control characters escaped). */
void ndg_c_string(char *out, size_t len, const char *s);
/* path as generated files show it, in comments and #line: with the longest OLD of o's --prefix-map
 * OLD=NEW that starts it (at a '/' or its end) replaced by NEW, as gcc's -ffile-prefix-map does. */
void ndg_shown_path(char *out, size_t len, const char *path, const ndg_emit_options *o);

/* ---- generate.c: ndgen generate and ndgen registry. */
int ndg_generate_main(int argc, char **argv);
int ndg_registry_main(int argc, char **argv);

/* ---- plan.c: ndgen plan, sharding analysis of einsums. */
int ndg_plan_main(int argc, char **argv);

/* ---- show.c, show_svg.c, show_mesh.c: ndgen show (renderers in show.h). */
int ndg_show_main(int argc, char **argv);
void ndg_sharding_caption(char *buf, size_t len, const nd_sharding *sh, const nd_dist *d);
/* s as a JSON string, quoted and escaped. */
void ndg_json_string(FILE *fp, const char *s);

#endif
