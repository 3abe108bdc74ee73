/*
 * rewrite.c - stage 3: one variant of a template as C text.
 *
 * The generic variant is the template as written, with the op's parameters and unique names. The
 * specialized variant for a target rewrites every accessor call located by analyze.c:
 *   - random-access calls (nda_page_read, nda_locate, ...) call a helper generated for the operand
 *     whose arithmetic has every shape, stride, core count and page size as a literal; a dim the
 *     target does not shard has been squeezed away and leaves no arithmetic;
 *   - an nda_iter loop becomes a loop over the core's shard slots and, inside, nested loops with
 *     constant bounds over the shard's pages, with page ids and pointers advanced by increments;
 *   - a read or write of the loop's current page of another operand placed identically is known to be
 *     local: it becomes a pointer that advances with the loop, with no lookup.
 * The helpers count traffic exactly as the generic accessor does, so statistics agree too. A partial
 * target (a set of NDA_FIXED_SETS past "all", docs/partial.md) keeps the same plan at full rank, with the
 * parameters its set leaves free read from the descriptor: the shape, and the core count with the grid.
 *
 * Edits never overlap except by containment (a call given nda_iter_page(&it) contains that call), so
 * they are applied in offset order, skipping any edit inside the one before. Generated code that spans
 * lines is followed by a #line directive, so the template's lines stay true after it.
 */
#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ndgen.h"

/* ---------------------------------------------------------------- arithmetic with literals */

/* A sum of terms, written without "+ 0". */
typedef struct sum {
    char text[1024];
    int n;
} sum;

__attribute__((format(printf, 2, 3))) static void sum_add(sum *s, const char *fmt, ...)
{
    size_t len = strlen(s->text);
    if (s->n++)
        len += (size_t)snprintf(s->text + len, sizeof s->text - len, " + ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->text + len, sizeof s->text - len, fmt, ap);
    va_end(ap);
}

static const char *sum_text(const sum *s) { return s->n ? s->text : "0"; }

/* "x * k", or "x" when k is 1. */
static void term(sum *s, const char *x, int64_t k)
{
    if (k == 1)
        sum_add(s, "%s", x);
    else
        sum_add(s, "%s * %lld", x, (long long)k);
}

/* ---------------------------------------------------------------- folded expressions */

/* An integer expression as C text, folded as it is built: x / 1 and x * 1 are x, x % 1 and 0 * k are 0,
 * and operations on constants are done. prec says how it binds: 0 a name or literal, 1 a product or
 * quotient, 2 a sum. Every fold is an identity on the integers these expressions hold (non-negative
 * page, shard and core numbers), so the printed code means what the unfolded one did. */
typedef struct ex {
    char s[480];
    bool is_const;
    int64_t k;
    int prec;
} ex;

/* snprintf into a fixed buffer. Expressions stay far shorter than their buffers; one that did not fit
 * would be cut into wrong code, so ndgen says so and exits instead. */
__attribute__((format(printf, 3, 4))) static void ex_fmt(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len) {
        fprintf(stderr, "ndgen: internal error: a generated expression needs %d bytes, more than its %zu\n", n, len);
        exit(1);
    }
}

static ex ex_k(int64_t k)
{
    ex e = {.is_const = true, .k = k, .prec = 0};
    snprintf(e.s, sizeof e.s, "%lld", (long long)k);
    return e;
}

static ex ex_name(const char *name)
{
    ex e = {.prec = 0};
    ex_fmt(e.s, sizeof e.s, "%s", name);
    return e;
}

static bool ex_is(const ex *e, int64_t k) { return e->is_const && e->k == k; }

/* a op k, a quotient, remainder or product; a in parentheses when it is a sum. */
static ex ex_op(ex a, char op, int64_t k)
{
    if (op == '/' && k == 1)
        return a;
    if (op == '%' && k == 1)
        return ex_k(0);
    if (op == '*' && (k == 0 || ex_is(&a, 0)))
        return ex_k(0);
    if (op == '*' && k == 1)
        return a;
    if (a.is_const && k > 0 && a.k >= 0)
        return ex_k(op == '/' ? a.k / k : op == '%' ? a.k % k : a.k * k);
    ex e = {.prec = 1};
    ex_fmt(e.s, sizeof e.s, a.prec == 2 ? "(%s) %c %lld" : "%s %c %lld", a.s, op, (long long)k);
    return e;
}

/* a op k for an expression k: folded as ex_op when k is a constant, else printed. */
static ex ex_by(ex a, char op, ex k)
{
    if (k.is_const)
        return ex_op(a, op, k.k);
    ex e = {.prec = 1};
    ex_fmt(e.s, sizeof e.s, a.prec == 2 ? "(%s) %c %s" : "%s %c %s", a.s, op, k.s);
    return e;
}

static ex ex_add(ex a, ex b)
{
    if (ex_is(&a, 0))
        return b;
    if (ex_is(&b, 0))
        return a;
    if (a.is_const && b.is_const)
        return ex_k(a.k + b.k);
    ex e = {.prec = 2};
    ex_fmt(e.s, sizeof e.s, "%s + %s", a.s, b.s);
    return e;
}

/* ---------------------------------------------------------------- per-operand helpers */

typedef struct operand_ctx {
    ndg_buf *b;
    const char *P;      /* variant prefix */
    int k;              /* operand index */
    const nd_dist *d;
    const nd_layout *l; /* squeezed */
    unsigned free;      /* a partial target: NDA_FREE_* bits of the parameters read at run time; 0 exact */
} operand_ctx;

/* ---------------------------------------------------------------- layout fields: literals or run time
 *
 * Exact targets and pattern targets share one printer per helper and one loop-nest printer. With the
 * shape left to run time (NDA_FIXED_SETS: every partial set leaves it), the squeezed rank depends on
 * the shape, so a pattern target's code works on the full-rank layout, whose rank is fixed: shard
 * extents S, in-shard strides, shard pages and page bytes are literals; tensor pages, shard grid, their
 * strides, shard count and shards per core are read from the descriptor (t->dist->layout), and so is
 * the core count when the grid is free too (else a literal). Divisions by S are by constants. Each
 * printer asks layout_field for the fields of the second kind and folds what comes back. */

/* The number of cores of the operand's copy: a literal, or read from layout L when the grid is free. */
static ex ncores_ex(const nd_layout *l, unsigned free, const char *L)
{
    if (!(free & NDA_FREE_GRID))
        return ex_k(l->ncores);
    ex e = {.prec = 0};
    ex_fmt(e.s, sizeof e.s, "%s->ncores", L);
    return e;
}

/* Layout field `name` (of dim i, or a whole-layout field when i < 0) that a pattern target reads at run
 * time (pages, grid, grid_stride, page_stride, num_shards, shards_per_core): its value as a literal for an
 * exact target (free == 0), else the field of the layout named L. */
static ex layout_field(unsigned free, const char *L, const char *name, int i, int64_t value)
{
    if (!free)
        return ex_k(value);
    ex e = {.prec = 0};
    if (i < 0)
        ex_fmt(e.s, sizeof e.s, "%s->%s", L, name);
    else
        ex_fmt(e.s, sizeof e.s, "%s->%s[%d]", L, name, i);
    return e;
}

/* Shards core `self` holds: a constant when shards divide evenly (known only for an exact target),
 * else an expression of the shard count (literals, or read from layout L at run time), whose text binds
 * as a whole only in parentheses (prec 3). */
static ex nslots_of(const nd_layout *l, unsigned free, const char *self, const char *L)
{
    const ex G = layout_field(free, L, "num_shards", -1, l->num_shards), N = ncores_ex(l, free, L),
             R = layout_field(free, L, "shards_per_core", -1, l->shards_per_core);
    if (l->strategy == ND_ROUND_ROBIN) {
        const ex rem = ex_by(G, '%', N);
        if (ex_is(&rem, 0))
            return ex_by(G, '/', N);
        ex e = {.prec = 3};
        ex_fmt(e.s, sizeof e.s, "%s + (%s < %s)", ex_by(G, '/', N).s, self, rem.s);
        return e;
    }
    if (!free && l->num_shards == l->ncores * l->shards_per_core)
        return R;
    ex e = {.prec = 3};
    ex_fmt(e.s, sizeof e.s, "(%s * %s >= %s ? 0 : %s - %s * %s < %s ? %s - %s * %s : %s)", self, R.s, G.s, G.s, self,
           R.s, R.s, G.s, self, R.s, R.s);
    return e;
}

/* Shard in slot `slot` of core `self`. */
static ex shard_of(const nd_layout *l, unsigned free, const char *L, ex self, ex slot)
{
    if (l->strategy == ND_ROUND_ROBIN)
        return ex_add(self, ex_by(slot, '*', ncores_ex(l, free, L)));
    return ex_add(ex_by(self, '*', layout_field(free, L, "shards_per_core", -1, l->shards_per_core)), slot);
}

/* The layout a helper works on: the squeezed one of an exact target, the full-rank one of a pattern
 * target (its squeezed rank depends on the shape). */
static const nd_layout *helper_layout(const operand_ctx *o) { return o->free ? &o->d->layout : o->l; }

/* A helper's first lines: the run-time layout L of a pattern target; else the tensor is unused. */
static void helper_head(const operand_ctx *o)
{
    if (o->free)
        ndg_buf_printf(o->b, "    const nd_layout *const L = &t->dist->layout;\n    (void)L;\n");
    else
        ndg_buf_printf(o->b, "    (void)t;\n");
}

