/*
 * test_mpi_kernels.c LIBRARY - run under mpirun -np R: the op library's specialized targets for the
 * suite's ops (elementwise with broadcast, reductions, matmul and batched matmul, permute, reshard,
 * softmax, all_reduce, reduce_scatter, all_gather, matmul into a Partial output), each on a device over
 * the R processes and, on rank 0, on a one-process device of the same grid: every output and every
 * core's statistics must be bit-identical between the two, generic and specialized; the output must
 * equal a plain reference (loops over contiguous arrays written here, or, for a collective,
 * the input's parts combined on the host); and a Partial matmul followed by all_reduce must give the
 * plain product. Every process's host writes go only to its own cores (checked with a poisoned copy
 * of the host array on the other ranks).
 *
 * Over emulated nodes (NDGEN_MPI_NODE_SIZE=k: ranks [0, k), [k, 2k), ... form nodes), the same checks,
 * and each process's bytes fetched from other nodes before a launch equal a brute-force count over the
 * distribution model: every core-list entry of every input held by a process of another node, or, for
 * an elementwise op, every page of another node holding an input element (broadcast) of an output
 * element the process writes, found element by element; with batched gets, one get per such process. Configurations in which a core would write another node's
 * memory are refused.
 *
 * With NDGEN_MPI_STATS_ROOT=r (statistics gathered into process r alone), process r holds every core's
 * statistics and every process's share, and does the comparisons above; every other process holds
 * its own cores' entries and its own share, and zeros for the rest.
 */
#define _DEFAULT_SOURCE /* setenv, unsetenv, strdup */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_setup.h"
#include "nd_runtime_mpi.h"
#include "testutil.h"

static int rank, nprocs, node_size; /* node_size: the emulated nodes' size, nprocs for one node */
static int stats_root = -1;         /* NDGEN_MPI_STATS_ROOT: where statistics are gathered; -1 everywhere */

/* Whether this process holds every core's statistics and every process's share. */
static bool all_stats(void) { return stats_root < 0 || rank == stats_root; }

static int node_of(int r) { return r / node_size; }
static int64_t passed;

static const char *const suite[] = {"add", "mul", "relu", "exp", "reduce_sum", "reduce_max", "matmul", "bmm",
                                    "permute", "reshard", "softmax", "all_reduce", "reduce_scatter", "all_gather"};
enum { PER_OP = 3 }; /* targets per op, to keep four oversubscribed processes quick */

static bool in_suite(const char *op)
{
    for (size_t i = 0; i < sizeof suite / sizeof *suite; ++i)
        if (strcmp(suite[i], op) == 0)
            return true;
    return false;
}

static bool is_collective(const char *op)
{
    return !strcmp(op, "all_reduce") || !strcmp(op, "reduce_scatter") || !strcmp(op, "all_gather") ||
           !strcmp(op, "reshard");
}

/* Reduced axes taking in's shape to out's (with or without keepdims), as launch scalars. */
static bool find_axes(const nd_dist_spec *in, const nd_dist_spec *out, double *scalars, int *n)
{
    for (unsigned mask = 1; mask < (1u << in->rank); ++mask) {
        int64_t kept[ND_MAX_RANK], keep[ND_MAX_RANK];
        int nk = 0;
        for (int i = 0; i < in->rank; ++i) {
            keep[i] = mask >> i & 1 ? 1 : in->shape[i];
            if (!(mask >> i & 1))
                kept[nk++] = in->shape[i];
        }
        if ((out->rank == nk && memcmp(out->shape, kept, (size_t)nk * 8) == 0) ||
            (out->rank == in->rank && memcmp(out->shape, keep, (size_t)in->rank * 8) == 0)) {
            *n = 0;
            for (int i = 0; i < in->rank; ++i)
                if (mask >> i & 1)
                    scalars[(*n)++] = i;
            return true;
        }
    }
    return false;
}

/* A permutation taking in's shape to out's that moves something, else the identity; false if none. */
static bool find_perm(const nd_dist_spec *in, const nd_dist_spec *out, double *scalars)
{
    int r = in->rank;
    if (out->rank != r || r > 4)
        return false;
    int best = -1, total = 1;
    for (int i = 0; i < r; ++i)
        total *= r;
    for (int code = 0; code < total; ++code) { /* every map of r dims to r dims; keep the permutations */
        int p[4], c = code, used = 0;
        bool fits = true, moves = false;
        for (int i = 0; i < r; ++i, c /= r) {
            p[i] = c % r;
            fits = fits && !(used >> p[i] & 1) && out->shape[i] == in->shape[p[i]];
            used |= 1 << p[i];
            moves = moves || p[i] != i;
        }
        if (fits && (best < 0 || moves))
            best = code;
        if (fits && moves)
            break;
    }
    for (int i = 0, c = best; best >= 0 && i < r; ++i, c /= r)
        scalars[i] = c % r;
    return best >= 0;
}

typedef td_setup setup;

/* The target's operands on a device over the job's processes (mpi) or on one process. */
static int make_setup(const nda_kernel_entry *e, bool mpi, setup *s, nd_error *err)
{
    nd_device_config cfg;
    if (td_setup_config(e->signatures, e->noperands, 1, s, &cfg, err))
        return -1;
    if (mpi ? nd_device_open_mpi(&cfg, NULL, MPI_COMM_WORLD, &s->dev, err) : nd_device_open(&cfg, &s->dev, err))
        return -1;
    return td_setup_alloc(s, err);
}

static void free_setup(setup *s) { td_setup_free(s); }

/* Multiples of 1/4 in [-8, 8] (positive for ops whose reference needs it): exact in every floating dtype. */
static void random_fill(uint8_t *x, const nd_dist *d, int64_t elems, uint64_t *seed)
{
    for (int64_t j = 0; j < elems; ++j) {
        float f = (float)rng_range(seed, -32, 32) / 4.0f;
        uint32_t u;
        memcpy(&u, &f, 4);
        if (d->spec.dtype == ND_F32)
            memcpy(x + 4 * j, &f, 4);
        else if (d->spec.dtype == ND_BF16)
            memcpy(x + 2 * j, &(uint16_t){(uint16_t)(u >> 16)}, 2);
        else if (d->spec.dtype == ND_F16)
            memcpy(x + 2 * j, &(uint16_t){test_f16_nearest(f)}, 2);
        else
            memcpy(x + j * d->elem_bytes, &u, (size_t)d->elem_bytes);
    }
}

static float value_at(const uint8_t *p, int64_t j, nd_dtype t)
{
    float f;
    if (t == ND_F16) {
        f = (float)test_f16_value(((const uint16_t *)(const void *)p)[j]);
    } else if (t == ND_BF16) {
        uint32_t u = (uint32_t)((const uint16_t *)(const void *)p)[j] << 16;
        memcpy(&f, &u, 4);
    } else {
        memcpy(&f, p + 4 * j, 4);
    }
    return f;
}

/* Writes the inputs (random the first time, then the same again): every part of a Partial input gets
 * its own data; parts[i][q] keeps part q. Every rank passes the same arrays, as the API asks. */
static void write_inputs(setup *s, uint8_t *(*parts)[8], uint64_t seed)
{
    nd_error err;
    for (int i = 0; i + 1 < s->n; ++i) {
        const nd_dist *d = &s->d[i];
        int64_t bytes = s->elems[i] * d->elem_bytes;
        for (int q = 0; q < d->spec.parts; ++q) {
            uint8_t *x = parts[i][q] ? parts[i][q] : malloc((size_t)bytes);
            if (!parts[i][q])
                random_fill(x, d, s->elems[i], &seed);
            parts[i][q] = x;
            int rc = d->spec.parts > 1 ? nd_tensor_write_part(s->t[i], q, x, bytes, &err)
                                       : nd_tensor_write(s->t[i], x, bytes, &err);
            CHECK(rc == 0, "%s", err.msg);
        }
    }
}

/* The output read back: whole, or each part in turn (parts concatenated). */
static uint8_t *read_output(setup *s, int64_t *len)
{
    nd_tensor *t = s->t[s->n - 1];
    const nd_dist *d = &s->d[s->n - 1];
    int64_t bytes = s->elems[s->n - 1] * d->elem_bytes;
    uint8_t *out = malloc((size_t)(bytes * d->spec.parts));
    nd_error err;
    for (int q = 0; q < d->spec.parts; ++q) {
        int rc = d->spec.parts > 1 ? nd_tensor_read_part(t, q, out + q * bytes, bytes, &err)
                                   : nd_tensor_read(t, out, bytes, &err);
        CHECK(rc == 0, "%s", err.msg);
    }
    *len = bytes * d->spec.parts;
    return out;
}

