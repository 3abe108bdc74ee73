/*
 * nd_accessor.h - the generic accessor: the kernel-side API for finding, reading, writing and
 * iterating the pages of distributed tensors.
 *
 * A kernel template includes only this header. Every distribution parameter arrives at run time in
 * an nda_tensor descriptor, so a template compiled as-is is the generic kernel that serves every
 * distribution. The generator finds calls to the nda_* functions below by cursor and replaces each
 * with arithmetic specialized for one target; that is why the API is made of plain function calls
 * (no macros) whose arguments name the tensor directly.
 *
 * Kernel ABI: a kernel is  void NAME(const nda_core *core, const nda_args *args);  the runtime calls
 * it once per virtual core, possibly on different threads, so a kernel writes only pages its core
 * owns and keeps no state between calls.
 */
#ifndef ND_ACCESSOR_H
#define ND_ACCESSOR_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nd_dist/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever nda_tensor, nda_core, nda_args, the registry or the kernel signature change. */
#define NDA_ABI_VERSION 13u

/* Per-core traffic of one launch; padded to a cache line so cores on different threads never share. */
typedef struct nda_stats {
    int64_t local_pages_read, remote_pages_read;
    int64_t local_bytes_read, remote_bytes_read;
    int64_t pages_written, remote_pages_written;
    int64_t pad_[2];
} nda_stats;

/*
 * A distributed tensor as a kernel sees it. A tensor may have several copies (replicas), each over its
 * own group of cores with the same placement inside the group (nd_dist_spec.replicas). Each core sees
 * the copy its own group holds, or copy 0 when it holds none: so every read prefers the local replica,
 * and every core writes its own group's copy.
 */
typedef struct nda_tensor {
    const nd_dist *dist;     /* shape, dtype and page box at full rank */
    const nd_layout *layout; /* placement within one copy, squeezed */
    uint8_t *const *base;    /* base[i]: start of the buffer on core i of the copy this core sees */
    const int32_t *index_of; /* device core id -> index in its copy's core list, or -1 (always -1 for DRAM) */
    const int32_t *owner_of; /* device core id -> the core-list entry whose pages it writes, or -1: the same
                                as index_of in L1; in DRAM, device core c writes bank c of the list */
    int64_t page_bytes;
    int32_t replicas, parts; /* copies, and the parts they form (parts == 1: every copy is whole) */
    int32_t replica;         /* the copy this core sees */
    uint8_t *const *all_base;/* every copy: copy r's core i at all_base[r * layout->ncores + i] */
    int32_t reduce;          /* nd_reduce: how the parts combine */
} nda_tensor;

/* The virtual core a kernel invocation runs on. */
typedef struct nda_core {
    int32_t x, y;
    int32_t id; /* y * grid_x + x */
    nda_stats *stats;
} nda_core;

typedef struct nda_args {
    int ntensors;
    const nda_tensor *tensors;
    int nscalars;
    const double *scalars;
    const char *scalar_names; /* the op's declared scalars in order, "eps,axes"; NULL when the launch
                                 gave none (nd_launch of a bare function) */
} nda_args;

typedef void nda_kernel_fn(const nda_core *core, const nda_args *args);

/*
 * A plain reference of an op: what it computes, over contiguous row-major arrays with no distribution.
 * ndrun checks kernels against it. The signature, for a reference a spec names:
 *     static void NAME(const nda_ref_args *args, int64_t lo, int64_t hi);
 * It fills elements [lo, hi) of the output (the last operand), in row-major order, reading the inputs
 * whole; the caller splits the output over threads, so a call must write only [lo, hi) and keep no
 * state. Elements are stored as the dtype says (ND_DTYPES): f32 float, bf16 and f16 uint16_t
 * (nda_bf16_to_f32, nda_f16_to_f32), i32 int32_t, u8 uint8_t. Scalars are the launch's, already checked against the op's declaration.
 */
typedef struct nda_ref_operand {
    void *data;                      /* contiguous, row-major; inputs are only read */
    int rank;
    const int64_t *shape;
    int dtype;                       /* an nd_dtype */
    const char *index;               /* the operand's index notation, such as "ik" or "..." */
} nda_ref_operand;