/* Field `name` of the helper's layout (see layout_field). */
static ex helper_field(const operand_ctx *o, const char *name, int i, int64_t value)
{
    return layout_field(o->free, "L", name, i, value);
}

/* Adds page coordinate `c` (a variable) of dim i to the shard number `shard` and the in-shard position
 * `in` of helper_elem_read_rt, dividing by the constant shard extent. */
static void loc_dim_rt(const operand_ctx *o, int i)
{
    const nd_layout *l = &o->d->layout;
    long long S = l->shard[i];
    if (S == 1) {
        ndg_buf_printf(o->b, "    shard += c * L->grid_stride[%d];\n", i);
        return;
    }
    ndg_buf_printf(o->b, "    shard += c / %lld * L->grid_stride[%d];\n", S, i);
    ndg_buf_printf(o->b, "    in += %s;\n", ex_op(ex_op(ex_name("c"), '%', S), '*', l->shard_stride[i]).s);
}

/* The nd_loc of shard `shard` at in-shard position `in`, as C text. */
static void loc_rt(const operand_ctx *o, char *out, size_t len)
{
    const nd_layout *l = &o->d->layout;
    long long SP = l->shard_pages;
    ex N = ncores_ex(l, o->free, "L");
    if (l->strategy == ND_ROUND_ROBIN)
        snprintf(out, len, "(nd_loc){%s, %s + in}", ex_by(ex_name("shard"), '%', N).s,
                 ex_op(ex_by(ex_name("shard"), '/', N), '*', SP).s);
    else
        snprintf(out, len, "(nd_loc){shard / L->shards_per_core, shard %% L->shards_per_core * %lld + in}", SP);
}

static void helper_dim_rt(const operand_ctx *o)
{
    ndg_buf_printf(o->b, "static inline int64_t %sdim_%d(const nda_tensor *t, int i)\n{\n    return t->dist->spec.shape[i];\n}\n",
                   o->P, o->k);
}

/* An element's address from its coordinates: each page coordinate is a division by the constant page
 * extent, placed as helper_locate_rt places it, with no page id (and no division by the run-time
 * tensor pages) on the way; counted as the generic nda_elem_read counts its page. */
static void helper_elem_read_rt(const operand_ctx *o)
{
    const nd_dist_spec *s = &o->d->spec;
    int r = s->rank;
    ex in = ex_k(0);
    int64_t pe = 1;
    for (int i = r - 1; i >= 0; --i) {
        char c[32];
        snprintf(c, sizeof c, "coord[%d]", i);
        if (s->page[i] > 1)
            in = ex_add(ex_op(ex_op(ex_name(c), '%', s->page[i]), '*', pe), in);
        pe *= s->page[i];
    }
    long long pw = s->page[r - 1], pb = o->d->page_bytes;
    char last[32];
    snprintf(last, sizeof last, "coord[%d]", r - 1);
    ex to_page_end = pw == 1 ? ex_k(1) : ex_name("");
    if (pw != 1)
        ex_fmt(to_page_end.s, sizeof to_page_end.s, "%lld - %s", pw, ex_op(ex_name(last), '%', pw).s);
    ndg_buf_printf(o->b,
        "static inline const void *%selem_read_%d(const nda_core *core, const nda_tensor *t, const int64_t *coord, int64_t *run)\n{\n",
        o->P, o->k);
    helper_head(o);
    ndg_buf_printf(o->b,
        "    const int64_t to_page_end = %s, to_edge = t->dist->spec.shape[%d] - %s;\n"
        "    *run = to_page_end < to_edge ? to_page_end : to_edge;\n    int64_t shard = 0, in = 0, c;\n",
        to_page_end.s, r - 1, last);
    for (int i = 0; i < r; ++i) {
        char c[32];
        snprintf(c, sizeof c, "coord[%d]", i);
        ndg_buf_printf(o->b, "    c = %s;\n", ex_op(ex_name(c), '/', s->page[i]).s);
        loc_dim_rt(o, i);
    }
    char loc[1024];
    loc_rt(o, loc, sizeof loc);
    ex off = ex_add(ex_op(ex_name("l.offset"), '*', pb), ex_op(in, '*', o->d->elem_bytes));
    ndg_buf_printf(o->b,
        "    const nd_loc l = %s;\n    const bool local = l.core == t->index_of[core->id];\n"
        "    ndstat_reads(core, local, !local, %lld);\n    return t->base[l.core] + %s;\n}\n", loc, pb, off.s);
}

/* The helpers above replace these kinds' for a partial target, with the kinds whose helpers they call:
 * the dims come from the descriptor, and an element's address is found without its page id (which would
 * divide by the run-time tensor pages). Every other helper serves both kinds of target (helper_field). */
static const struct {
    ndg_call_kind kind;
    void (*emit)(const operand_ctx *);
    unsigned needs;
} rt_helpers[] = {
    {NDG_DIM, helper_dim_rt, 0},
    {NDG_ELEM_READ, helper_elem_read_rt, 0},
};

/* kind's entry of rt_helpers for a partial target, or -1. */
static int rt_helper(unsigned free, ndg_call_kind kind)
{
    for (int i = 0; free && i < (int)(sizeof rt_helpers / sizeof *rt_helpers); ++i)
        if (rt_helpers[i].kind == kind)
            return i;
    return -1;
}

/* A page's core and offset from its id: its coordinate in each dim that is sharded or split (a dim of one
 * page, known only for an exact target, has coordinate 0), then its shard and its place in the shard. */
static void helper_locate(const operand_ctx *o)
{
    const nd_layout *l = helper_layout(o);
    ex shard = ex_k(0), in = ex_k(0);
    const ex page = ex_name("page");
    bool page_used = false;
    ndg_buf_printf(o->b, "static inline nd_loc %slocate_%d(const nda_tensor *t, int64_t page)\n{\n", o->P, o->k);
    helper_head(o);
    for (int i = 0; i < l->rank; ++i) {
        bool sharded = o->free || l->grid[i] > 1, split = l->shard[i] > 1;
        if (!sharded && !split)
            continue; /* a dim of one page: coordinate 0 */
        const ex stride = helper_field(o, "page_stride", i, l->page_stride[i]),
                 pages = helper_field(o, "pages", i, l->pages[i]);
        ex c = i == 0 ? ex_by(page, '/', stride)
               : i == l->rank - 1 ? ex_by(page, '%', pages)
                                  : ex_by(ex_by(page, '/', stride), '%', pages);
        page_used = true;
        if (c.prec) { /* named, as it is used twice */
            char name[16];
            snprintf(name, sizeof name, "c%d", i);
            ndg_buf_printf(o->b, "    const int64_t %s = %s;\n", name, c.s);
            c = ex_name(name);
        }
        if (sharded)
            shard = ex_add(shard, ex_by(ex_op(c, '/', l->shard[i]), '*',
                                        helper_field(o, "grid_stride", i, l->grid_stride[i])));
        if (split)
            in = ex_add(in, ex_op(sharded ? ex_op(c, '%', l->shard[i]) : c, '*', l->shard_stride[i]));
    }
    if (!page_used)
        ndg_buf_printf(o->b, "    (void)page;\n");
    if (shard.prec) {
        ndg_buf_printf(o->b, "    const int64_t shard = %s;\n", shard.s);
        shard = ex_name("shard");
    }
    const ex N = ncores_ex(l, o->free, "L"), R = helper_field(o, "shards_per_core", -1, l->shards_per_core);
    const long long SP = l->shard_pages;
    ex core, offset;
    if (l->strategy == ND_ROUND_ROBIN) {
        core = ex_by(shard, '%', N);
        offset = ex_add(ex_op(ex_by(shard, '/', N), '*', SP), in);
    } else {
        core = ex_by(shard, '/', R);
        offset = ex_add(ex_op(ex_by(shard, '%', R), '*', SP), in);
    }
    ndg_buf_printf(o->b, "    return (nd_loc){%s, %s};\n}\n", core.s, offset.s);
}

/* Page coordinates are at the tensor's full rank, row-major: page / page_stride[i] % pages[i]. */
static void helper_page_coord(const operand_ctx *o)
{
    const nd_layout *l = &o->d->layout;
    ndg_buf_printf(o->b, "static inline void %spage_coord_%d(const nda_tensor *t, int64_t page, int64_t *coord)\n{\n",
                   o->P, o->k);
    helper_head(o);
    const ex page = ex_name("page");
    assert(l->page_stride[l->rank - 1] == 1);
    for (int i = l->rank - 1; i > 0; --i) {
        ex stride = i == l->rank - 1 ? ex_k(1) : helper_field(o, "page_stride", i, l->page_stride[i]);
        ndg_buf_printf(o->b, "    coord[%d] = %s;\n", i,
                       ex_by(ex_by(page, '/', stride), '%', helper_field(o, "pages", i, l->pages[i])).s);
    }
    ndg_buf_printf(o->b, "    coord[0] = %s;\n}\n", ex_by(page, '/', helper_field(o, "page_stride", 0, l->page_stride[0])).s);
}