typedef struct result {
    uint8_t *out;
    int64_t len;
    nda_stats *stats;
    int64_t ncores;
    bool specialized;
} result;

/* The process holding entry i of d on dev, from the documented core and bank maps. */
static int holder(const nd_device *dev, const nd_dist *d, int64_t i)
{
    nd_core c = nd_dist_core(d, i);
    return d->spec.buffer == ND_DRAM ? nd_mpi_rank_of_bank(dev, c.x)
                                     : nd_mpi_rank_of_core(dev, (int64_t)c.y * nd_device_get_config(dev).grid_x + c.x);
}

/* The process whose cores write core-list entry i of d in launches: in L1 the holder; in DRAM the one
 * running device core i (a kernel's core writes its own entry of a DRAM tensor, nda_tensor.owner_of);
 * -1: an entry past the cores, which no launch writes. */
static int writer(const nd_device *dev, const nd_dist *d, int64_t i)
{
    nd_device_config cfg = nd_device_get_config(dev);
    if (d->spec.buffer != ND_DRAM)
        return holder(dev, d, i);
    return i < (int64_t)cfg.grid_x * cfg.grid_y ? nd_mpi_rank_of_core(dev, i) : -1;
}

/* Element e's coordinates in a row-major array of shape o. */
static void coords(int64_t e, const nd_dist_spec *o, int64_t *x)
{
    for (int i = o->rank - 1; i >= 0; --i) {
        x[i] = e % o->shape[i];
        e /= o->shape[i];
    }
}

/* The entry of d holding the element at x (copy 0), and its page. */
static nd_loc element_loc(const nd_dist *d, const int64_t *x, int64_t *page)
{
    int64_t pc[ND_MAX_RANK];
    for (int j = 0; j < d->spec.rank; ++j)
        pc[j] = x[j] / d->spec.page[j];
    *page = nd_dist_page_id(d, pc);
    return nd_layout_locate_id(&d->squeezed, *page);
}

/* The device cores of process p that write the output element at x, one per copy of the output whose
 * entry holding it p writes (L1: the core holding the entry; DRAM: device core i writes entry i), into
 * ids, and the part each writes into parts (its copy over the copies a part has); returns how many. */
static int p_writers(const setup *s, const int64_t *x, int p, int64_t *ids, int64_t *parts, int cap)
{
    const nd_dist *o = &s->d[s->n - 1];
    nd_device_config cfg = nd_device_get_config(s->dev);
    int64_t page, ncores = (int64_t)cfg.grid_x * cfg.grid_y;
    nd_loc loc = element_loc(o, x, &page);
    int n = 0;
    CHECK(o->spec.replicas <= cap, "%d copies of the output; the count has room for %d", (int)o->spec.replicas, cap);
    for (int64_t r = 0; r < o->spec.replicas; ++r) {
        int64_t i = r * o->layout.ncores + loc.core, id = i < ncores ? i : -1;
        if (o->spec.buffer != ND_DRAM) {
            nd_core c = nd_dist_core(o, i);
            id = (int64_t)c.y * cfg.grid_x + c.x;
        }
        if (id >= 0 && nd_mpi_rank_of_core(s->dev, id) == p && n < cap)
            parts[n] = r / (o->spec.replicas / o->spec.parts), ids[n++] = id;
    }
    return n;
}

/* Per device core, the copy of d it reads (nda_tensor, README): the copy whose core list holds it in L1,
 * else copy 0 (and always 0 in DRAM, whose entries belong to no core). Freed by the caller. */
static int64_t *copies_read(const setup *s, const nd_dist *d)
{
    nd_device_config cfg = nd_device_get_config(s->dev);
    int64_t *v = calloc((size_t)cfg.grid_x * (size_t)cfg.grid_y, sizeof *v);
    CHECK(v != NULL, "out of memory");
    for (int64_t i = 0; v && d->spec.buffer == ND_L1 && i < d->list_cores; ++i) {
        nd_core c = nd_dist_core(d, i);
        v[(int64_t)c.y * cfg.grid_x + c.x] = i / d->layout.ncores;
    }
    return v;
}

/* The elementwise read set applies (README): the op's reference is derived from EXPR, and every input
 * has whole copies (no pending parts) of a shape that broadcasts to the output's as numpy does. */
static bool pointwise(const nda_kernel_entry *e, const setup *s)
{
    const nd_dist_spec *o = &s->d[s->n - 1].spec;
    bool ok = e->reads == NDA_READS_POINTWISE && e->noutputs == 1 && o->parts == 1;
    for (int t = 0; ok && t + 1 < s->n; ++t) {
        const nd_dist_spec *i = &s->d[t].spec;
        ok = i->parts == 1 && i->rank <= o->rank;
        for (int j = 0; ok && j < i->rank; ++j)
            ok = i->shape[j] == 1 || i->shape[j] == o->shape[j + o->rank - i->rank];
    }
    return ok;
}

/* Process p's read set beyond its own pages, as the brute force finds it: bytes held by other processes
 * of its node, bytes held on other nodes, and how many processes of other nodes hold some. */
typedef struct read_count {
    int64_t node, other;
    int sources;
    bool from[64];
    bool read_from[64]; /* the other processes writing a page p reads (pages read by rule alone) */
} read_count;

/* The page at entry i of d, which p reads: its writer, when another process, into p's writers. */
static void count_writer(read_count *rc, const setup *s, const nd_dist *d, int64_t i, int p)
{
    int w = writer(s->dev, d, i);
    if (w >= 0 && w != p)
        rc->read_from[w] = true;
}

/* Counts len bytes held by process h into p's read set. */
static void count_held(read_count *rc, int p, int h, int64_t len)
{
    if (h == p)
        return;
    if (node_of(h) == node_of(p)) {
        rc->node += len;
        return;
    }
    rc->other += len;
    rc->sources += !rc->from[h];
    rc->from[h] = true;
}

/* Input d's element at xi, read by p's cores in copies[0..n): each page holding it, per copy, counted once
 * (seen: per copy and page). */
static void count_element(read_count *rc, const setup *s, const nd_dist *d, const int64_t *xi, const int64_t *copies,
                          int n, bool *seen, int p)
{
    int64_t page;
    nd_loc loc = element_loc(d, xi, &page);
    for (int k = 0; k < n; ++k) {
        int64_t copy = copies[k], at = copy * d->layout.num_pages + page, i = copy * d->layout.ncores + loc.core;
        if (!seen[at]) {
            count_held(rc, p, holder(s->dev, d, i), d->page_bytes);
            count_writer(rc, s, d, i, p);
        }
        seen[at] = true;
    }
}

/* Brute force over the output's elements: every page holding an input element, broadcast, of an output
 * element process p writes, counted once. */
static void count_pointwise(const setup *s, int p, read_count *rc)
{
    const nd_dist_spec *o = &s->d[s->n - 1].spec;
    int64_t x[ND_MAX_RANK], xi[ND_MAX_RANK], ids[64], parts[64];
    for (int t = 0; t + 1 < s->n; ++t) {
        const nd_dist *d = &s->d[t];
        bool *seen = calloc((size_t)(d->layout.num_pages * d->spec.replicas), 1);
        int64_t *copy_of = copies_read(s, d);
        for (int64_t e = 0; e < s->elems[s->n - 1] && seen && copy_of; ++e) {
            coords(e, o, x);
            int n = p_writers(s, x, p, ids, parts, 64);
            for (int j = 0; j < d->spec.rank; ++j)
                xi[j] = d->spec.shape[j] == 1 ? 0 : x[j + o->rank - d->spec.rank];
            for (int w = 0; w < n; ++w)
                ids[w] = copy_of[ids[w]];
            count_element(rc, s, d, xi, ids, n, seen, p);
        }
        free(seen);
        free(copy_of);
    }
}

/* What an output element reads of its one-copy inputs, written here from each op's meaning: a permute's
 * output dim d is input dim perm[d] (numpy's transpose); a reduction reads every element along its axes
 * (the output drops them, or keeps them as size 1), softmax every element of its row (the last axis);
 * an einsum (matmul, bmm) reads, for the output's letters, every value of the letters the output lacks;
 * all_reduce and reduce_scatter read the element at the output's coordinates in every part of their
 * Partial input, part q from its copy in the position of the core's own (templates/all_reduce.c). */
enum depends { DEP_NONE, DEP_PERM, DEP_AXES, DEP_LAST_AXIS, DEP_LETTERS, DEP_PARTS };