typedef struct nda_ref_args {
    int noperands;                   /* inputs, then the output */
    const nda_ref_operand *operands;
    int nscalars;
    const double *scalars;
} nda_ref_args;

typedef void nda_ref_fn(const nda_ref_args *args, int64_t lo, int64_t hi);

/* The element of in that element e of out (row-major) reads under numpy broadcasting: in's dims align
 * with out's last dims, and a dim of size 1 repeats. */
static inline int64_t ndref_index(const nda_ref_operand *in, const nda_ref_operand *out, int64_t e)
{
    int64_t idx = 0, stride = 1;
    for (int i = out->rank - 1, j = in->rank - 1; j >= 0 && i >= 0; --i, --j) {
        int64_t x = e % out->shape[i];
        e /= out->shape[i];
        idx += in->shape[j] == 1 ? 0 : x * stride;
        stride *= in->shape[j];
    }
    return idx;
}

/*
 * What each output element of an op reads of its inputs, as its reference states it (ndgen derives
 * it from the spec's reference: the kernels are checked against that reference, so they read nothing
 * else that changes their output), or for an op without one, as its bundled template does. The
 * multi-process runtime fetches only what it says. One row each: enumerator and the bundled reference
 * function, or template file (".c"), it comes from.
 */
#define NDA_READS_KINDS(X)                                                                                \
    X(WHOLE, "")                  /* not stated: every element of every input */                          \
    X(POINTWISE, "elementwise")   /* each input at the output's coordinates, broadcast as numpy */        \
    X(LETTERS, "ref_einsum")      /* the output's index letters fixed, every value of the others */      \
    X(AXES, "ref_reduce_")        /* the dims of an axes(input) scalar list whole, the rest fixed */       \
    X(LAST_AXIS, "ref_softmax")   /* the last dim whole, the rest fixed */                                \
    X(PERM, "ref_permute")        /* output dim i is input dim perm[i] of a perm(input) list */           \
    X(PARTS, "all_reduce.c")      /* the output's coordinates in every part of its one Partial input,    \
                                     each from the copy of the part at the position of the reading core's \
                                     own copy (nda_part_page_read) */

typedef enum nda_reads {
#define NDA_READS_ENUM(e, reference) NDA_READS_##e,
    NDA_READS_KINDS(NDA_READS_ENUM)
#undef NDA_READS_ENUM
    NDA_READS_COUNT
} nda_reads;

/*
 * The registry a kernel library exports as the symbol nda_kernel_registry. The runtime reads
 * abi_version first and refuses the library when it differs from NDA_ABI_VERSION.
 */