/* The page id of page coordinates: their sum weighted by the page strides, the last of which is 1. */
static void helper_page_id(const operand_ctx *o)
{
    const nd_layout *l = &o->d->layout;
    assert(l->page_stride[l->rank - 1] == 1);
    sum id = {0};
    for (int i = 0; i < l->rank; ++i) {
        char c[32];
        snprintf(c, sizeof c, "coord[%d]", i);
        ex stride = i == l->rank - 1 ? ex_k(1) : helper_field(o, "page_stride", i, l->page_stride[i]);
        if (stride.is_const)
            term(&id, c, stride.k);
        else
            sum_add(&id, "%s * %s", c, stride.s);
    }
    ndg_buf_printf(o->b, "static inline int64_t %spage_id_%d(const nda_tensor *t, const int64_t *coord)\n{\n", o->P,
                   o->k);
    helper_head(o);
    ndg_buf_printf(o->b, "    return %s;\n}\n", sum_text(&id));
}

static void helper_self(const operand_ctx *o)
{
    ndg_buf_printf(o->b, "static inline int64_t %sself_%d(const nda_core *core, const nda_tensor *t)\n{\n"
                         "    return t->index_of[core->id];\n}\n", o->P, o->k);
}

static void helper_page_addr(const operand_ctx *o)
{
    ndg_buf_printf(o->b, "static inline uint8_t *%spage_addr_%d(const nda_tensor *t, int64_t page)\n{\n"
                         "    const nd_loc l = %slocate_%d(t, page);\n    return t->base[l.core] + l.offset * %lld;\n}\n",
                   o->P, o->k, o->P, o->k, (long long)o->d->page_bytes);
}

static void helper_is_local(const operand_ctx *o)
{
    ndg_buf_printf(o->b, "static inline bool %sis_local_%d(const nda_core *core, const nda_tensor *t, int64_t page)\n{\n"
                         "    const int64_t self = t->index_of[core->id];\n"
                         "    return self >= 0 && %slocate_%d(t, page).core == self;\n}\n", o->P, o->k, o->P, o->k);
}

/* Counts traffic with the accessor's own ndstat_* functions, as nda_page_read does. */
static void helper_page_read(const operand_ctx *o)
{
    ndg_buf_printf(o->b,
        "static inline const void *%spage_read_%d(const nda_core *core, const nda_tensor *t, int64_t page)\n{\n"
        "    const nd_loc l = %slocate_%d(t, page);\n    const bool local = l.core == t->index_of[core->id];\n"
        "    ndstat_reads(core, local, !local, %lld);\n"
        "    return t->base[l.core] + %s;\n}\n", o->P, o->k, o->P, o->k, (long long)o->d->page_bytes,
        ex_op(ex_name("l.offset"), '*', o->d->page_bytes).s);
}

static void helper_page_write(const operand_ctx *o)
{
    ndg_buf_printf(o->b,
        "static inline void *%spage_write_%d(const nda_core *core, const nda_tensor *t, int64_t page)\n{\n"
        "    const nd_loc l = %slocate_%d(t, page);\n"
        "    ndstat_writes(core, 1, l.core != t->index_of[core->id]);\n"
        "    return t->base[l.core] + %s;\n}\n", o->P, o->k, o->P, o->k,
        ex_op(ex_name("l.offset"), '*', o->d->page_bytes).s);
}

static void helper_shard_count(const operand_ctx *o)
{
    const ex nslots = nslots_of(helper_layout(o), o->free, "self", "L");
    ndg_buf_printf(o->b, "static inline int64_t %sshard_count_%d(const nda_core *core, const nda_tensor *t)\n{\n",
                   o->P, o->k);
    if (o->free)
        helper_head(o);
    ndg_buf_printf(o->b, "    const int64_t self = t->index_of[core->id];\n    return self < 0 ? 0 : %s;\n}\n", nslots.s);
}

static void helper_shard_id(const operand_ctx *o)
{
    ndg_buf_printf(o->b, "static inline int64_t %sshard_id_%d(const nda_core *core, const nda_tensor *t, int64_t slot)\n{\n",
                   o->P, o->k);
    if (o->free)
        helper_head(o);
    ndg_buf_printf(o->b, "    const int64_t self = t->index_of[core->id];\n    return %s;\n}\n",
                   shard_of(helper_layout(o), o->free, "L", ex_name("self"), ex_name("slot")).s);
}

static void helper_page_bytes(const operand_ctx *o)
{
    ndg_buf_printf(o->b, "static inline int64_t %spage_bytes_%d(const nda_tensor *t)\n{\n    (void)t;\n    return %lld;\n}\n",
                   o->P, o->k, (long long)o->d->page_bytes);
}

static void helper_rank(const operand_ctx *o)
{
    ndg_buf_printf(o->b, "static inline int %srank_%d(const nda_tensor *t)\n{\n    (void)t;\n    return %d;\n}\n", o->P,
                   o->k, o->d->spec.rank);
}

static void dims_list(char *out, size_t len, const int64_t *d, int rank)
{
    size_t n = 0;
    for (int i = 0; i < rank; ++i)
        n += (size_t)snprintf(out + n, len - n, i ? ", %lld" : "%lld", (long long)d[i]);
}

/* A literal array lookup, folded to a constant when i is. */
static void helper_dims(const operand_ctx *o, const char *name, const int64_t *dims)
{
    char list[512];
    dims_list(list, sizeof list, dims, o->d->spec.rank);
    ndg_buf_printf(o->b, "static inline int64_t %s%s_%d(const nda_tensor *t, int i)\n{\n"
                         "    static const int64_t v[] = {%s};\n    (void)t;\n    return v[i];\n}\n", o->P, name, o->k, list);
}

static void helper_dim(const operand_ctx *o) { helper_dims(o, "dim", o->d->spec.shape); }
static void helper_page_dim(const operand_ctx *o) { helper_dims(o, "page_dim", o->d->spec.page); }

/* Element addresses with the page and in-page arithmetic folded. */
static void helper_elem_read(const operand_ctx *o)
{
    const nd_dist_spec *s = &o->d->spec;
    const nd_layout *full = &o->d->layout;
    int r = s->rank;
    ex pid = ex_k(0), in = ex_k(0);
    int64_t pe = 1;
    for (int i = r - 1; i >= 0; --i) { /* in-page strides run from the last dim */
        char c[32];
        snprintf(c, sizeof c, "coord[%d]", i);
        if (full->pages[i] > 1)
            pid = ex_add(ex_op(ex_op(ex_name(c), '/', s->page[i]), '*', full->page_stride[i]), pid);
        if (s->page[i] > 1)
            in = ex_add(ex_op(ex_op(ex_name(c), '%', s->page[i]), '*', pe), in);
        pe *= s->page[i];
    }
    long long pw = s->page[r - 1], W = s->shape[r - 1];
    char last[32];
    snprintf(last, sizeof last, "coord[%d]", r - 1);
    ex to_page_end = pw == 1 ? ex_k(1) : ex_name(""); /* pw - coord % pw */
    if (pw != 1)
        ex_fmt(to_page_end.s, sizeof to_page_end.s, "%lld - %s", pw, ex_op(ex_name(last), '%', pw).s);
    ndg_buf_printf(o->b,
        "static inline const void *%selem_read_%d(const nda_core *core, const nda_tensor *t, const int64_t *coord, int64_t *run)\n{\n"
        "    const int64_t to_page_end = %s, to_edge = %lld - %s;\n"
        "    *run = to_page_end < to_edge ? to_page_end : to_edge;\n"
        "    const uint8_t *p = (const uint8_t *)%spage_read_%d(core, t, %s);\n",
        o->P, o->k, to_page_end.s, W, last, o->P, o->k, pid.s);
    ex off = ex_op(in, '*', o->d->elem_bytes);
    if (ex_is(&off, 0))
        ndg_buf_printf(o->b, "    return p;\n}\n");
    else
        ndg_buf_printf(o->b, "    return p + %s;\n}\n", off.s);
}

/* Copies and partial sums: constants of the target; only the core's own copy is looked up. */
static void helper_parts(const operand_ctx *o)
{
    ndg_buf_printf(o->b, "static inline int64_t %sparts_%d(const nda_tensor *t)\n{\n    (void)t;\n    return %d;\n}\n",
                   o->P, o->k, (int)o->d->spec.parts);
}

static void helper_part(const operand_ctx *o)
{
    const nd_dist_spec *s = &o->d->spec;
    ex q = s->parts > 1 ? ex_op(ex_name("t->replica"), '/', s->replicas / s->parts) : ex_k(0);
    ndg_buf_printf(o->b, "static inline int64_t %spart_%d(const nda_core *core, const nda_tensor *t)\n{\n"
                         "    (void)core;\n    (void)t;\n    return %s;\n}\n", o->P, o->k, q.s);
}

static void helper_part_range(const operand_ctx *o)
{
    int parts = (int)o->d->spec.parts;
    ex c = ex_op(ex_add(ex_name("n"), ex_k(parts - 1)), '/', parts);
    ndg_buf_printf(o->b,
        "static inline void %spart_range_%d(const nda_core *core, const nda_tensor *t, int64_t n, int64_t *lo, int64_t *hi)\n{\n"
        "    const int64_t c = %s, q = %spart_%d(core, t);\n"
        "    *lo = q * c < n ? q * c : n;\n    *hi = *lo + c < n ? *lo + c : n;\n}\n",
        o->P, o->k, c.s, o->P, o->k);
}

static void helper_part_reduce(const operand_ctx *o)
{
    ndg_buf_printf(o->b, "static inline int %spart_reduce_%d(const nda_tensor *t)\n{\n    (void)t;\n    return %d; /* %s */\n}\n",
                   o->P, o->k, (int)o->d->spec.reduce, nd_reduce_name(o->d->spec.reduce));
}