static enum depends depends_of(const nda_kernel_entry *e)
{
    if (!strcmp(e->op, "permute"))
        return DEP_PERM;
    if (!strncmp(e->op, "reduce_", 7) && strcmp(e->op, "reduce_scatter"))
        return DEP_AXES;
    if (!strcmp(e->op, "softmax"))
        return DEP_LAST_AXIS;
    if (!strcmp(e->op, "all_reduce") || !strcmp(e->op, "reduce_scatter"))
        return DEP_PARTS;
    return !strcmp(e->op, "matmul") || !strcmp(e->op, "bmm") ? DEP_LETTERS : DEP_NONE;
}

/* Whether the op's bundled template splits a Partial output's sum over its parts (docs/mpi.md): part q
 * of P folds the q-th chunk of ceil(n / P) values (the last ones shorter or empty) of a reduction's
 * first reduced dim, or of an einsum's contracted letter when it has one (matmul.c, einsum.c, reduce.c).
 * The library under test is the bundled one; its entries must say so. */
static bool splits_parts(const nda_kernel_entry *e)
{
    bool chunked = !strcmp(e->op, "matmul") || !strcmp(e->op, "bmm") ||
                   (!strncmp(e->op, "reduce_", 7) && strcmp(e->op, "reduce_scatter"));
    CHECK(e->parts_chunked == chunked, "%s: parts_chunked is %d", e->op, (int)e->parts_chunked);
    return chunked;
}

/* [lo, hi) of an extent of n: part q's chunk of P. */
static void part_chunk(int64_t n, int64_t P, int64_t q, int64_t *lo, int64_t *hi)
{
    int64_t c = (n + P - 1) / P;
    *lo = q * c > n ? n : q * c;
    *hi = *lo + c > n ? n : *lo + c;
}

/* Input t's elements the output element at x reads, in the output's part `part`: one value or the whole
 * dim, per input dim, or a chunk of it where the op splits its sum over the output's parts (chunked:
 * splits_parts). */
static void dependence(enum depends dep, const nda_kernel_entry *e, const setup *s, int t, const double *sc, int nsc,
                       const int64_t *x, int64_t part, bool chunked, int64_t *lo, int64_t *hi)
{
    const nd_dist_spec *in = &s->d[t].spec, *o = &s->d[s->n - 1].spec;
    bool reduced[ND_MAX_RANK] = {false};
    for (int a = 0; dep == DEP_AXES && a < nsc; ++a)
        reduced[(int)sc[a]] = true;
    if (dep == DEP_LAST_AXIS) /* the row, whole; the output has the input's shape */
        reduced[in->rank - 1] = true, dep = DEP_AXES;
    for (int j = 0, kept = 0; j < in->rank; ++j) {
        lo[j] = dep == DEP_PARTS ? x[j] : 0, hi[j] = dep == DEP_PARTS ? x[j] + 1 : in->shape[j];
        if (dep == DEP_AXES && !reduced[j]) {
            int64_t v = x[o->rank == in->rank ? j : kept++];
            lo[j] = v, hi[j] = v + 1;
        }
        if (dep == DEP_LETTERS) {
            const char *out_letters = e->indices[s->n - 1], *at = strchr(out_letters, e->indices[t][j]);
            if (at)
                lo[j] = x[at - out_letters], hi[j] = lo[j] + 1;
        }
    }
    for (int d = 0; dep == DEP_PERM && d < o->rank; ++d)
        lo[(int)sc[d]] = x[d], hi[(int)sc[d]] = x[d] + 1;
    if (o->parts == 1 || !chunked)
        return;
    int chunk = -1; /* the input dim split over the parts */
    for (int j = 0; dep == DEP_AXES && j < in->rank && chunk < 0; ++j)
        if (reduced[j])
            chunk = j;
    if (dep == DEP_LETTERS) { /* the one letter no output dim has, in input t */
        int lacked = 0;
        for (int u = 0; u + 1 < s->n; ++u)
            for (const char *l = e->indices[u]; *l; ++l)
                if (!strchr(e->indices[s->n - 1], *l))
                    lacked = lacked && lacked != *l ? -1 : *l;
        const char *at = lacked > 0 ? strchr(e->indices[t], lacked) : NULL;
        chunk = at ? (int)(at - e->indices[t]) : -1;
    }
    if (chunk >= 0)
        part_chunk(in->shape[chunk], o->parts, part, &lo[chunk], &hi[chunk]);
}

/* Brute force over the output's elements p writes and, for each, every input element it reads (above)
 * in the copy each writing core reads: every page holding one, counted once per copy. Inputs of pending
 * parts are counted whole, every copy, as staged. */
static void count_dependent(enum depends dep, const nda_kernel_entry *e, const setup *s, int ninputs,
                            const double *sc, int nsc, int p, read_count *rc)
{
    const nd_dist_spec *o = &s->d[s->n - 1].spec;
    int64_t x[ND_MAX_RANK], xi[ND_MAX_RANK], lo[ND_MAX_RANK], hi[ND_MAX_RANK], ids[64], parts[64], copies[8];
    const bool chunked = o->parts > 1 && splits_parts(e); /* once per count: it checks the entry's flag */
    for (int t = 0; t < ninputs; ++t) {
        const nd_dist *d = &s->d[t];
        if (d->spec.parts != 1 && dep != DEP_PARTS) {
            for (int64_t i = 0; i < d->list_cores; ++i)
                count_held(rc, p, holder(s->dev, d, i), d->bytes_per_core);
            continue;
        }
        bool *seen = calloc((size_t)(d->layout.num_pages * d->spec.replicas), 1);
        int64_t *copy_of = copies_read(s, d);
        for (int64_t e_ = 0; e_ < s->elems[s->n - 1] && seen && copy_of; ++e_) {
            coords(e_, o, x);
            int n = p_writers(s, x, p, ids, parts, 64);
            int64_t per = d->spec.replicas / d->spec.parts, nread = dep == DEP_PARTS ? d->spec.parts : 1;
            CHECK(nread <= 8, "more copies read than the count has room for");
            for (int w = 0; w < n && nread <= 8; ++w) { /* each writer: the box its part reads, in its copies */
                int ncopies = 0; /* its own, or each part's at its position */
                for (int64_t q = 0; q < nread; ++q)
                    copies[ncopies++] = dep == DEP_PARTS ? q * per + copy_of[ids[w]] % per : copy_of[ids[w]];
                dependence(dep, e, s, t, sc, nsc, x, parts[w], chunked, lo, hi);
                bool empty = false;
                for (int j = 0; j < d->spec.rank; ++j)
                    empty |= lo[j] >= hi[j];
                memcpy(xi, lo, sizeof xi);
                for (; !empty;) { /* every element of the box */
                    count_element(rc, s, d, xi, copies, ncopies, seen, p);
                    int j = d->spec.rank - 1;
                    while (j >= 0 && ++xi[j] == hi[j])
                        xi[j] = lo[j], --j;
                    if (j < 0)
                        break;
                }
            }
        }
        free(seen);
        free(copy_of);
    }
}

/* Process p's read set in a launch reading inputs s->d[0..ninputs): every entry of every copy, counted
 * entry by entry (the inputs are distinct tensors, so no entry is counted twice); or, for an
 * elementwise op, a permute, a reduction or an einsum, page by page. */
static read_count count_read_set(const nda_kernel_entry *e, const setup *s, int ninputs, const double *sc, int nsc,
                                 int p)
{
    read_count rc = {0};
    if (pointwise(e, s)) {
        count_pointwise(s, p, &rc);
        return rc;
    }
    if (depends_of(e) != DEP_NONE) {
        count_dependent(depends_of(e), e, s, ninputs, sc, nsc, p, &rc);
        return rc;
    }
    for (int t = 0; t < ninputs; ++t)
        for (int64_t i = 0; i < s->d[t].list_cores; ++i)
            count_held(&rc, p, holder(s->dev, &s->d[t], i), s->d[t].bytes_per_core);
    return rc;
}

/* Whether the op's read rule describes what every input is read for (docs/mpi.md): an elementwise op as
 * pointwise() says, or a permute, reduction, softmax or einsum of one output whose inputs have no
 * pending parts. Then the runtime orders the launch in pairs (or not at all), else with a fence. */
static bool by_rule(const nda_kernel_entry *e, const setup *s)
{
    if (pointwise(e, s))
        return true;
    bool ok = depends_of(e) != DEP_NONE && e->noutputs == 1;
    for (int t = 0; ok && t + 1 < s->n; ++t)
        ok = s->d[t].spec.parts == 1 || depends_of(e) == DEP_PARTS;
    return ok;
}