typedef struct nda_kernel_entry {
    const char *op;
    const char *variant;             /* "generic" or "specialized" */
    const char *symbol;
    nda_kernel_fn *fn;
    int noperands;
    const char *const *operands;     /* operand names, inputs then outputs */
    const char *const *signatures;   /* specialized: nd_dist_signature of each operand; generic: NULL */
    const char *const *indices;      /* index notation of each operand, such as "bik" or "..." */
    const char *const *dtypes;       /* dtype of each operand: "f32", "bf16", ... (ND_DTYPES) */
    int noutputs;                    /* the last noutputs operands are outputs */
    const char *scalars;             /* launch scalars: the declaration (nd_scalars_parse), canonical, such as
                                        "eps: f32 in (0, 1], axes: axes(x)"; NULL: none (a launch giving any
                                        is refused) */
    uint32_t partial;                /* bit i: operand i may be Partial (a pending sum over copies) */
    const char *requires;            /* what the template assumes beyond the indices: nd_op_sig.requires */
    uint64_t partial_reduce;         /* bit 8i + r: operand i may be Partial pending nd_reduce r */
    nda_ref_fn *reference;           /* the op's plain reference, or NULL when its spec gives none */
    const char *reference_name;      /* what it is, for people: "from EXPR" or the function's name; NULL with
                                        none (what it reads is `reads`) */
    /* Which distribution parameters the kernel fixed: NULL for the generic kernel (none), else a set's
     * name (NDA_FIXED_SETS): "all" for a kernel serving exactly `signatures`; a partial set for one
     * serving every launch whose operands' signatures, with the set's free parameters starred
     * (ndreg_split_signature), equal `patterns`, and whose operands with equal shape_classes entries
     * agree on their free parameters, as in the target it was generated from (whose exact signatures
     * `signatures` still gives). */
    const char *fixed;
    const char *const *patterns;     /* a partial set: each operand's signature, free parameters starred */
    const int *shape_classes;        /* a partial set: [noperands], operand i's free parameters (shape, and
                                        the core list when free) equal operand shape_classes[i]'s */
    /* Launch scalars the kernel has as constants (its target's `scalars`): it serves only launches whose
     * value i equals scalar_values[i] wherever that is not NaN, and when the declaration's list is
     * fixed (nscalar_values exceeds the named scalars) only launches of exactly nscalar_values values.
     * 0 and NULL: none fixed. */
    int nscalar_values;
    const double *scalar_values;
    int reads;                       /* nda_reads: what an output element reads of the inputs */
    bool moves_data;                 /* the spec's moves_data: outputs are inputs' bytes, compared exactly */
    bool parts_chunked;              /* the template is one of NDA_CHUNKED_TEMPLATES: into a Partial output,
                                        copy q reads only its chunk of what `reads` names */
} nda_kernel_entry;

/* The bundled templates whose kernels split a Partial output's reduction over the parts by the chunk
 * rule (nda_part_range): part q folds only its chunk of the first reduced dim (reduce.c) or of the
 * contraction's extent (matmul.c, einsum.c: the one letter the output lacks, when there is one), so that
 * is all it reads of it. ndgen sets parts_chunked for these alone, found installed beside it (a user's
 * template of the same name may split its sum otherwise). */
#define NDA_CHUNKED_TEMPLATES(X) X("matmul.c") X("einsum.c") X("reduce.c")

/*
 * Partial specialization: the sets of distribution parameters a kernel may fix (a target's `fixed`),
 * one row each, in pick order: at a launch the runtime takes the exact kernel, then a kernel of the
 * next row that serves the launch, and so on, then (the JIT, then) the generic kernel. Columns: the
 * enumerator, the name specs and ndrun use, the parameters left to run time (NDA_FREE_*), and what the
 * set fixes, in words. Every
 * other parameter (rank, dtype, page box, shard shape, strategy, memory, copies) is fixed in every row;
 * docs/partial.md says why no set leaves one of them free. Not part of the template API.
 */
#define NDA_FREE_SHAPE 1u /* the tensor shape, and what derives from it: tensor pages, shard grid, shards */
#define NDA_FREE_GRID 2u  /* the core list: which cores, how many, their orientation */
#define NDA_FIXED_SETS(X)                                                                     \
    X(ALL, "all", 0u, "every parameter")                                                      \
    X(PATTERN, "pattern", NDA_FREE_SHAPE, "all but the shape")                                \
    X(SHARD, "shard", NDA_FREE_SHAPE | NDA_FREE_GRID, "all but the shape and the grid")

typedef enum nda_fixed {
#define NDA_FIXED_ENUM(e, name, free, what) NDA_FIXED_##e,
    NDA_FIXED_SETS(NDA_FIXED_ENUM)
#undef NDA_FIXED_ENUM
    NDA_FIXED_COUNT
} nda_fixed;

/* The set's name ("all", "pattern", ...), or NULL outside the table. */
static inline const char *ndreg_fixed_name(int set)
{
#define NDA_FIXED_NAME(e, name, free, what) name,
    static const char *const names[] = {NDA_FIXED_SETS(NDA_FIXED_NAME)};
#undef NDA_FIXED_NAME
    return set >= 0 && set < NDA_FIXED_COUNT ? names[set] : NULL;
}