/* Part q's page from the copy of part q in the same position as this core's own. */
static void helper_part_page_read(const operand_ctx *o)
{
    const nd_dist_spec *s = &o->d->spec;
    long long pb = o->d->page_bytes, per = s->replicas / s->parts;
    ex copy = ex_add(ex_op(ex_name("part"), '*', per), ex_op(ex_name("t->replica"), '%', per));
    ex n = ncores_ex(&o->d->layout, o->free, "t->layout"); /* a copy's cores: the same in full rank and squeezed */
    ndg_buf_printf(o->b,
        "static inline const void *%spart_page_read_%d(const nda_core *core, const nda_tensor *t, int64_t part, int64_t page)\n{\n"
        "    const int64_t copy = %s;\n"
        "    const nd_loc l = %slocate_%d(t, page);\n"
        "    const bool local = copy == t->replica && l.core == t->index_of[core->id];\n"
        "    ndstat_reads(core, local, !local, %lld);\n"
        "    return t->all_base[%s] + %s;\n}\n",
        o->P, o->k, copy.s, o->P, o->k, pb, ex_add(ex_by(ex_name("copy"), '*', n), ex_name("l.core")).s,
        ex_op(ex_name("l.offset"), '*', pb).s);
}

/* Helpers in emission order: each after those it calls. NDG_LOCATE's helper serves nda_locate too. */
static const struct {
    ndg_call_kind kind;
    void (*emit)(const operand_ctx *);
    unsigned needs; /* bits of the kinds whose helpers it calls */
} helpers[] = {
    {NDG_LOCATE, helper_locate, 0},
    {NDG_SELF, helper_self, 0},
    {NDG_PAGE_ADDR, helper_page_addr, 1u << NDG_LOCATE},
    {NDG_IS_LOCAL, helper_is_local, 1u << NDG_LOCATE},
    {NDG_PAGE_COORD, helper_page_coord, 0},
    {NDG_PAGE_ID, helper_page_id, 0},
    {NDG_PAGE_READ, helper_page_read, 1u << NDG_LOCATE},
    {NDG_PAGE_WRITE, helper_page_write, 1u << NDG_LOCATE},
    {NDG_SHARD_COUNT, helper_shard_count, 0},
    {NDG_SHARD_ID, helper_shard_id, 0},
    {NDG_PAGE_BYTES, helper_page_bytes, 0},
    {NDG_RANK, helper_rank, 0},
    {NDG_DIM, helper_dim, 0},
    {NDG_PAGE_DIM, helper_page_dim, 0},
    {NDG_ELEM_READ, helper_elem_read, (1u << NDG_PAGE_READ) | (1u << NDG_LOCATE)},
    {NDG_PARTS, helper_parts, 0},
    {NDG_PART, helper_part, 0},
    {NDG_PART_RANGE, helper_part_range, 1u << NDG_PART},
    {NDG_PART_PAGE_READ, helper_part_page_read, 1u << NDG_LOCATE},
    {NDG_PART_REDUCE, helper_part_reduce, 0},
};

/* Every kind has a helper but those rewritten in place: nda_same_paging (a constant), the iterator's
 * nda_iter_page and nda_iter_ptr (the loop nest's variables) and nda_scalar (an index or a constant). */
_Static_assert(sizeof helpers / sizeof *helpers == NDG_CALL_KINDS - 4, "a call kind of calls.def has no helper");

/* Emits the helpers in `need` (bits of ndg_call_kind) and those they call. */
static void emit_operand_helpers(ndg_buf *b, const char *P, int k, const ndg_operand *op, const nd_dist *d,
                                 unsigned need, unsigned free)
{
    const size_t n = sizeof helpers / sizeof *helpers;
    for (size_t i = n; i-- > 0;) { /* callers come later in the table: close over their needs backwards */
        int rt = rt_helper(free, helpers[i].kind);
        if (need & (1u << helpers[i].kind))
            need |= rt < 0 ? helpers[i].needs : rt_helpers[rt].needs;
    }
    if (!need)
        return;
    char sig[ND_SIGNATURE_LEN];
    nd_dist_signature(d, sig, sizeof sig);
    const nd_layout *l = &d->squeezed;
    if (free)
        ndg_buf_printf(b, "\n/* operand %d '%s': the pattern of %s (the shape%s at run time)\n * placement: shards of "
                          "%lld pages, at full rank %d */\n", k, op->name, sig, free & NDA_FREE_GRID ? " and the cores" : "",
                       (long long)l->shard_pages, d->layout.rank);
    else
        ndg_buf_printf(b, "\n/* operand %d '%s': %s\n * placement: %lld pages in %lld shards of %lld pages on %lld cores, squeezed to rank %d */\n",
                       k, op->name, sig, (long long)l->num_pages, (long long)l->num_shards, (long long)l->shard_pages,
                       (long long)l->ncores, l->rank);
    operand_ctx o = {b, P, k, d, l, free};
    for (size_t i = 0; i < n; ++i) {
        int rt = rt_helper(free, helpers[i].kind);
        if (need & (1u << helpers[i].kind))
            (rt < 0 ? helpers[i].emit : rt_helpers[rt].emit)(&o);
    }
}

/* ---------------------------------------------------------------- loops */

typedef struct loop_ptr {
    int operand;
    int64_t pb;
    const char *tensor; /* expression naming the tensor */
    bool read, write;
} loop_ptr;

typedef struct loop_plan {
    int idx;
    const char *prefix; /* the variant's */
    unsigned free;      /* the variant's free parameters (NDA_FREE_*): 0 for an exact target */
    const ndg_loop *loop;
    const nd_layout *l; /* the squeezed layout; at full rank when free (the squeezed rank depends on the shape) */
    bool page_used;
    int nptrs;
    loop_ptr ptrs[NDG_MAX_OPERANDS]; /* [0] is the iterated operand when its pointer is used */
} loop_plan;

/* The parameters a variant reads at run time: NDA_FREE_* bits, 0 for an exact target (and generic). */
static unsigned free_of(const ndg_variant *v) { return v->target ? ndreg_fixed_free(v->target->fixed) : 0u; }

/* Operand k's free parameters' text in target t (ndreg_split_signature's var). */
static void free_text(const ndg_target *t, int k, char *out, size_t len)
{
    char sig[ND_SIGNATURE_LEN];
    nd_dist_signature(&t->dist[k], sig, sizeof sig);
    ndreg_split_signature(sig, ndreg_fixed_free(t->fixed), NULL, 0, out, len);
}

int ndg_class(const ndg_target *t, int k)
{
    char a[ND_SIGNATURE_LEN], b[ND_SIGNATURE_LEN];
    free_text(t, k, b, sizeof b);
    for (int j = 0; j < k; ++j) {
        free_text(t, j, a, sizeof a);
        if (strcmp(a, b) == 0)
            return j;
    }
    return k;
}

/* For a partial target: whether operands a and b stay placed alike at every launch the kernel serves.
 * The runtime keeps their free parameters (shape, and core list when free) equal when they are equal
 * in the target (ndg_class), and their page boxes and shard shapes are fixed: with both equal, the
 * placement is a function of the core list, strategy, memory and copies, which nd_dist_same_placement
 * compared. */
static bool same_at_any_shape(const ndg_target *t, int a, int b)
{
    const nd_dist_spec *x = &t->dist[a].spec, *y = &t->dist[b].spec;
    return ndg_class(t, a) == ndg_class(t, b) && x->rank == y->rank &&
           memcmp(x->page, y->page, (size_t)x->rank * sizeof *x->page) == 0 &&
           memcmp(x->shard, y->shard, (size_t)x->rank * sizeof *x->shard) == 0;
}

/* nda_same_paging of a call as the kernel knows it: 1 or 0, or -1 when only the launch can tell (a
 * partial target whose operands' page boxes agree but whose shapes may differ): a run-time helper.
 * Operands of one class (ndg_class) have one shape at launch. */
static int same_paging_known(const ndg_variant *v, const ndg_call *c)
{
    const nd_dist *a = &v->target->dist[c->operand], *b = &v->target->dist[c->operand2];
    if (!free_of(v))
        return nd_dist_same_paging(a, b);
    if (a->spec.rank != b->spec.rank ||
        memcmp(a->spec.page, b->spec.page, (size_t)a->spec.rank * sizeof *a->spec.page) != 0)
        return 0; /* the page boxes are fixed: they differ at every launch */
    return ndg_class(v->target, c->operand) == ndg_class(v->target, c->operand2) ? 1 : -1;
}

/* A read or write of the loop's current page of an operand placed exactly like the iterated one, by the
 * loop's own core variable: the loop counts its traffic on that core when it ends. */
static bool known_local(const ndg_template *t, const ndg_variant *v, const ndg_call *c)
{
    if (!v->target || c->loop < 0 || (c->kind != NDG_PAGE_READ && c->kind != NDG_PAGE_WRITE))
        return false;
    const ndg_loop *L = &t->loops[c->loop];
    const nd_dist *x = &v->target->dist[L->operand], *y = &v->target->dist[c->operand];
    return x->spec.buffer == ND_L1 && nd_dist_same_placement(x, y) && c->tensor_decl < L->start &&
           c->core_decl == L->core_decl && (!free_of(v) || same_at_any_shape(v->target, L->operand, c->operand));
}