/* Whether, by the brute force, some process talks (reads pages of, or has its pages read by) more other
 * processes than ceil(log2 nprocs), the rounds of an all-reduce: then pairs would cost more than a fence,
 * and the runtime fences (docs/mpi.md). */
static bool dense(const read_count *want)
{
    int rounds = 0;
    while ((1 << rounds) < nprocs)
        ++rounds;
    for (int p = 0; p < nprocs; ++p) {
        int talks = 0;
        for (int q = 0; q < nprocs; ++q)
            talks += q != p && (want[p].read_from[q] || want[q].read_from[p]);
        if (talks > rounds)
            return true;
    }
    return false;
}

/* How each process ordered the launch, against the brute force's writers of the pages each reads: in
 * pairs, each waits for exactly the other processes writing a page it reads, and for exactly those
 * reading a page it writes; with no order at all, no process reads another's page; fenced, only when
 * the rule does not describe the reads or the relation is dense. */
static void check_order(const nda_kernel_entry *e, const setup *s, const read_count *want, const nd_mpi_proc_stats *pp)
{
    bool pairs = (!getenv("NDGEN_MPI_SYNC") || strcmp(getenv("NDGEN_MPI_SYNC"), "pairs") == 0) && !dense(want);
    bool rule = by_rule(e, s);
    for (int p = 0; p < nprocs; ++p) {
        if (!all_stats() && p != rank)
            continue;
        int writers = 0, readers = 0;
        for (int q = 0; q < nprocs; ++q)
            writers += want[p].read_from[q], readers += want[q].read_from[p];
        if (nprocs == 1) /* a device over one process is the plain device: nothing to order */
            CHECK(pp[p].order == ND_MPI_ORDER_NONE, "%s: one process ordered a launch with others", e->op);
        else if (pp[p].order == ND_MPI_ORDER_NONE)
            CHECK(rule && writers == 0 && readers == 0,
                  "%s: process %d ordered the launch with nobody, but reads pages of %d processes and %d read its own",
                  e->op, p, writers, readers);
        else if (pp[p].order == ND_MPI_ORDER_PAIRS)
            CHECK(pairs && rule && pp[p].pair_writers == writers && pp[p].pair_readers == readers,
                  "%s: process %d waited for %d writers and %d readers; want %d and %d%s", e->op, p, pp[p].pair_writers,
                  pp[p].pair_readers, writers, readers, pairs && rule ? "" : " and a fence");
        else
            CHECK(!(pairs && rule), "%s: process %d fenced a launch its read rule describes (pairs expected)", e->op, p);
    }
}

/* Every process's node, same-node and fetched bytes and gets in the last launch, against the count. */
static void check_staged(const setup *s, const nda_kernel_entry *e, const double *sc, int nsc,
                         const nd_mpi_proc_stats *pp)
{
    bool batched = !getenv("NDGEN_MPI_GETS") || strcmp(getenv("NDGEN_MPI_GETS"), "batched") == 0;
    read_count *all = calloc((size_t)nprocs, sizeof *all);
    CHECK(all != NULL, "out of memory");
    for (int p = 0; all && p < nprocs; ++p)
        all[p] = count_read_set(e, s, s->n - e->noutputs, sc, nsc, p);
    if (all)
        check_order(e, s, all, pp);
    for (int p = 0; all && p < nprocs; ++p) {
        if (!all_stats() && p != rank) { /* another process's share is not gathered here */
            CHECK(pp[p].staged_bytes == 0 && pp[p].node_bytes == 0 && pp[p].gets == 0 && pp[p].total.pages_written == 0,
                  "process %d's share is in process %d, not only in process %d", p, rank, stats_root);
            continue;
        }
        read_count want = all[p];
        CHECK(pp[p].node == node_of(p) && pp[p].staged_bytes == want.other && pp[p].node_bytes == want.node &&
                  (!batched || pp[p].gets == want.sources) && (want.sources > 0) == (pp[p].gets > 0),
              "process %d (node %d): %lld bytes of its node's, fetched %lld bytes in %lld gets; want %lld, %lld bytes "
              "from %d processes on other nodes (node %d)", p, pp[p].node, (long long)pp[p].node_bytes,
              (long long)pp[p].staged_bytes, (long long)pp[p].gets, (long long)want.node, (long long)want.other,
              want.sources, node_of(p));
    }
    free(all);
}

static result run(nd_kernels *k, setup *s, const nda_kernel_entry *e, const double *sc, int nsc, nd_variant v)
{
    nd_error err;
    nd_launch_stats ls;
    nd_kernel_pick pick;
    result r = {0};
    int rc = nd_run(&(nd_launch_desc){.device = s->dev, .kernels = k, .op = e->op, .tensors = s->t, .ntensors = s->n,
                                      .scalars = sc, .nscalars = nsc, .variant = v, .pick = &pick, .stats = &ls},
                    &err);
    CHECK(rc == 0, "%s: %s", e->op, err.msg);
    if (rc)
        return r;
    r.specialized = pick.specialized;
    r.out = read_output(s, &r.len);
    r.ncores = ls.ncores;
    r.stats = malloc((size_t)ls.ncores * sizeof *r.stats);
    memcpy(r.stats, ls.per_core, (size_t)ls.ncores * sizeof *r.stats);
    if (!all_stats()) { /* only this process's cores' entries are here */
        nd_mpi_proc_stats mine[64];
        if (nd_mpi_nprocs(s->dev) <= 64 && nd_mpi_launch_procs(s->dev, mine, nd_mpi_nprocs(s->dev), &err) == 0)
            for (int64_t c = 0; c < ls.ncores; ++c) {
                bool own = c >= mine[rank].core_lo && c < mine[rank].core_hi;
                static const nda_stats zero;
                CHECK(own || memcmp(&ls.per_core[c], &zero, sizeof zero) == 0,
                      "core %lld's statistics are in process %d, not only in process %d", (long long)c, rank,
                      stats_root);
            }
    }
    /* the job's totals are the per-core sums, and the per-process shares add up to them */
    nd_mpi_proc_stats pp[64];
    if (nd_mpi_nprocs(s->dev) <= 64 && nd_mpi_launch_procs(s->dev, pp, nd_mpi_nprocs(s->dev), &err) == 0) {
        int64_t local = 0, remote = 0, cores = 0;
        for (int p = 0; p < nd_mpi_nprocs(s->dev); ++p) {
            local += pp[p].total.local_bytes_read;
            remote += pp[p].total.remote_bytes_read;
            cores += pp[p].core_hi - pp[p].core_lo;
        }
        CHECK(local == ls.total.local_bytes_read && remote == ls.total.remote_bytes_read && cores == ls.ncores,
              "per-process shares %lld/%lld over %lld cores, job totals %lld/%lld over %lld", (long long)local,
              (long long)remote, (long long)cores, (long long)ls.total.local_bytes_read,
              (long long)ls.total.remote_bytes_read, (long long)ls.ncores);
        if (s->dev && nd_mpi_nprocs(s->dev) == nprocs)
            check_staged(s, e, sc, nsc, pp);
    }
    return r;
}

/* ---------------------------------------------------------------- plain references (f32) */

/* Element e's coordinates in a row-major array of shape o. */