/* What the set fixes, in words ("all but the shape"), or NULL outside the table. */
static inline const char *ndreg_fixed_what(int set)
{
#define NDA_FIXED_WHAT(e, name, free, what) what,
    static const char *const whats[] = {NDA_FIXED_SETS(NDA_FIXED_WHAT)};
#undef NDA_FIXED_WHAT
    return set >= 0 && set < NDA_FIXED_COUNT ? whats[set] : NULL;
}

/* The set's parameters left to run time (NDA_FREE_* bits); 0 outside the table. */
static inline unsigned ndreg_fixed_free(int set)
{
#define NDA_FIXED_FREE(e, name, free, what) free,
    static const unsigned frees[] = {NDA_FIXED_SETS(NDA_FIXED_FREE)};
#undef NDA_FIXED_FREE
    return set >= 0 && set < NDA_FIXED_COUNT ? frees[set] : 0u;
}

/* The set named name (a registry entry's `fixed`), or -1: NULL (the generic kernel) and unknown names. */
static inline int ndreg_fixed_parse(const char *name)
{
    for (int i = 0; name && i < NDA_FIXED_COUNT; ++i)
        if (strcmp(ndreg_fixed_name(i), name) == 0)
            return i;
    return -1;
}

/* A distribution signature (nd_dist_signature) split by the parameters free leaves to run time (NDA_FREE_*
 * bits): into fixed, the signature with each free field starred ("shape=*", "cores=* *" for the core
 * list and its orientation), what a partial kernel fixed; and into var, the free fields' own text,
 * which operands of one class must share. Either output may be NULL. Not part of the template API. */
static inline void ndreg_split_signature(const char *sig, unsigned free, char *fixed, size_t flen, char *var,
                                         size_t vlen)
{
    size_t nf = 0, nv = 0;
    bool star_next = false; /* the orientation after a starred core list */
    for (const char *p = sig; *p;) {
        size_t n = strcspn(p, " ");
        bool starred = star_next || ((free & NDA_FREE_SHAPE) && strncmp(p, "shape=", 6) == 0) ||
                       ((free & NDA_FREE_GRID) && strncmp(p, "cores=", 6) == 0);
        star_next = (free & NDA_FREE_GRID) && strncmp(p, "cores=", 6) == 0;
        size_t keep = starred ? (size_t)(strchr(p, '=') && strchr(p, '=') < p + n ? strchr(p, '=') - p + 1 : 0) : n;
        for (size_t i = 0; fixed && i < keep + starred && nf + 1 < flen; ++i)
            fixed[nf++] = i < keep ? p[i] : '*';
        for (size_t i = 0; var && starred && i < n + 1 && nv + 1 < vlen; ++i)
            var[nv++] = i < n ? p[i] : ' ';
        p += n;
        for (; *p == ' '; ++p)
            if (fixed && nf + 1 < flen)
                fixed[nf++] = ' ';
    }
    if (fixed && flen)
        fixed[nf] = '\0';
    if (var && vlen)
        var[nv] = '\0';
}

/*
 * The entries generated from one spec file, and where that spec and its templates were, so that
 * on-demand specialization finds them: each path is absolute, or relative to the library's install
 * prefix (the folder above the library's own) when it does not start with '/'. The runtime takes the
 * installed form when it exists there, else the absolute one.
 */
typedef struct nda_kernel_group {
    const char *spec;                /* the spec's name: its file name without .lua */
    int nentries;
    const nda_kernel_entry *entries;
    const char *spec_path;           /* the spec file, absolute, as ndgen read it */
    const char *spec_path_installed; /* relative to the install prefix, or NULL */
    int ntemplate_dirs;
    const char *const *template_dirs;           /* absolute, as ndgen searched them */
    const char *const *template_dirs_installed; /* [ntemplate_dirs], relative to the prefix; or NULL */
} nda_kernel_group;

typedef struct nda_kernel_library {
    uint32_t abi_version;            /* first, so a mismatch is detected before anything else is read */
    const char *generator_version;
    int ngroups;
    const nda_kernel_group *const *groups;
    const char *cflags;              /* the compile flags its kernels were built with (ndgen registry
                                        --kernel-cflags), which on-demand specializations of its ops take
                                        unless the JIT's caller gives its own; NULL: not recorded */
} nda_kernel_library;