static bool inside_known_local(const ndg_template *t, const ndg_variant *v, const ndg_call *c)
{
    for (int i = 0; i < t->ncalls; ++i)
        if (&t->calls[i] != c && known_local(t, v, &t->calls[i]) && t->calls[i].start <= c->start &&
            c->end <= t->calls[i].end)
            return true;
    return false;
}

static int plan_ptr(loop_plan *p, int operand, const char *tensor, int64_t pb)
{
    for (int i = 0; i < p->nptrs; ++i)
        if (p->ptrs[i].operand == operand)
            return i;
    p->ptrs[p->nptrs] = (loop_ptr){operand, pb, tensor, false, false};
    return p->nptrs++;
}

static loop_plan plan_loop(const ndg_template *t, const ndg_variant *v, int idx)
{
    loop_plan p = {.idx = idx, .prefix = v->prefix, .free = free_of(v), .loop = &t->loops[idx]};
    const nd_dist *x = &v->target->dist[p.loop->operand];
    p.l = p.free ? &x->layout : &x->squeezed;
    for (int i = 0; i < t->ncalls; ++i) {
        const ndg_call *c = &t->calls[i];
        if (c->loop != idx)
            continue;
        if (c->kind == NDG_ITER_PTR)
            plan_ptr(&p, p.loop->operand, p.loop->tensor_expr, x->page_bytes);
        if (c->kind == NDG_ITER_PAGE && !inside_known_local(t, v, c))
            p.page_used = true;
        if (known_local(t, v, c)) {
            int k = plan_ptr(&p, c->operand, c->tensor_expr, v->target->dist[c->operand].page_bytes);
            p.ptrs[k].read |= c->kind == NDG_PAGE_READ;
            p.ptrs[k].write |= c->kind == NDG_PAGE_WRITE;
        }
    }
    return p;
}

/*
 * The loop nest of one nda_iter loop, planned before it is printed: every extent, origin and pointer
 * as a folded expression, so a dim of one page has no loop, a core with one shard slot has an `if`
 * instead of a loop over slots, and the innermost loop disappears when it runs once (unless the body
 * says `continue`, which needs it).
 *
 * One printer for both kinds of target. An exact target's layout fields are literals; a pattern target
 * (the shape at run time: p->free set) reads the tensor pages, the shard grid, their strides, the shard
 * count and shards per core from the run-time layout L (and the core count, when the grid is free too),
 * at full rank, while shard extents, in-shard strides, shard pages and page bytes stay literals (every
 * fixed set fixes the shard). layout_field picks which, and the folded expressions do the rest: a field
 * that is a literal folds as before, one read at run time is printed.
 */
typedef struct nest {
    char self[64], nslots[64], slot[64], shard[64], L[64];
    ex nslots_ex;                 /* shard slots of a core holding any */
    bool one_slot;                /* nslots is the constant 1: an if, not a loop */
    ex shard_ex, q[ND_MAX_RANK], extent[ND_MAX_RANK];
    bool need_q[ND_MAX_RANK];
    int nrows;                    /* row loops: dims before the last whose extent is not 1 */
    bool inner_loop;              /* the last dim's loop is printed */
} nest;

/* Layout field `name` of the nest's operand (see layout_field). */
static ex nest_field(const loop_plan *p, const nest *m, const char *name, int i, int64_t value)
{
    return layout_field(p->free, m->L, name, i, value);
}

/* The extent of dim i in the shard at grid coordinate q: the shard's S pages, fewer at the last shard
 * along the dim when S does not divide its T pages; constant where it cannot vary. */
static ex nest_extent(const loop_plan *p, int i, char *name, size_t len)
{
    const nd_layout *l = p->l;
    long long g = l->grid[i], S = l->shard[i], T = l->pages[i];
    if (S == 1)
        return ex_k(1);
    if (!p->free && (g == 1 || T % S == 0))
        return ex_k(g == 1 ? T : S);
    snprintf(name, len, "%se%d_%d", p->prefix, p->idx, i);
    return ex_name(name);
}

static void plan_nest(const loop_plan *p, nest *m)
{
    const nd_layout *l = p->l;
    const char *P = p->prefix;
    int n = p->idx, R = l->rank;
    memset(m, 0, sizeof *m);
    snprintf(m->self, sizeof m->self, "%sself%d", P, n);
    snprintf(m->nslots, sizeof m->nslots, "%snslots%d", P, n);
    snprintf(m->shard, sizeof m->shard, "%sshard%d", P, n);
    snprintf(m->L, sizeof m->L, "%sL%d", P, n);
    m->nslots_ex = nslots_of(l, p->free, m->self, m->L);
    m->one_slot = ex_is(&m->nslots_ex, 1);
    ex slot = ex_k(0);
    if (!m->one_slot) {
        snprintf(m->slot, sizeof m->slot, "%sslot%d", P, n);
        slot = ex_name(m->slot);
    }
    const ex self = ex_name(m->self);
    m->shard_ex = shard_of(l, p->free, m->L, self, slot);
    ex shard = m->shard_ex.prec ? ex_name(m->shard) : m->shard_ex;
    /* a shard-grid coordinate is needed for the page origin, or for an extent that varies */
    for (int i = 0; i < R; ++i) {
        char e[64];
        m->extent[i] = nest_extent(p, i, e, sizeof e);
        m->need_q[i] = (p->free || l->grid[i] > 1) && (p->page_used || !m->extent[i].is_const);
        if (m->need_q[i]) {
            ex q = ex_by(shard, '/', nest_field(p, m, "grid_stride", i, l->grid_stride[i]));
            m->q[i] = i == 0 ? q : ex_by(q, '%', nest_field(p, m, "grid", i, l->grid[i]));
        }
        if (i + 1 < R && !ex_is(&m->extent[i], 1))
            ++m->nrows;
    }
    m->inner_loop = !ex_is(&m->extent[R - 1], 1) || p->loop->continues;
}

/* The declaration of a varying extent: its shard's pages along dim i, from coordinate q. */
static void print_extent(ndg_buf *b, const char *in, const loop_plan *p, const nest *m, int i, const ex *q)
{
    const nd_layout *l = p->l;
    long long g = l->grid[i], S = l->shard[i], T = l->pages[i];
    if (!p->free) {
        ndg_buf_printf(b, "%sconst int64_t %s = %s == %lld ? %lld : %lld;\n", in, m->extent[i].s, q->s, g - 1,
                       T - (g - 1) * S, S);
        return;
    }
    ex left = nest_field(p, m, "pages", i, T); /* pages from the shard's first to the tensor's edge */
    ndg_buf_printf(b, "%sconst int64_t %s = %s - %s < %lld ? %s - %s : %lld;\n", in, m->extent[i].s, left.s,
                   ex_op(*q, '*', S).s, S, left.s, ex_op(*q, '*', S).s, S);
}