/* Every output element by plain loops over contiguous arrays, written here independently of the specs. */
static void reference(const nda_kernel_entry *e, const setup *s, const float *const *in, float *out,
                      const double *sc, int nsc)
{
    const nd_dist_spec *o = &s->d[s->n - 1].spec, *a = &s->d[0].spec;
    int64_t nout = s->elems[s->n - 1], x[ND_MAX_RANK], y[ND_MAX_RANK];
    if (e->scalars && strncmp(e->scalars, "perm", 4) == 0) { /* out[x] = in[y], y[perm[i]] = x[i] */
        for (int64_t j = 0; j < nout; ++j) {
            int64_t idx = 0;
            coords(j, o, x);
            for (int i = 0; i < o->rank; ++i)
                y[(int)sc[i]] = x[i];
            for (int i = 0; i < a->rank; ++i)
                idx = idx * a->shape[i] + y[i];
            out[j] = in[0][idx];
        }
    } else if (e->scalars) { /* reduce_sum or reduce_max over the axes in sc, keepdims or not */
        bool red[ND_MAX_RANK] = {false}, max = strcmp(e->op, "reduce_max") == 0;
        for (int k = 0; k < nsc; ++k)
            red[(int)sc[k]] = true;
        for (int64_t j = 0; j < nout; ++j)
            out[j] = max ? -INFINITY : 0.0f;
        for (int64_t j = 0; j < s->elems[0]; ++j) {
            int64_t idx = 0;
            coords(j, a, x);
            for (int i = 0; i < a->rank; ++i)
                if (!red[i] || o->rank == a->rank)
                    idx = idx * (red[i] ? 1 : a->shape[i]) + (red[i] ? 0 : x[i]);
            out[idx] = max ? fmaxf(out[idx], in[0][j]) : out[idx] + in[0][j];
        }
    } else if (strcmp(e->op, "softmax") == 0) { /* along the last axis: max, sum of exp, divide */
        int64_t w = a->shape[a->rank - 1];
        for (int64_t r = 0; r < nout / w; ++r) {
            float m = -INFINITY, sum = 0.0f;
            for (int64_t j = 0; j < w; ++j)
                m = fmaxf(m, in[0][r * w + j]);
            for (int64_t j = 0; j < w; ++j)
                sum += expf(in[0][r * w + j] - m);
            for (int64_t j = 0; j < w; ++j)
                out[r * w + j] = expf(in[0][r * w + j] - m) / sum;
        }
    } else if (strcmp(e->op, "matmul") == 0 || strcmp(e->op, "bmm") == 0) { /* [b]ik,[b]kj->[b]ij */
        const nd_dist_spec *b = &s->d[1].spec;
        int64_t m = o->shape[o->rank - 2], n = o->shape[o->rank - 1], k = a->shape[a->rank - 1];
        for (int64_t j = 0; j < nout; ++j) {
            int64_t batch = j / (m * n), i = j / n % m, c = j % n;
            float acc = 0.0f;
            for (int64_t q = 0; q < k; ++q)
                acc += in[0][(a->rank == 3 ? batch * m * k : 0) + i * k + q] *
                       in[1][(b->rank == 3 ? batch * k * n : 0) + q * n + c];
            out[j] = acc;
        }
    } else { /* elementwise, numpy broadcasting: inputs align with the output's last dims */
        for (int64_t j = 0; j < nout; ++j) {
            float v[4] = {0};
            coords(j, o, x);
            for (int k = 0; k + 1 < s->n && k < 4; ++k) {
                const nd_dist_spec *d = &s->d[k].spec;
                int64_t idx = 0;
                for (int i = 0; i < d->rank; ++i)
                    idx = idx * d->shape[i] + (d->shape[i] == 1 ? 0 : x[i + o->rank - d->rank]);
                v[k] = in[k][idx];
            }
            out[j] = !strcmp(e->op, "add") ? v[0] + v[1] : !strcmp(e->op, "mul") ? v[0] * v[1]
                     : !strcmp(e->op, "relu") ? (v[0] > 0.0f ? v[0] : 0.0f) : expf(v[0]);
        }
    }
}

/* The plain value the output must hold: reference() over contiguous arrays (a Partial input first
 * combined), or for a data movement op the input's value. */
static uint8_t *plain(const nda_kernel_entry *e, setup *s, uint8_t *(*parts)[8], const double *sc, int nsc)
{
    const nd_dist *o = &s->d[s->n - 1];
    int64_t nout = s->elems[s->n - 1], eb = o->elem_bytes;
    uint8_t *want = calloc((size_t)nout, (size_t)eb), *in[8];
    for (int i = 0; i + 1 < s->n; ++i) { /* an input's value: its parts combined (exact for quarters) */
        const nd_dist *d = &s->d[i];
        in[i] = parts[i][0];
        if (d->spec.parts > 1) {
            in[i] = malloc((size_t)(s->elems[i] * d->elem_bytes));
            for (int64_t j = 0; j < s->elems[i]; ++j) { /* the parts under the reduce op, as DTensor's */
                float acc = value_at(parts[i][0], j, d->spec.dtype);
                for (int q = 1; q < d->spec.parts; ++q) {
                    float f = value_at(parts[i][q], j, d->spec.dtype);
                    nd_reduce r = d->spec.reduce;
                    acc = r == ND_REDUCE_MAX ? fmaxf(acc, f) : r == ND_REDUCE_MIN ? fminf(acc, f)
                          : r == ND_REDUCE_PRODUCT ? acc * f : acc + f;
                }
                if (d->spec.reduce == ND_REDUCE_AVG)
                    acc /= (float)d->spec.parts;
                if (d->spec.dtype == ND_BF16) {
                    uint32_t u;
                    memcpy(&u, &acc, 4);
                    memcpy(in[i] + 2 * j, &(uint16_t){(uint16_t)(u >> 16)}, 2);
                } else if (d->spec.dtype == ND_F16) {
                    memcpy(in[i] + 2 * j, &(uint16_t){test_f16_nearest(acc)}, 2);
                } else {
                    memcpy(in[i] + 4 * j, &acc, 4);
                }
            }
        }
    }
    if (is_collective(e->op) || !strcmp(e->op, "page_copy"))
        memcpy(want, in[0], (size_t)(nout * eb));
    else
        reference(e, s, (const float *const *)in, (float *)want, sc, nsc);
    for (int i = 0; i + 1 < s->n; ++i)
        if (in[i] != parts[i][0])
            free(in[i]);
    return want;
}

/* The output's value: whole, or its parts combined (a Partial output of matmul is a pending sum). */
static void combine(const nd_dist *d, const uint8_t *out, int64_t elems, uint8_t *value)
{
    if (d->spec.parts == 1) {
        memcpy(value, out, (size_t)(elems * d->elem_bytes));
        return;
    }
    for (int64_t j = 0; j < elems; ++j) { /* in part order, as the output's reduction says; NaN wins a max */
        float acc = value_at(out, j, d->spec.dtype);
        for (int q = 1; q < d->spec.parts; ++q) {
            float v = value_at(out + q * elems * d->elem_bytes, j, d->spec.dtype);
            switch (d->spec.reduce) {
            case ND_REDUCE_MAX: acc = isnan(acc) || v < acc ? acc : v; break;
            case ND_REDUCE_MIN: acc = isnan(acc) || v > acc ? acc : v; break;
            case ND_REDUCE_PRODUCT: acc *= v; break;
            default: acc += v; break; /* sum, and avg (divided below) */
            }
        }
        if (d->spec.reduce == ND_REDUCE_AVG)
            acc /= (float)d->spec.parts;
        memcpy(value + 4 * j, &acc, 4);
    }
}

static bool close_enough(const nda_kernel_entry *e, const uint8_t *a, const uint8_t *b, int64_t n, nd_dtype t,
                         int64_t *at)
{
    bool approx = !strcmp(e->op, "softmax") || !strcmp(e->op, "exp"); /* libm against the kernel's own exp */
    for (*at = 0; *at < n; ++*at) {
        if (t != ND_F32 || !approx) {
            const size_t eb = (size_t)nd_dtype_size(t);
            if (memcmp(a + *at * eb, b + *at * eb, eb))
                return false;
            continue;
        }
        float x = value_at(a, *at, t), y = value_at(b, *at, t);
        if (fabsf(x - y) > 1e-5f * fmaxf(1.0f, fabsf(y)))
            return false;
    }
    return true;
}