/* ---------------------------------------------------------------- traffic statistics */

/*
 * The one place traffic is counted. The generic accessor below and the kernels ndgen specializes both
 * call these, so a specialized kernel counts exactly what the generic one does: per page read
 * ndstat_reads(core, local, !local, page_bytes), per page written ndstat_writes(core, 1, remote); a
 * specialized loop over a core's own pages counts its n local reads or writes once, at the end.
 * Not part of the template API (templates reach distributions through nda_* calls only).
 */
static inline void ndstat_reads(const nda_core *core, int64_t local_pages, int64_t remote_pages, int64_t page_bytes)
{
    core->stats->local_pages_read += local_pages;
    core->stats->remote_pages_read += remote_pages;
    core->stats->local_bytes_read += local_pages * page_bytes;
    core->stats->remote_bytes_read += remote_pages * page_bytes;
}

static inline void ndstat_writes(const nda_core *core, int64_t pages, int64_t remote_pages)
{
    core->stats->pages_written += pages;
    core->stats->remote_pages_written += remote_pages;
}

/* Operand i of a launch, inputs then outputs in the order the op's spec declares them. Templates bind
 * every operand through this call; the generator keys its specialization on the index. */
static inline const nda_tensor *nda_operand(const nda_args *args, int i)
{
    return &args->tensors[i];
}

/* Stops the process: a kernel read a scalar its launch did not name (see nda_scalar). */
static inline _Noreturn void ndrt_scalar_missing(const nda_args *args, const char *name)
{
    fprintf(stderr, "ndgen kernel: launch scalar '%s' is not among the launch's named scalars (%s); launch "
                    "through nd_run or nd_launch_entry, which pass the op's declared names\n",
            name, args->scalar_names ? args->scalar_names : "none given");
    abort();
}

/* The launch scalar the op's spec declares as name (`scalars = "eps: f32 ..."`), as a double: a
 * template reads its scalars by name, never by position. A specialized kernel has it as
 * args->scalars[i] with i known, or as the constant its target fixed. The generator refuses a name the
 * op does not declare, and a list (read a list as args->scalars[k], after the named scalars). */
static inline double nda_scalar(const nda_args *args, const char *name)
{
    size_t n = strlen(name);
    int i = 0;
    for (const char *p = args->scalar_names; p && *p; ++i) {
        size_t len = strcspn(p, ",");
        if (len == n && memcmp(p, name, n) == 0 && i < args->nscalars)
            return args->scalars[i];
        p += len + (p[len] == ',');
    }
    ndrt_scalar_missing(args, name);
}

/* ---------------------------------------------------------------- lookup */

/* This core's index in t's core list, or -1 when it holds none of t. */
static inline int64_t nda_self(const nda_core *core, const nda_tensor *t)
{
    return t->index_of[core->id];
}

static inline nd_loc nda_locate(const nda_tensor *t, int64_t page)
{
    return nd_layout_locate_id(t->layout, page);
}

static inline uint8_t *nda_page_addr(const nda_tensor *t, int64_t page)
{
    nd_loc loc = nd_layout_locate_id(t->layout, page);
    return t->base[loc.core] + loc.offset * t->page_bytes;
}

static inline bool nda_is_local(const nda_core *core, const nda_tensor *t, int64_t page)
{
    int64_t self = nda_self(core, t);
    return self >= 0 && nd_layout_locate_id(t->layout, page).core == self;
}

/* Bytes in one page of t (padding included). */
static inline int64_t nda_page_bytes(const nda_tensor *t)
{
    return t->page_bytes;
}

/* Page id <-> page coordinate, at the tensor's full rank. */
static inline void nda_page_coord(const nda_tensor *t, int64_t page, int64_t *coord)
{
    nd_dist_page_coord(t->dist, page, coord);
}

static inline int64_t nda_page_id(const nda_tensor *t, const int64_t *coord)
{
    return nd_dist_page_id(t->dist, coord);
}

/* ---------------------------------------------------------------- reading and writing */