static void loop_open(ndg_buf *b, const loop_plan *p, const nest *m, const char *ind)
{
    const nd_layout *l = p->l;
    const ndg_loop *L = p->loop;
    const char *P = p->prefix;
    int n = p->idx, R = l->rank;
    char in1[80], in2[80];
    snprintf(in1, sizeof in1, "%s    ", ind);
    snprintf(in2, sizeof in2, "%s        ", ind);
    if (p->free)
        ndg_buf_printf(b, "{ /* ndgen: the pages of operand %d this core holds: shards of %lld pages on %s cores, %s; "
                          "the shape at run time */\n", L->operand, (long long)l->shard_pages,
                       p->free & NDA_FREE_GRID ? "the run-time" : ex_k(l->ncores).s, nd_strategy_name(l->strategy));
    else
        ndg_buf_printf(b, "{ /* ndgen: the pages of operand %d this core holds: %lld shards of %lld pages on %lld cores, "
                          "%s */\n", L->operand, (long long)l->num_shards, (long long)l->shard_pages,
                       (long long)l->ncores, nd_strategy_name(l->strategy));
    ndg_buf_printf(b, "%sconst int64_t %s = (%s)->owner_of[(%s)->id];\n", in1, m->self, L->tensor_expr, L->core_expr);
    if (p->free)
        ndg_buf_printf(b, "%sconst nd_layout *const %s = &(%s)->dist->layout;\n", in1, m->L, L->tensor_expr);
    for (int i = 0; i < p->nptrs; ++i) {
        const loop_ptr *q = &p->ptrs[i];
        if (!m->one_slot)
            ndg_buf_printf(b, "%suint8_t *const %sbase%d_%d = %s < 0 ? NULL : (%s)->base[%s];\n", in1, P, n,
                           q->operand, m->self, q->tensor, m->self);
        if (q->read)
            ndg_buf_printf(b, "%sint64_t %sreads%d_%d = 0;\n", in1, P, n, q->operand);
        if (q->write)
            ndg_buf_printf(b, "%sint64_t %swrites%d_%d = 0;\n", in1, P, n, q->operand);
    }
    if (m->one_slot) {
        ndg_buf_printf(b, "%sif (%s >= 0) { /* one shard slot */\n", in1, m->self);
    } else {
        ndg_buf_printf(b, "%sconst int64_t %s = %s < 0 ? 0 : %s;\n", in1, m->nslots, m->self, m->nslots_ex.s);
        ndg_buf_printf(b, "%sfor (int64_t %s = 0; %s < %s; ++%s) {\n", in1, m->slot, m->slot, m->nslots, m->slot);
    }
    bool any_q = false;
    for (int i = 0; i < R; ++i)
        any_q |= m->need_q[i];
    if (any_q && m->shard_ex.prec)
        ndg_buf_printf(b, "%sconst int64_t %s = %s;\n", in2, m->shard, m->shard_ex.s);
    ex q[ND_MAX_RANK];
    for (int i = 0; i < R; ++i) {
        q[i] = m->q[i];
        if (m->need_q[i] && q[i].prec) {
            char name[64];
            snprintf(name, sizeof name, "%sq%d_%d", P, n, i);
            ndg_buf_printf(b, "%sconst int64_t %s = %s;\n", in2, name, q[i].s);
            q[i] = ex_name(name);
        }
        if (!m->extent[i].is_const)
            print_extent(b, in2, p, m, i, &q[i]);
    }
    ex origin = ex_k(0); /* again, from the named coordinates */
    for (int i = 0; i < R; ++i) {
        ex stride = nest_field(p, m, "page_stride", i, l->page_stride[i]); /* the shard's first page, q * S away */
        if (m->need_q[i] && p->page_used)
            origin = ex_add(origin, stride.is_const ? ex_op(q[i], '*', l->shard[i] * stride.k)
                                                    : ex_by(ex_op(q[i], '*', l->shard[i]), '*', stride));
    }
    if (p->page_used && origin.prec && m->nrows) {
        char name[64];
        snprintf(name, sizeof name, "%sorigin%d", P, n);
        ndg_buf_printf(b, "%sconst int64_t %s = %s;\n", in2, name, origin.s);
        origin = ex_name(name);
    }
    ex slot = m->one_slot ? ex_k(0) : ex_name(m->slot);
    for (int i = 0; i < p->nptrs && m->nrows; ++i) { /* without row loops the pointers start here */
        const loop_ptr *q2 = &p->ptrs[i];
        if (m->one_slot)
            ndg_buf_printf(b, "%suint8_t *const %sshardp%d_%d = (%s)->base[%s];\n", in2, P, n, q2->operand, q2->tensor,
                           m->self);
        else
            ndg_buf_printf(b, "%suint8_t *const %sshardp%d_%d = %sbase%d_%d + %s;\n", in2, P, n, q2->operand, P, n,
                           q2->operand, ex_op(slot, '*', l->shard_pages * q2->pb).s);
    }
    /* rows: every dim but the last; each row starts from the coordinates of the outer loops */
    char pad[128]; /* ind (under 64), 8 spaces, and 4 per outer loop up to rank 8 */
    snprintf(pad, sizeof pad, "%s", in2);
    ex row_page = ex_k(0), row_off = ex_k(0);
    for (int i = 0; i + 1 < R; ++i) {
        if (ex_is(&m->extent[i], 1))
            continue; /* one row in this dim: its coordinate is 0 */
        char c[64];
        snprintf(c, sizeof c, "%sc%d_%d", P, n, i);
        ndg_buf_printf(b, "%sfor (int64_t %s = 0; %s < %s; ++%s) {\n", pad, c, c, m->extent[i].s, c);
        strncat(pad, "    ", sizeof pad - strlen(pad) - 1);
        row_page = ex_add(row_page, ex_by(ex_name(c), '*', nest_field(p, m, "page_stride", i, l->page_stride[i])));
        row_off = ex_add(row_off, ex_op(ex_name(c), '*', l->shard_stride[i]));
    }
    if (p->page_used)
        ndg_buf_printf(b, "%sint64_t %spage%d = %s;\n", pad, P, n, ex_add(origin, row_page).s);
    for (int i = 0; i < p->nptrs; ++i) {
        const loop_ptr *q2 = &p->ptrs[i];
        ex off = ex_op(row_off, '*', q2->pb);
        if (m->nrows)
            ndg_buf_printf(b, "%suint8_t *%sptr%d_%d = %sshardp%d_%d + %s;\n", pad, P, n, q2->operand, P, n,
                           q2->operand, off.s);
        else if (m->one_slot)
            ndg_buf_printf(b, "%suint8_t *%sptr%d_%d = (%s)->base[%s];\n", pad, P, n, q2->operand, q2->tensor, m->self);
        else
            ndg_buf_printf(b, "%suint8_t *%sptr%d_%d = %sbase%d_%d + %s;\n", pad, P, n, q2->operand, P, n, q2->operand,
                           ex_op(slot, '*', l->shard_pages * q2->pb).s);
    }
    if (!m->inner_loop) {
        ndg_buf_printf(b, "%s{ /* one page: no loop */", pad);
        return;
    }
    char c[64];
    snprintf(c, sizeof c, "%sc%d_%d", P, n, R - 1);
    ndg_buf_printf(b, "%sfor (int64_t %s = 0; %s < %s; ++%s", pad, c, c, m->extent[R - 1].s, c);
    if (p->page_used)
        ndg_buf_printf(b, ", ++%spage%d", P, n);
    for (int i = 0; i < p->nptrs; ++i)
        ndg_buf_printf(b, ", %sptr%d_%d += %lld", P, n, p->ptrs[i].operand, (long long)p->ptrs[i].pb);
    ndg_buf_printf(b, ") {");
}

/* After the body's closing brace: the row loops and the slot loop close, then the loop's known-local
 * traffic is counted once, with the accessor's own ndstat_* functions. */
static void loop_close(ndg_buf *b, const char *P, const loop_plan *p, const nest *m, const char *ind)
{
    for (int j = m->nrows; j-- > 0;)
        ndg_buf_printf(b, "\n%s        %*s}", ind, 4 * j, "");
    ndg_buf_printf(b, "\n%s    }", ind);
    const char *core = p->loop->core_expr;
    for (int i = 0; i < p->nptrs; ++i) {
        const loop_ptr *q = &p->ptrs[i];
        if (q->read)
            ndg_buf_printf(b, "\n%s    ndstat_reads(%s, %sreads%d_%d, 0, %lld);", ind, core, P, p->idx, q->operand,
                           (long long)q->pb);
        if (q->write)
            ndg_buf_printf(b, "\n%s    ndstat_writes(%s, %swrites%d_%d, 0);", ind, core, P, p->idx, q->operand);
    }
    ndg_buf_printf(b, "\n%s}", ind);
}

/* The index of a macro the template or its headers define that the text names, or -1: generated code
 * must mean what it says, so no macro of theirs may stand for one of its identifiers. Comments and
 * strings skipped. */
static int macro_named(const ndg_template *t, const char *text, size_t len)
{
    for (size_t i = 0; i < len; ++i) {
        char c = text[i];
        if (c == '"') {
            for (++i; i < len && text[i] != '"'; ++i)
                i += text[i] == '\\';
        } else if (c == '/' && i + 1 < len && text[i + 1] == '*') {
            for (i += 2; i + 1 < len && !(text[i] == '*' && text[i + 1] == '/'); ++i)
                ;
        } else if (isalpha((unsigned char)c) || c == '_') {
            size_t j = i;
            while (j < len && (isalnum((unsigned char)text[j]) || text[j] == '_'))
                ++j;
            for (int m = 0; m < t->nmacros; ++m)
                if (strlen(t->macros[m]) == j - i && strncmp(t->macros[m], text + i, j - i) == 0)
                    return m;
            i = j - 1;
        } else if (isdigit((unsigned char)c)) {
            while (i + 1 < len && (isalnum((unsigned char)text[i + 1]) || text[i + 1] == '_'))
                ++i;
        }
    }
    return -1;
}

/* ---------------------------------------------------------------- edits */

typedef struct edit {
    unsigned start, end;
    ndg_buf text;
} edit;

static int edit_cmp(const void *a, const void *b)
{
    const edit *x = a, *y = b;
    return x->start != y->start ? (x->start < y->start ? -1 : 1) : (x->end > y->end) - (x->end < y->end);
}

/* Indentation of the line holding offset at. */
static void indent_at(const ndg_template *t, unsigned at, char *out, size_t len)
{
    unsigned s = at;
    while (s > 0 && t->text[s - 1] != '\n')
        --s;
    size_t n = 0;
    while (s + n < at && (t->text[s + n] == ' ' || t->text[s + n] == '\t') && n + 1 < len) {
        out[n] = t->text[s + n];
        ++n;
    }
    out[n] = '\0';
}

/* ---------------------------------------------------------------- launch scalars */

/* The declared scalar a nda_scalar call names, or -1 (ndg_rewrite refuses the variant then). */
static int scalar_index(const ndg_op *op, const char *name)
{
    for (int i = 0; i < op->decl.n; ++i)
        if (strcmp(op->decl.d[i].name, name) == 0)
            return i;
    return -1;
}

/* Whether the target fixed every launch scalar, the list's too: then the kernel reads none from args. */
static bool all_scalars_fixed(const ndg_variant *v)
{
    const ndg_target *t = v->target;
    int list = nd_scalars_list(&v->op->decl), named = list < 0 ? v->op->decl.n : list;
    if (!t || !t->nscalars || (list >= 0 && t->nscalars <= named))
        return false;
    for (int i = 0; i < named; ++i)
        if (isnan(t->scalars[i]))
            return false;
    return true;
}