static void check_entry(nd_kernels *k, const nda_kernel_entry *e, uint64_t seed, bool specialized)
{
    setup m, l;
    nd_error err;
    test_case = e->symbol;
    int rc = make_setup(e, true, &m, &err);
    CHECK(rc == 0, "MPI device for %s: %s", e->symbol, err.msg);
    if (rc)
        return;
    double sc[ND_MAX_RANK];
    int nsc = 0;
    if (e->scalars && strncmp(e->scalars, "perm", 4) == 0) {
        CHECK(find_perm(&m.d[0].spec, &m.d[1].spec, sc), "no permutation fits");
        nsc = m.d[0].spec.rank;
    } else if (e->scalars) {
        CHECK(find_axes(&m.d[0].spec, &m.d[1].spec, sc, &nsc), "no axes fit");
    }
    uint8_t *parts[8][8] = {{0}};
    write_inputs(&m, parts, seed);
    result mg = run(k, &m, e, sc, nsc, ND_VARIANT_GENERIC);
    result ms = specialized ? run(k, &m, e, sc, nsc, ND_VARIANT_SPECIALIZED) : run(k, &m, e, sc, nsc, ND_VARIANT_GENERIC);
    CHECK(!mg.specialized && ms.specialized == specialized, "variants picked wrongly");
    if (rank == (stats_root < 0 ? 0 : stats_root) && mg.out && ms.out) {
        CHECK(make_setup(e, false, &l, &err) == 0, "%s", err.msg);
        write_inputs(&l, parts, seed);
        result lg = run(k, &l, e, sc, nsc, ND_VARIANT_GENERIC);
        result ls = run(k, &l, e, sc, nsc, specialized ? ND_VARIANT_SPECIALIZED : ND_VARIANT_GENERIC);
        int64_t n = mg.len;
        CHECK(lg.out && ls.out && lg.len == n && memcmp(mg.out, lg.out, (size_t)n) == 0,
              "generic: output over %d processes differs from one process's", nprocs);
        CHECK(lg.out && ls.out && memcmp(ms.out, ls.out, (size_t)n) == 0,
              "specialized: output over %d processes differs from one process's", nprocs);
        CHECK(lg.stats && mg.ncores == lg.ncores &&
                  memcmp(mg.stats, lg.stats, (size_t)mg.ncores * sizeof *mg.stats) == 0,
              "generic: per-core statistics over %d processes differ from one process's", nprocs);
        CHECK(ls.stats && memcmp(ms.stats, ls.stats, (size_t)ms.ncores * sizeof *ms.stats) == 0,
              "specialized: per-core statistics over %d processes differ from one process's", nprocs);
        const nd_dist *o = &m.d[m.n - 1];
        int64_t nout = m.elems[m.n - 1], at;
        uint8_t *want = plain(e, &m, parts, sc, nsc), *value = malloc((size_t)(nout * 4 + 4));
        combine(o, ms.out, nout, value);
        CHECK(close_enough(e, value, want, nout, o->spec.parts > 1 ? ND_F32 : o->spec.dtype, &at),
              "output differs from the plain reference at element %lld", (long long)at);
        free(want);
        free(value);
        void *own[] = {lg.out, lg.stats, ls.out, ls.stats};
        for (size_t i = 0; i < 4; ++i)
            free(own[i]);
        free_setup(&l);
    }
    for (int i = 0; i < 8; ++i)
        for (int q = 0; q < 8; ++q)
            free(parts[i][q]);
    void *own[] = {mg.out, mg.stats, ms.out, ms.stats};
    for (size_t i = 0; i < 4; ++i)
        free(own[i]);
    free_setup(&m);
    ++passed;
}

/* Inputs of several copies, which each core reads in its own group's copy (or copy 0): the generic
 * kernel of an op on distributions no target has, each operand's given by its flags on 4 cores, through
 * check_entry (outputs and statistics against one process, fetched bytes and pairs against the brute
 * force, which counts the copy each writing core reads). A read set that took the copy of the output's
 * entry, or copy 0, for every core fetches pages the cores never read, or misses theirs. */
static void check_copies(nd_kernels *k)
{
    static const struct {
        const char *op;
        nd_dist_flags f[3]; /* the inputs then the output; .grid is set below */
    } cases[] = {
        {"matmul", /* b replicated on every core: no process reads another's copy */
         {{.shape = "64,32", .einshard = "m k -> m* k"}, {.shape = "32,48", .einshard = "k n -> * k n"},
          {.shape = "64,48", .einshard = "m n -> m* n"}}},
        {"matmul", /* b in two copies, each split over a pair of cores by columns */
         {{.shape = "64,32", .einshard = "m k -> m* k"}, {.shape = "32,48", .placements = "[Replicate(), Shard(1)]",
                                                          .mesh = "2,2"},
          {.shape = "64,48", .einshard = "m n -> m n*"}}},
        {"matmul", /* a on every core, b and out by columns: a core's columns of b are its own, but the
                      generic kernel packs b's rows whole (its other columns must be addressable) */
         {{.shape = "64,32", .einshard = "m k -> * m k"}, {.shape = "32,48", .einshard = "k n -> k n*"},
          {.shape = "64,48", .einshard = "m n -> m n*"}}},
        {"add", /* a bias of two copies, each on a pair of cores by rows, broadcast over the columns */
         {{.shape = "32,64", .shard = "8,64"}, {.shape = "32,1", .placements = "[Replicate(), Shard(0)]",
                                                 .mesh = "2,2"},
          {.shape = "32,64", .shard = "32,16"}}},
        {"all_reduce", /* two parts, each in two copies: a core reads each part's copy at its own position */
         {{.shape = "32,64", .placements = "[Replicate(), Partial(sum)]", .mesh = "2,2"},
          {.shape = "32,64", .einshard = "a b -> * a b"}}},
        {"reduce_scatter", /* the same parts onto rows over the 4 cores */
         {{.shape = "32,64", .placements = "[Partial(sum), Replicate()]", .mesh = "2,2"},
          {.shape = "32,64", .shard = "8,64"}}},
        {"matmul", /* into a pending sum: part q contracts its chunk of k, 8 of the 30 (6 for the last), so it
                      reads every row page of a and those rows of b alone (b's row blocks of 8 lie elsewhere) */
         {{.shape = "64,30", .shard = "16,30"}, {.shape = "30,48", .shard = "8,48", .strategy = "contiguous"},
          {.shape = "64,48", .placements = "[Partial(sum)]", .mesh = "4"}}},
        {"reduce_sum", /* into a pending sum of one element: part q folds its chunk of the rows */
         {{.shape = "30,64", .shard = "30,16"}, {.shape = "1,1", .placements = "[Partial(sum)]", .mesh = "4"}}},
        {"matmul", /* two parts, each in two copies: a part's copies read the same chunk of k */
         {{.shape = "64,30", .shard = "16,30"}, {.shape = "30,48", .shard = "30,12"},
          {.shape = "64,48", .placements = "[Replicate(), Partial(sum)]", .mesh = "2,2"}}},
        {"matmul", /* k = 3 over 4 parts: the last part's chunk is empty, and it reads nothing of a or b */
         {{.shape = "64,3", .shard = "16,3"}, {.shape = "3,48", .shard = "3,12"},
          {.shape = "64,48", .placements = "[Partial(sum)]", .mesh = "4"}}},
        {"matmul", /* a in DRAM banks, the output's parts each split by rows over two cores */
         {{.shape = "20,7", .interleaved = true, .buffer = "dram", .banks = "4"}, {.shape = "7,9", .shard = "2,9"},
          {.shape = "20,9", .placements = "[Partial(sum), Shard(0)]", .mesh = "2,2"}}},
        {"reduce_max", /* a pending max over the first reduced dim (0 of axes 0 and 2) */
         {{.shape = "6,8,10", .shard = "3,4,10"}, {.shape = "8", .placements = "[Partial(max)]", .mesh = "4"}}},
        {"reduce_sum", /* a pending sum whose two parts are each split by rows over two cores */
         {{.shape = "6,8,10", .shard = "2,8,5"}, {.shape = "8,10", .placements = "[Shard(0), Partial(sum)]",
                                                  .mesh = "2,2"}}},
        {"softmax", /* two copies, each split in rows over a pair of cores, the output by rows over 4 */
         {{.shape = "32,64", .placements = "[Replicate(), Shard(0)]", .mesh = "2,2"}, {.shape = "32,64",
                                                                                        .shard = "8,64"}}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
        const nda_kernel_entry *base = NULL;
        for (int i = 0; i < nd_kernels_count(k) && !base; ++i) {
            const nda_kernel_entry *e = nd_kernels_entry(k, i);
            if (!strcmp(e->op, cases[c].op) && e->signatures && !strcmp(e->dtypes[0], "f32"))
                base = e;
        }
        CHECK(base != NULL, "no f32 %s in the library", cases[c].op);
        if (!base)
            continue;
        char sig[3][512];
        const char *sigs[3];
        nd_error err;
        for (int o = 0; o < base->noperands; ++o) {
            nd_dist_flags f = cases[c].f[o];
            nd_dist d;
            f.grid = "4x1";
            int rc = nd_dist_from_flags(&f, &d, &err);
            CHECK(rc == 0, "%s operand %d: %s", cases[c].op, o, rc ? err.msg : "");
            if (rc || nd_dist_signature(&d, sig[o], sizeof sig[o]) < 0)
                return;
            sigs[o] = sig[o];
        }
        nda_kernel_entry e = *base;
        e.signatures = sigs;
        check_entry(k, &e, 77 + (uint64_t)c, false);
    }
}

/* Tensor-parallel: matmul over k split 8 ways into a Partial(sum) output, then all_reduce (the op
 * library's specialized target): the plain product. */
static void check_partial_then_all_reduce(nd_kernels *k)
{
    enum { M = 8, K = 64, N = 64, P = 8 };
    static float a[M * K], b[K * N], want[M * N], got[M * N];
    nd_device_config cfg;
    nd_device *dev;
    nd_tensor *ta = NULL, *tb = NULL, *tp = NULL, *tr = NULL;
    nd_error err;
    test_case = "Partial matmul then all_reduce";
    nd_device_config_init(&cfg);
    cfg.grid_x = P, cfg.grid_y = 1, cfg.threads = 1, cfg.l1_bytes = 1 << 16, cfg.dram_banks = 1,
    cfg.dram_bank_bytes = 4096;
    nd_dist_flags fa = {.shape = "8,64", .grid = "8x1", .einshard = "m k -> m k*"};
    nd_dist_flags fb = {.shape = "64,64", .grid = "8x1", .einshard = "k n -> k* n"};
    nd_dist_flags fp = {.shape = "8,64", .grid = "8x1", .placements = "[Partial(sum)]", .mesh = "8"};
    nd_dist_flags fr = {.shape = "8,64", .grid = "8x1", .einshard = "... -> * ..."};
    nd_dist da, db, dp, dr;
    int rc = nd_dist_from_flags(&fa, &da, &err) || nd_dist_from_flags(&fb, &db, &err) ||
             nd_dist_from_flags(&fp, &dp, &err) || nd_dist_from_flags(&fr, &dr, &err) ||
             nd_device_open_mpi(&cfg, NULL, MPI_COMM_WORLD, &dev, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc)
        return;
    rc = nd_tensor_alloc(dev, &da, &ta, &err) || nd_tensor_alloc(dev, &db, &tb, &err) ||
         nd_tensor_alloc(dev, &dp, &tp, &err) || nd_tensor_alloc(dev, &dr, &tr, &err);
    CHECK(rc == 0, "%s", err.msg);
    uint64_t seed = 77;
    for (int i = 0; i < M * K; ++i)
        a[i] = (float)rng_range(&seed, -8, 8) / 4.0f;
    for (int i = 0; i < K * N; ++i)
        b[i] = (float)rng_range(&seed, -8, 8) / 4.0f;
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double s = 0;
            for (int q = 0; q < K; ++q)
                s += (double)a[i * K + q] * b[q * N + j];
            want[i * N + j] = (float)s;
        }
    for (int v = 0; v < 2 && rc == 0; ++v) {
        nd_variant var = v ? ND_VARIANT_SPECIALIZED : ND_VARIANT_GENERIC;
        nd_launch_stats st;
        rc = nd_tensor_write(ta, a, sizeof a, &err) || nd_tensor_write(tb, b, sizeof b, &err) ||
             nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "matmul",
                                      .tensors = (nd_tensor *[]){ta, tb, tp}, .ntensors = 3, .variant = ND_VARIANT_AUTO,
                                      .stats = &st}, &err);
        CHECK(rc == 0 && (!all_stats() || st.total.remote_bytes_read == 0), "matmul: %s (remote bytes %lld)",
              rc ? err.msg : "", (long long)st.total.remote_bytes_read);
        rc = rc || nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "all_reduce",
                                            .tensors = (nd_tensor *[]){tp, tr}, .ntensors = 2, .variant = var,
                                            .stats = &st}, &err) ||
             nd_tensor_read(tr, got, sizeof got, &err);
        CHECK(rc == 0, "%s", err.msg);
        CHECK(rc || memcmp(got, want, sizeof got) == 0, "A @ B after all_reduce differs from the plain product");
        /* each core reads the P-1 other parts of its whole block: (P-1)*B per core */
        CHECK(rc || !all_stats() || st.total.remote_bytes_read == P * (P - 1) * M * N * 4,
              "all_reduce read %lld remote bytes, want %d",
              (long long)st.total.remote_bytes_read, P * (P - 1) * M * N * 4);
        nd_mpi_proc_stats pp[8];
        CHECK(nd_mpi_launch_procs(dev, pp, nprocs, &err) == 0, "%s", err.msg);
        for (int p = 0; p < nprocs; ++p) /* several cores per process: kernels do not say whose pages they read */
            CHECK((!all_stats() && p != rank) ||
                      (pp[p].total.remote_bytes_read == (pp[p].core_hi - pp[p].core_lo) * (P - 1) * M * N * 4 &&
                       pp[p].other_process_bytes_read == (nprocs == 1 ? 0 : -1)),
                  "process %d: %lld remote bytes, %lld of other processes", p, (long long)pp[p].total.remote_bytes_read,
                  (long long)pp[p].other_process_bytes_read);
    }
    nd_tensor *all[] = {ta, tb, tp, tr};
    for (int i = 0; i < 4; ++i)
        nd_tensor_free(all[i]);
    nd_device_close(dev);
    ++passed;
}