/* The page's bytes, for reading; counts a local or remote read on this core. */
static inline const void *nda_page_read(const nda_core *core, const nda_tensor *t, int64_t page)
{
    nd_loc loc = nd_layout_locate_id(t->layout, page);
    bool local = loc.core == nda_self(core, t);
    ndstat_reads(core, local, !local, t->page_bytes);
    return t->base[loc.core] + loc.offset * t->page_bytes;
}

/* The page's bytes, for writing; counts a write, and whether it went to another core. */
static inline void *nda_page_write(const nda_core *core, const nda_tensor *t, int64_t page)
{
    nd_loc loc = nd_layout_locate_id(t->layout, page);
    ndstat_writes(core, 1, loc.core != nda_self(core, t));
    return t->base[loc.core] + loc.offset * t->page_bytes;
}

/* ---------------------------------------------------------------- shapes and elements */

static inline int nda_rank(const nda_tensor *t) { return t->dist->spec.rank; }
static inline int64_t nda_dim(const nda_tensor *t, int i) { return t->dist->spec.shape[i]; }
/* Extent of a page along dim i, in elements. */
static inline int64_t nda_page_dim(const nda_tensor *t, int i) { return t->dist->spec.page[i]; }

/* Whether a and b have the same shape and page box, so that page p of one holds the same elements as
 * page p of the other. A specialized kernel knows the answer as a constant. */
static inline bool nda_same_paging(const nda_tensor *a, const nda_tensor *b)
{
    return nd_dist_same_paging(a->dist, b->dist);
}

/*
 * The element at coordinate coord (full rank, in elements), for reading: a pointer to it, and in *run
 * how many elements, it included, follow it contiguously along the last dim inside its page and the
 * tensor. Counts one page read, local or remote.
 */
static inline const void *nda_elem_read(const nda_core *core, const nda_tensor *t, const int64_t *coord, int64_t *run)
{
    const nd_dist_spec *s = &t->dist->spec;
    const nd_layout *full = &t->dist->layout;
    int64_t page = 0, in = 0, last = s->rank - 1;
    for (int i = 0; i < s->rank; ++i) {
        page += coord[i] / s->page[i] * full->page_stride[i];
        in = in * s->page[i] + coord[i] % s->page[i];
    }
    int64_t to_page_end = s->page[last] - coord[last] % s->page[last], to_edge = s->shape[last] - coord[last];
    *run = to_page_end < to_edge ? to_page_end : to_edge;
    const uint8_t *p = (const uint8_t *)nda_page_read(core, t, page);
    return p + in * t->dist->elem_bytes;
}

/* ---------------------------------------------------------------- iteration over owned pages */

/*
 * The pages this core owns of t, in buffer order, padding skipped: those it holds in L1, or for a DRAM
 * tensor those of the bank it writes.
 *   for (nda_iter it = nda_iter_local(core, t); nda_iter_valid(&it); nda_iter_next(&it)) {
 *       int64_t page = nda_iter_page(&it);  uint8_t *p = nda_iter_ptr(&it);  ...
 *   }
 * Pointers from nda_iter_ptr are this core's own memory; using them counts no traffic.
 */
typedef struct nda_iter {
    nd_page_iter pages;
    uint8_t *base;
    int64_t page_bytes;
} nda_iter;

static inline nda_iter nda_iter_local(const nda_core *core, const nda_tensor *t)
{
    nda_iter it;
    int64_t self = t->owner_of[core->id];
    it.base = self >= 0 ? t->base[self] : NULL;
    it.page_bytes = t->page_bytes;
    if (self >= 0) {
        it.pages = nd_page_iter_begin(t->layout, self);
    } else {
        memset(&it.pages, 0, sizeof it.pages);
        it.pages.valid = false;
    }
    return it;
}

static inline bool nda_iter_valid(const nda_iter *it) { return it->pages.valid; }
static inline void nda_iter_next(nda_iter *it) { nd_page_iter_next(&it->pages); }
static inline int64_t nda_iter_page(const nda_iter *it) { return it->pages.page_id; }
static inline uint8_t *nda_iter_ptr(const nda_iter *it) { return it->base + it->pages.offset * it->page_bytes; }