/* A double literal that reads back as x, sign and all: "1e-05", "2.0", "(-0.5)", "(-0.0)". */
static void double_literal(ndg_buf *b, double x)
{
    char text[40];
    snprintf(text, sizeof text, "%.17g", x);
    for (int digits = 15; digits < 17; ++digits) {
        char shorter[40];
        snprintf(shorter, sizeof shorter, "%.*g", digits, x);
        if (strtod(shorter, NULL) == x) {
            memcpy(text, shorter, sizeof text);
            break;
        }
    }
    bool minus = signbit(x); /* -0.0 too: its sign is part of the value */
    ndg_buf_printf(b, "%s%s%s%s", minus ? "(" : "", text, strpbrk(text, ".e") ? "" : ".0", minus ? ")" : "");
}

/* nda_scalar(args, "name"): the constant the target fixed, else args->scalars[i] with i known. */
static void scalar_edit(const ndg_variant *v, const ndg_call *c, edit *e)
{
    int i = scalar_index(v->op, c->scalar);
    const ndg_target *t = v->target;
    assert(i >= 0); /* ndg_rewrite checked every name */
    if (i < t->nscalars && !isnan(t->scalars[i]))
        double_literal(&e->text, t->scalars[i]);
    else
        ndg_buf_printf(&e->text, "%s->scalars[%d]", c->tensor_expr, i);
}

/* The fixed launch scalars as a constant array the kernel reads for args->scalars. */
static void emit_fixed_scalars(ndg_buf *out, const ndg_variant *v)
{
    ndg_buf_printf(out, "/* the launch scalars its target fixed: args->scalars and args->nscalars read these */\n"
                        "static const double %sscalars[%d] = {", v->prefix, v->target->nscalars);
    for (int i = 0; i < v->target->nscalars; ++i) {
        ndg_buf_printf(out, "%s", i ? ", " : "");
        double_literal(out, v->target->scalars[i]);
    }
    ndg_buf_printf(out, "};\n");
}

/* args->scalars and args->nscalars, when the target fixed them all. */
static void scalar_ref_edit(const ndg_variant *v, const ndg_scalar_ref *r, edit *e)
{
    memset(e, 0, sizeof *e);
    e->start = r->start;
    e->end = r->end;
    if (r->count)
        ndg_buf_printf(&e->text, "%d", v->target->nscalars);
    else
        ndg_buf_printf(&e->text, "%sscalars", v->prefix);
}

/* A name no declared scalar has, or a list read as one value: at the call, in the template. */
static int check_scalar_names(const ndg_template *t, const ndg_op *op, nd_error *err)
{
    for (int i = 0; i < t->ncalls; ++i) {
        const ndg_call *c = &t->calls[i];
        if (c->kind != NDG_SCALAR)
            continue;
        int k = scalar_index(op, c->scalar);
        if (k < 0)
            return nd_fail(err, "%s:%d:%d: nda_scalar: op '%s' declares no scalar '%s' (it declares: %s)", t->path,
                           c->line, c->col, op->name, c->scalar, op->scalars ? op->scalars : "none");
        if (op->decl.d[k].type == ND_SCALAR_AXES || op->decl.d[k].type == ND_SCALAR_PERM)
            return nd_fail(err, "%s:%d:%d: nda_scalar: '%s' of op '%s' is a list; read it as args->scalars[k] for k "
                                "from %d to args->nscalars", t->path, c->line, c->col, c->scalar, op->name, k);
    }
    return 0;
}

static void call_edit(const ndg_template *t, const ndg_variant *v, const ndg_call *c, edit *e)
{
    const char *P = v->prefix;
    memset(e, 0, sizeof *e);
    e->start = c->start;
    if (c->kind == NDG_SCALAR) {
        e->end = c->end;
        scalar_edit(v, c, e);
    } else if (c->kind == NDG_ITER_PAGE || c->kind == NDG_ITER_PTR) {
        e->end = c->end;
        if (c->kind == NDG_ITER_PAGE)
            ndg_buf_printf(&e->text, "%spage%d", P, c->loop);
        else
            ndg_buf_printf(&e->text, "%sptr%d_%d", P, c->loop, t->loops[c->loop].operand);
    } else if (c->kind == NDG_SAME_PAGING && same_paging_known(v, c) < 0) {
        e->end = c->name_end; /* same arguments, a helper comparing the shapes */
        ndg_buf_printf(&e->text, "%ssame_paging_%d_%d", P, c->operand, c->operand2);
    } else if (c->kind == NDG_SAME_PAGING) {
        e->end = c->end;
        ndg_buf_printf(&e->text, "%s", same_paging_known(v, c) ? "true" : "false");
    } else if (known_local(t, v, c)) {
        e->end = c->end;
        bool rd = c->kind == NDG_PAGE_READ;
        ndg_buf_printf(&e->text, "(++%s%s%d_%d, (%svoid *)%sptr%d_%d)", P, rd ? "reads" : "writes", c->loop,
                       c->operand, rd ? "const " : "", P, c->loop, c->operand);
    } else { /* same arguments, specialized function */
        e->end = c->name_end;
        ndg_buf_printf(&e->text, "%s%s_%d", P, ndg_call_names[c->kind] + 4, c->operand);
    }
}

/* A file-scope name gets the variant's prefix; the kernel's name becomes its symbol. */
static void rename_edit(const ndg_template *t, const ndg_variant *v, const ndg_rename *r, edit *e)
{
    memset(e, 0, sizeof *e);
    e->start = r->at;
    e->end = r->at + r->len;
    if (r->kernel)
        ndg_buf_printf(&e->text, "%s", v->symbol);
    else
        ndg_buf_printf(&e->text, "%su_%.*s", v->prefix, (int)r->len, t->text + r->at);
}

/* Whether template text [from, to) holds a preprocessor line: cutting it out could unbalance #if. */
static bool has_directive(const ndg_template *t, unsigned from, unsigned to)
{
    bool line_start = true;
    for (unsigned i = from; i < to; ++i) {
        char ch = t->text[i];
        if (ch == '#' && line_start)
            return true;
        line_start = ch == '\n' || (line_start && (ch == ' ' || ch == '\t'));
    }
    return false;
}

/* [from, to) widened to whole lines when only blanks stand beside it on its first and last line. */
static void whole_lines(const ndg_template *t, unsigned *from, unsigned *to)
{
    unsigned a = *from, b = *to;
    while (a > 0 && (t->text[a - 1] == ' ' || t->text[a - 1] == '\t'))
        --a;
    while (b < t->len && (t->text[b] == ' ' || t->text[b] == '\t'))
        ++b;
    if ((a == 0 || t->text[a - 1] == '\n') && b < t->len && t->text[b] == '\n') {
        *from = a;
        *to = b + 1;
    }
}

static void cut(edit *e, unsigned from, unsigned to)
{
    memset(e, 0, sizeof *e);
    e->start = from;
    e->end = to;
}

/* The edits that keep only the path a known nda_same_paging condition takes: up to two cuts, or 0 when
 * the statement is not to be folded (the call is then replaced by its value). */
static int fold_edits(const ndg_template *t, const ndg_variant *v, const ndg_call *c, edit *e)
{
    const ndg_branch *b = &c->branch;
    if (!b->fold || same_paging_known(v, c) < 0)
        return 0;
    bool same = same_paging_known(v, c) == 1;
    bool has_else = b->else_end > 0, tail = !has_else && b->then_returns && b->tail_end > b->then_end;
    unsigned a1 = b->if_start, z1, a2 = b->then_end, z2 = 0;
    if (same) {
        z1 = b->then_start;                            /* "if (...) " */
        z2 = has_else ? b->else_end : tail ? b->tail_end : 0; /* " else ...", or the dead rest of the block */
        while (tail && z2 > a2 && t->text[z2 - 1] != '\n') /* keep the line of the block's closing brace */
            --z2;
    } else {
        z1 = has_else ? b->else_start : b->then_end;   /* "if (...) ... else ", or the whole statement */
        if (!has_else)
            whole_lines(t, &a1, &z1);
    }
    if (has_directive(t, a1, z1) || (z2 > a2 && has_directive(t, a2, z2)))
        return 0;
    cut(&e[0], a1, z1);
    if (z2 <= a2)
        return 1;
    cut(&e[1], a2, z2);
    return 2;
}

static int collect_edits(const ndg_template *t, const ndg_variant *v, edit **out)
{
    int n = 0;
    edit *e = ndg_calloc((size_t)(2 * t->ncalls + 2 * t->nloops + t->nrenames + t->nscalar_refs + 1), sizeof *e);
    for (int i = 0; i < t->nrenames; ++i)
        rename_edit(t, v, &t->renames[i], &e[n++]);
    if (!v->target)
        goto sort; /* the generic kernel: the template as written, with its own names */
    /* Fault injection for tests only: NDGEN_FAULT_SKIP_CALL=nda_x leaves that call unrewritten, which
     * translation validation must then refuse (tests/test_generate_files.sh). */
    const char *skip = getenv("NDGEN_FAULT_SKIP_CALL");
    for (int i = 0; i < t->ncalls; ++i) {
        bool skipped = skip && strcmp(skip, ndg_call_names[t->calls[i].kind]) == 0;
        int folded = t->calls[i].kind == NDG_SAME_PAGING && !skipped ? fold_edits(t, v, &t->calls[i], &e[n]) : 0;
        n += folded;
        if (!folded && !skipped)
            call_edit(t, v, &t->calls[i], &e[n++]);
    }
    for (int i = 0; i < t->nscalar_refs && all_scalars_fixed(v); ++i)
        scalar_ref_edit(v, &t->scalar_refs[i], &e[n++]);
    for (int i = 0; i < t->nloops; ++i) {
        const ndg_loop *L = &t->loops[i];
        loop_plan p = plan_loop(t, v, i);
        nest m;
        plan_nest(&p, &m);
        char ind[64];
        indent_at(t, L->start, ind, sizeof ind);
        e[n].start = L->start;
        e[n].end = L->body_start + 1; /* the body's '{' is printed with the loop header */
        loop_open(&e[n++].text, &p, &m, ind);
        e[n].start = e[n].end = L->body_end;
        loop_close(&e[n++].text, v->prefix, &p, &m, ind);
    }
sort:
    qsort(e, (size_t)n, sizeof *e, edit_cmp);
    *out = e;
    return n;
}