/* nd_tensor_write on the MPI device writes only this process's cores: every rank writes its own
 * rank-tagged array, and each core's pages must hold the tag of the process that runs it. */
static void check_own_writes(void)
{
    nd_device_config cfg;
    nd_device *dev;
    nd_tensor *t = NULL;
    nd_error err;
    test_case = "host writes stay on the writer's cores";
    nd_device_config_init(&cfg);
    cfg.grid_x = 4, cfg.grid_y = 2, cfg.threads = 1, cfg.l1_bytes = 1 << 14, cfg.dram_banks = 2,
    cfg.dram_bank_bytes = 4096;
    nd_dist_flags f = {.shape = "16,40", .grid = "4x2", .einshard = "a b -> a8 b"};
    nd_dist d;
    int rc = nd_dist_from_flags(&f, &d, &err) || nd_device_open_mpi(&cfg, NULL, MPI_COMM_WORLD, &dev, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc)
        return;
    CHECK(nd_tensor_alloc(dev, &d, &t, &err) == 0, "%s", err.msg);
    static int32_t host[16 * 40], back[16 * 40];
    for (int i = 0; i < 16 * 40; ++i)
        host[i] = 1000 * (rank + 1) + i;
    CHECK(nd_tensor_write(t, host, sizeof host, &err) == 0 && nd_tensor_read(t, back, sizeof back, &err) == 0, "%s",
          err.msg);
    for (int row = 0; row < 16; ++row) { /* 'a8': rows 2c, 2c+1 on core c */
        int owner = nd_mpi_rank_of_core(dev, row / 2);
        CHECK(back[row * 40] == 1000 * (owner + 1) + row * 40, "row %d holds %d: written by the wrong process", row,
              back[row * 40]);
    }
    nd_tensor_free(t);
    nd_device_close(dev);
    ++passed;
}

/* Opening refuses settings that are bad or differ between processes, on every process alike; the
 * core and bank maps are the documented blocks. */