/* ---------------------------------------------------------------- element types */

/* c ? a : b for c 0 or 1, as arithmetic: GCC leaves chains of ?: as branches, which stop vectorization. */
#define NDA_SELECT(c, a, b) ((b) ^ (((a) ^ (b)) & (0u - (uint32_t)(c))))

/* Always inlined: a loop calling a conversion does not vectorize, and in a large file (a spec's many
 * kernels) GCC's unit growth limit can leave these as calls. */
#if defined(__GNUC__)
#define NDA_CONVERSION static inline __attribute__((always_inline))
#else
#define NDA_CONVERSION static inline
#endif

/* bf16 is stored as the top half of an f32; math on it is done in f32. These two helpers involve no
 * distribution, so ndgen leaves them as they are. */
NDA_CONVERSION float nda_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Rounds to nearest, ties to even; a NaN stays a (quiet) NaN. */
NDA_CONVERSION uint16_t nda_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* f16 is IEEE 754 binary16 (1 sign, 5 exponent and 10 fraction bits, bias 15); math on it is done in f32,
 * which holds every f16 value exactly. Plain integer code, so every compiler and target gives the same
 * bits (a compiler's _Float16 needs GCC 12 or Clang 15, and F16C for speed). Each case is computed and
 * one is selected, with no branch, so that loops over these vectorize with GCC as with Clang. A NaN
 * stays a NaN, made quiet, its top payload bits kept. */
NDA_CONVERSION float nda_f16_to_f32(uint16_t h)
{
    const uint32_t em = h & 0x7fffu;
    const float tiny = (float)(int32_t)em * 0x1p-24f; /* zero or subnormal: em 2^-24, exact in f32 */
    uint32_t sub;
    memcpy(&sub, &tiny, sizeof sub);
    const uint32_t normal = (em << 13) + ((uint32_t)(127 - 15) << 23); /* the exponent rebased to 127 */
    const uint32_t special = 0x7f800000u | (em & 0x3ffu) << 13 | (uint32_t)(em > 0x7c00u) << 22; /* inf, NaN */
    const uint32_t u = (uint32_t)(h & 0x8000u) << 16 |
                       NDA_SELECT(em < 0x0400u, sub, NDA_SELECT(em < 0x7c00u, normal, special));
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Rounds to nearest, ties to even: from 65520 on to infinity; below 2^-14 to a subnormal or zero, by
 * adding 0.5f, whose f32 step is 2^-24, the f16 subnormals' step (so the hardware rounds, in the
 * default rounding mode that C programs run in). */
NDA_CONVERSION uint16_t nda_f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const uint32_t a = u & 0x7fffffffu;
    /* 2^-14 up to 65520: round the 13 bits dropped, then rebase the exponent to 15 */
    const uint32_t normal = (a + 0x0fffu + (a >> 13 & 1u) - ((uint32_t)(127 - 15) << 23)) >> 13;
    float mag;
    memcpy(&mag, &a, sizeof mag);
    mag += 0.5f;
    uint32_t sub;
    memcpy(&sub, &mag, sizeof sub);
    sub -= 0x3f000000u; /* the bits of 0.5f: what is left is the count of 2^-24 steps, 0 to 1024 */
    const uint32_t big = NDA_SELECT(a <= 0x7f800000u, 0x7c00u, 0x7e00u | (a >> 13 & 0x3ffu)); /* infinity, NaN */
    const uint32_t r = NDA_SELECT(a < 0x38800000u, sub, NDA_SELECT(a < 0x477ff000u, normal, big));
    return (uint16_t)(u >> 16 & 0x8000u) | (uint16_t)r;
}

/* Element i of a reference operand as f32 (a floating dtype's data), and v stored into element i. Helpers for
 * references, not part of the template API (as ndstat_*). */