static void line_col_at(const ndg_template *t, unsigned at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (unsigned i = 0; i < at; ++i) {
        if (t->text[i] == '\n')
            ++*line, *col = 1;
        else
            ++*col;
    }
}

/* The template text with the variant's edits applied. */
static int emit_body(ndg_buf *out, const ndg_template *t, const ndg_variant *v, nd_error *err)
{
    edit *e = NULL;
    int n = collect_edits(t, v, &e), rc = 0;
    unsigned pos = v->body_start; /* the head before it is the file's (emit.c), and holds no edit */
    for (int i = 0; i < n && !rc; ++i) {
        assert(e[i].start <= e[i].end && e[i].end <= t->len);
        if (e[i].start < pos) {
            assert(e[i].end <= pos); /* edits never overlap but by containment (the file comment) */
            continue;                /* inside the edit before, which replaced it */
        }
        const int m = macro_named(t, e[i].text.data, e[i].text.len);
        if (m >= 0) {
            int line, col;
            line_col_at(t, e[i].start, &line, &col);
            rc = nd_fail(err, "%s:%d:%d: the macro '%s' (defined at %s) is a name the code ndgen generates here uses; "
                              "rename the macro", t->path, line, col, t->macros[m], t->macro_at[m]);
        }
        ndg_buf_put(out, t->text + pos, e[i].start - pos);
        ndg_buf_put(out, e[i].text.data, e[i].text.len);
        /* lines written or cut: what follows needs its template line again */
        bool moved = (e[i].text.len && memchr(e[i].text.data, '\n', e[i].text.len)) ||
                     memchr(t->text + e[i].start, '\n', e[i].end - e[i].start);
        pos = e[i].end;
        if (v->line_directives && moved) {
            int line, col;
            line_col_at(t, pos, &line, &col);
            unsigned k = pos; /* the rest of the line: when blank, the next line starts after #line */
            while (k < t->len && (t->text[k] == ' ' || t->text[k] == '\t'))
                ++k;
            const char *nl = out->len && out->data[out->len - 1] == '\n' ? "" : "\n"; /* #line on a line of its own */
            if (k < t->len && t->text[k] == '\n' && (i + 1 == n || e[i + 1].start > k)) {
                pos = k + 1;
                ndg_buf_printf(out, "%s#line %d \"%s\"\n", nl, line + 1, v->template_path);
            } else {
                ndg_buf_printf(out, "%s#line %d \"%s\"\n%*s", nl, line, v->template_path, col - 1, "");
            }
        }
    }
    ndg_buf_put(out, t->text + pos, t->len - pos);
    for (int i = 0; i < n; ++i)
        ndg_buf_free(&e[i].text);
    free(e);
    return rc;
}

/* ---------------------------------------------------------------- one variant */

/* "#define NDT_X(args) value" from the define "NDT_X(args)=value". */
static void put_define(ndg_buf *out, const char *define)
{
    const char *eq = strchr(define, '=');
    ndg_buf_printf(out, "#define %.*s %s\n", (int)(eq - define), define, eq + 1);
}

/* The element types a template declares, checked against the operands' dtypes: the second wall
 * behind the generator's own check (emit.c), in case the template's default or a header differs. */
static void type_asserts(ndg_buf *out, const ndg_template *t, const ndg_op *op)
{
    for (int k = 0; k < op->noperands; ++k) {
        char param[16];
        snprintf(param, sizeof param, "T%d", k);
        bool own = false, shared = false;
        for (int i = 0; i < t->nparams; ++i) {
            own |= strcmp(t->params[i].name, param) == 0;
            shared |= strcmp(t->params[i].name, "T") == 0;
        }
        if (!own && !shared)
            continue;
        nd_dtype dt = op->operands[k].dtype;
        bool integer = !nd_dtype_stored_floating(dt); /* bf16 is stored as uint16_t */
        const char *name = own ? param : "T";
        ndg_buf_printf(out, "_Static_assert(sizeof(NDT_%s) == %d && _Generic((NDT_%s)0, float: %d, double: %d, "
                            "long double: %d, default: %d), \"op %s: NDT_%s must be the %d-byte %s type that stores "
                            "operand '%s' (%s)\");\n", name, nd_dtype_size(dt), name, !integer, !integer, !integer,
                       integer, op->name, name, nd_dtype_size(dt), integer ? "integer" : "floating",
                       op->operands[k].name, nd_dtype_name(dt));
    }
}

/* Whether template offset at lies in a path a folded branch cuts: calls there need no helper (an unused
 * static helper is a warning for Clang). */
static bool folded_away(const ndg_template *t, const ndg_variant *v, unsigned at)
{
    for (int i = 0; i < t->ncalls; ++i) {
        edit cuts[2];
        if (t->calls[i].kind != NDG_SAME_PAGING)
            continue;
        int n = fold_edits(t, v, &t->calls[i], cuts);
        for (int j = 0; j < n; ++j)
            if (at >= cuts[j].start && at < cuts[j].end)
                return true;
    }
    return false;
}

int ndg_rewrite(ndg_buf *out, const ndg_template *t, const ndg_variant *v, nd_error *err)
{
    const ndg_op *op = v->op;
    size_t begin = out->len;
    ndg_buf_printf(out, "\n/* ==== op %s, %s kernel %s */\n", op->name, v->target ? "specialized" : "generic", v->symbol);
    if (check_scalar_names(t, op, err))
        return -1;
    if (all_scalars_fixed(v) && t->nscalar_refs)
        emit_fixed_scalars(out, v);
    if (v->target) { /* helpers first: no macro of the template is defined yet */
        unsigned need[NDG_MAX_OPERANDS] = {0};
        for (int i = 0; i < t->ncalls; ++i) { /* calls that keep their arguments and call a helper */
            const ndg_call *c = &t->calls[i];
            if (c->operand >= 0 && c->kind != NDG_SAME_PAGING && !known_local(t, v, c) && !folded_away(t, v, c->start))
                need[c->operand] |= 1u << c->kind;
        }
        for (int k = 0; k < op->noperands; ++k)
            emit_operand_helpers(out, v->prefix, k, &op->operands[k], &v->target->dist[k], need[k], free_of(v));
        unsigned done[NDG_MAX_OPERANDS] = {0}; /* run-time nda_same_paging: the fixed page boxes agree */
        for (int i = 0; i < t->ncalls; ++i) {
            const ndg_call *c = &t->calls[i];
            if (c->kind != NDG_SAME_PAGING || same_paging_known(v, c) >= 0 || (done[c->operand] >> c->operand2 & 1u))
                continue;
            done[c->operand] |= 1u << c->operand2;
            ndg_buf_printf(out, "static inline bool %ssame_paging_%d_%d(const nda_tensor *a, const nda_tensor *b)\n{\n"
                                "    for (int i = 0; i < %d; ++i)\n"
                                "        if (a->dist->spec.shape[i] != b->dist->spec.shape[i])\n"
                                "            return false;\n    return true;\n}\n",
                           v->prefix, c->operand, c->operand2, v->target->dist[c->operand].spec.rank);
        }
    }
    const int m = macro_named(t, out->data + begin, out->len - begin);
    if (m >= 0)
        return nd_fail(err, "%s: the macro '%s', defined here for template %s, is a name the code ndgen generates "
                            "uses; rename the macro", t->macro_at[m], t->macros[m], t->path);
    for (const char *d = t->defines; *d;) {
        const char *eol = strchr(d, '\n');
        char line[4200];
        snprintf(line, sizeof line, "%.*s", (int)(eol - d), d);
        if (v->line_directives) /* the C text of parameters is the spec's: errors point at its op{} call */
            ndg_buf_printf(out, "#line %d \"%s\"\n", op->line, v->spec_path);
        put_define(out, line);
        d = eol + 1;
    }
    if (v->line_directives) {
        int line, col;
        line_col_at(t, v->body_start, &line, &col);
        ndg_buf_printf(out, "#line %d \"%s\"\n%*s", line, v->template_path, col - 1, "");
    }
    if (emit_body(out, t, v, err))
        return -1;
    if (out->len && out->data[out->len - 1] != '\n')
        ndg_buf_put(out, "\n", 1);
    if (v->line_directives)
        ndg_buf_printf(out, "#line %d \"%s\"\n", out->lines + 2, v->out_path);
    type_asserts(out, t, op);
    for (const char *d = t->defines; *d; d = strchr(d, '\n') + 1)
        ndg_buf_printf(out, "#undef %.*s\n", (int)strcspn(d, "(="), d);
    for (int i = 0; i < t->nundefs; ++i)
        ndg_buf_printf(out, "#undef %s\n", t->undefs[i]);
    return 0;
}