static void check_open(void)
{
    nd_device_config cfg;
    nd_mpi_config m;
    nd_device *dev = NULL;
    nd_error err;
    int rc;
    test_case = "opening";
    nd_device_config_init(&cfg);
    cfg.grid_x = 5, cfg.grid_y = 2, cfg.threads = 1, cfg.l1_bytes = 4096, cfg.dram_banks = 7;
    cfg.dram_bank_bytes = 4096;
    nd_mpi_config_init(&m);
    m.fence_timeout = 0;
    rc = nd_device_open_mpi(&cfg, &m, MPI_COMM_WORLD, &dev, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "fence_timeout 0: must be a positive number of seconds");
    const char *was = getenv("NDGEN_MPI_FENCE_TIMEOUT"); /* an unreadable environment value, by name */
    char *saved = was ? strdup(was) : NULL;
    setenv("NDGEN_MPI_FENCE_TIMEOUT", "10s", 1);
    nd_mpi_config_init(&m);
    rc = nd_device_open_mpi(&cfg, &m, MPI_COMM_WORLD, &dev, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "must be a positive number of seconds, at most 86400 (NDGEN_MPI_FENCE_TIMEOUT '10s')");
    const char *const unbounded[] = {"inf", "nan", "1e9", "-5"}; /* a wait that never ends is a hang */
    for (int i = 0; i < 4; ++i) {
        char want[128];
        setenv("NDGEN_MPI_FENCE_TIMEOUT", unbounded[i], 1);
        nd_mpi_config_init(&m);
        rc = nd_device_open_mpi(&cfg, &m, MPI_COMM_WORLD, &dev, &err);
        snprintf(want, sizeof want, "at most 86400 (NDGEN_MPI_FENCE_TIMEOUT '%s')", unbounded[i]);
        CHECK_ERROR(rc, err, ND_EINVAL, want);
    }
    m.fence_timeout = INFINITY; /* through the API too */
    rc = nd_device_open_mpi(&cfg, &m, MPI_COMM_WORLD, &dev, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "fence_timeout inf: must be a positive number of seconds, at most 86400");
    setenv("NDGEN_MPI_FENCE_TIMEOUT", "600", 1);
    nd_mpi_config_init(&m);
    CHECK(m.fence_timeout == 600, "NDGEN_MPI_FENCE_TIMEOUT=600 gives fence_timeout %g", m.fence_timeout);
    if (saved)
        setenv("NDGEN_MPI_FENCE_TIMEOUT", saved, 1);
    else
        unsetenv("NDGEN_MPI_FENCE_TIMEOUT");
    free(saved);
    nd_mpi_config_init(&m);
    m.banks = (nd_mpi_bank_map)7;
    rc = nd_device_open_mpi(&cfg, &m, MPI_COMM_WORLD, &dev, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "bank map 7");
    nd_mpi_config_init(&m);
    m.node_size = -2;
    rc = nd_device_open_mpi(&cfg, &m, MPI_COMM_WORLD, &dev, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "node_size -2");
    nd_mpi_config_init(&m);
    m.gets = (nd_mpi_gets)5;
    rc = nd_device_open_mpi(&cfg, &m, MPI_COMM_WORLD, &dev, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "gets 5");
    if (nprocs > 1) {
        nd_device_config odd = cfg;
        odd.grid_x = rank == 1 ? 0 : cfg.grid_x; /* invalid on one process only: every process refuses */
        rc = nd_device_open_mpi(&odd, NULL, MPI_COMM_WORLD, &dev, &err);
        CHECK_ERROR(rc, err, ND_EINVAL, rank == 1 ? "grid 0x2" : "another process gave invalid settings");
        odd.grid_x = rank == 1 ? 4 : cfg.grid_x; /* valid everywhere, but not the same */
        rc = nd_device_open_mpi(&odd, NULL, MPI_COMM_WORLD, &dev, &err);
        CHECK_ERROR(rc, err, ND_EINVAL, "every process must give the same device");
    }
    for (int map = 0; map < 2; ++map) {
        nd_mpi_config_init(&m);
        m.banks = map ? ND_MPI_BANKS_BLOCK : ND_MPI_BANKS_BY_CORE;
        rc = nd_device_open_mpi(&cfg, &m, MPI_COMM_WORLD, &dev, &err);
        int cross = -1; /* the first bank b < 7 held (in blocks of 7) on another node than core b (blocks of 10) */
        for (int b = 0; map && b < 7 && cross < 0; ++b) {
            int w = 0, h = 0;
            while (!(10 * w / nprocs <= b && b < 10 * (w + 1) / nprocs))
                ++w;
            while (!(7 * h / nprocs <= b && b < 7 * (h + 1) / nprocs))
                ++h;
            cross = node_of(w) != node_of(h) ? b : -1;
        }
        if (cross >= 0) {
            char want[64];
            snprintf(want, sizeof want, "bank %d is held by process", cross);
            CHECK_ERROR(rc, err, ND_EINVAL, want);
            continue;
        }
        CHECK(rc == 0, "%s", err.msg);
        if (rc)
            continue;
        for (int id = 0; id < 10; ++id) { /* 10 cores in blocks: process r runs [10r/R, 10(r+1)/R) */
            int r = nd_mpi_rank_of_core(dev, id);
            CHECK(10 * r / nprocs <= id && id < 10 * (r + 1) / nprocs, "core %d runs on process %d", id, r);
        }
        for (int b = 0; b < 7; ++b) {
            int want = map ? 0 : nd_mpi_rank_of_core(dev, b);
            while (map && !(7 * want / nprocs <= b && b < 7 * (want + 1) / nprocs))
                ++want;
            CHECK(nd_mpi_rank_of_bank(dev, b) == want, "bank %d lives in process %d, want %d", b,
                  nd_mpi_rank_of_bank(dev, b), want);
        }
        CHECK(nd_mpi_rank_of_core(dev, -1) == -1 && nd_mpi_rank_of_core(dev, 10) == -1 &&
                  nd_mpi_rank_of_bank(dev, 7) == -1 && nd_mpi_nprocs(dev) == nprocs && nd_mpi_rank(dev) == rank,
              "out-of-range queries, or the process count");
        nd_device_close(dev);
    }
    ++passed;
}

/* Over several nodes, a DRAM tensor whose bank list puts entry c (written by core c) on another node
 * than core c is refused at allocation; the same banks in order are not. */
static void check_cross_node_writes(void)
{
    nd_device_config cfg;
    nd_device *dev;
    nd_tensor *t = NULL;
    nd_error err;
    test_case = "no core writes another node's memory";
    nd_device_config_init(&cfg);
    cfg.grid_x = 4, cfg.grid_y = 1, cfg.threads = 1, cfg.l1_bytes = 4096, cfg.dram_banks = 4;
    cfg.dram_bank_bytes = 1 << 14;
    nd_dist_flags in_order = {.shape = "16,40", .shard = "4,40", .buffer = "dram", .banks = "4",
                              .dram_bank_size = "16K", .cores = "(0,0)-(3,0)"},
                  reversed = in_order;
    reversed.cores = "(3,0); (2,0); (1,0); (0,0)";
    nd_dist d, r;
    int rc = nd_dist_from_flags(&in_order, &d, &err) || nd_dist_from_flags(&reversed, &r, &err) ||
             nd_device_open_mpi(&cfg, NULL, MPI_COMM_WORLD, &dev, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc)
        return;
    CHECK(nd_tensor_alloc(dev, &d, &t, &err) == 0, "in order: %s", err.msg);
    nd_tensor_free(t);
    t = NULL;
    /* core 0 writes entry 0, bank 3, held by the process of core 3 */
    rc = nd_tensor_alloc(dev, &r, &t, &err);
    if (node_of(nd_mpi_rank_of_core(dev, 0)) != node_of(nd_mpi_rank_of_core(dev, 3)))
        CHECK_ERROR(rc, err, ND_EINVAL, "DRAM entry 0 is bank 3");
    else
        CHECK(rc == 0, "one node: %s", rc ? err.msg : "");
    nd_tensor_free(t);
    nd_device_close(dev);
    ++passed;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const char *ns = getenv("NDGEN_MPI_NODE_SIZE");
    node_size = ns && atoi(ns) > 0 ? atoi(ns) : nprocs;
    const char *sr = getenv("NDGEN_MPI_STATS_ROOT");
    stats_root = sr && *sr && nprocs > 1 ? atoi(sr) : -1; /* one process: the plain device, every statistic */
    if (rank == 0)
        printf("test_mpi_kernels: %d processes in nodes of %d, statistics gathered into %s %d\n", nprocs, node_size,
               stats_root < 0 ? "every process of" : "process", stats_root < 0 ? nprocs : stats_root);
    nd_kernels *k = NULL;
    nd_error err;
    if (argc != 2 || nd_kernels_open(&k, &err) || nd_kernels_load(k, argv[1], &err)) {
        fprintf(stderr, "usage: test_mpi_kernels LIBRARY%s%s\n", argc == 2 ? ": " : "", argc == 2 ? err.msg : "");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int per_op[sizeof suite / sizeof *suite] = {0}, ops_seen = 0;
    for (int i = 0; i < nd_kernels_count(k); ++i) {
        const nda_kernel_entry *e = nd_kernels_entry(k, i);
        bool f32 = true;
        for (int o = 0; o < e->noperands; ++o)
            f32 = f32 && strcmp(e->dtypes[o], "f32") == 0;
        if (!e->signatures || !in_suite(e->op) || !f32)
            continue;
        size_t at = 0;
        while (strcmp(suite[at], e->op) != 0)
            ++at;
        if (per_op[at]++ >= PER_OP)
            continue;
        ops_seen += per_op[at] == 1;
        check_entry(k, e, 1000 + (uint64_t)i, true);
    }
    test_case = "the suite";
    CHECK(ops_seen == (int)(sizeof suite / sizeof *suite), "only %d of the suite's %d ops have f32 targets", ops_seen,
          (int)(sizeof suite / sizeof *suite));
    check_partial_then_all_reduce(k);
    check_copies(k);
    check_own_writes();
    check_cross_node_writes();
    check_open();
    nd_kernels_close(k);
    int failures = test_failures, any = 0;
    MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_mpi_kernels on %d processes: ", nprocs);
    int rc = rank == 0 ? test_finish(passed) : (failures != 0);
    MPI_Finalize();
    return any ? 1 : rc;
}