/* Element i of data of dtype t as f32, and v stored as element i (a floating dtype: ND_DTYPES' conversions). */
static inline float ndref_dtype_load_f32(nd_dtype t, const void *data, int64_t i)
{
    switch (t) {
#define NDA_LOAD_CASE(e, name, bytes, type, floating, load, store, tol, one)                                  \
    case e:                                                                                               \
        return (float)load(((const type *)data)[i]);
        ND_DTYPES(NDA_LOAD_CASE)
#undef NDA_LOAD_CASE
    }
    return 0;
}

static inline void ndref_dtype_store_f32(nd_dtype t, void *data, int64_t i, float v)
{
    switch (t) {
#define NDA_STORE_CASE(e, name, bytes, type, floating, load, store, tol, one)                                 \
    case e:                                                                                               \
        ((type *)data)[i] = (type)store(v);                                                               \
        return;
        ND_DTYPES(NDA_STORE_CASE)
#undef NDA_STORE_CASE
    }
}

static inline float ndref_load_f32(const nda_ref_operand *t, int64_t i)
{
    return ndref_dtype_load_f32((nd_dtype)t->dtype, t->data, i);
}

static inline void ndref_store_f32(const nda_ref_operand *t, int64_t i, float v)
{
    ndref_dtype_store_f32((nd_dtype)t->dtype, t->data, i, v);
}

/* Elements of a reference operand. */
static inline int64_t ndref_count(const nda_ref_operand *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; ++i)
        n *= t->shape[i];
    return n;
}

/* ---------------------------------------------------------------- partial sums */

/*
 * A Partial tensor's value is its parts combined by its reduce op (nda_part_reduce), a sum unless the
 * distribution says otherwise. A kernel writing one computes the part its core's copy holds: nda_part()
 * of nda_parts(). Reading part q of a page is how a collective combines them;
 * among the copies holding part q it reads the one in the same position as this core's copy.
 */
static inline int64_t nda_parts(const nda_tensor *t) { return t->parts; }
/* How the parts combine (an nd_reduce): a collective combines them with this op, for avg summing and
 * dividing by nda_parts once at the end. */
static inline int nda_part_reduce(const nda_tensor *t) { return t->reduce; }
static inline int64_t nda_part(const nda_core *core, const nda_tensor *t)
{
    (void)core;
    return t->replica / (t->replicas / t->parts);
}

/* [*lo, *hi): part q's chunk of an extent n split over `parts` by the chunk rule (ceil(n / parts) each,
 * the last ones shorter or empty). The runtime's read sets use it too (NDA_CHUNKED_TEMPLATES). */
static inline void nda_chunk(int64_t n, int64_t parts, int64_t q, int64_t *lo, int64_t *hi)
{
    int64_t c = (n + parts - 1) / parts;
    *lo = q * c < n ? q * c : n;
    *hi = *lo + c < n ? *lo + c : n;
}

/* [*lo, *hi): this core's share of a reduced extent n, its part's chunk of it (nda_chunk). */
static inline void nda_part_range(const nda_core *core, const nda_tensor *t, int64_t n, int64_t *lo, int64_t *hi)
{
    nda_chunk(n, t->parts, nda_part(core, t), lo, hi);
}

static inline const void *nda_part_page_read(const nda_core *core, const nda_tensor *t, int64_t part, int64_t page)
{
    int64_t per = t->replicas / t->parts, copy = part * per + t->replica % per;
    nd_loc loc = nd_layout_locate_id(t->layout, page);
    bool local = copy == t->replica && loc.core == nda_self(core, t);
    ndstat_reads(core, local, !local, t->page_bytes);
    return t->all_base[copy * t->layout->ncores + loc.core] + loc.offset * t->page_bytes;
}

/* ---------------------------------------------------------------- shards */

/* Shards this core holds of t, and the id of the one in slot k. */
static inline int64_t nda_shard_count(const nda_core *core, const nda_tensor *t)
{
    int64_t self = nda_self(core, t);
    return self >= 0 ? nd_layout_core_shards(t->layout, self) : 0;
}

static inline int64_t nda_shard_id(const nda_core *core, const nda_tensor *t, int64_t slot)
{
    return nd_layout_core_shard(t->layout, nda_self(core, t), slot);
}

#ifdef __cplusplus
}
#endif
#endif
