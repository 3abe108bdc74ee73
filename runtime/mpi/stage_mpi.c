/*
 * stage_mpi.c - the pages of other nodes: the RMA window that exposes each process's segment, and
 * staging, the gets that bring the other nodes' pages a launch or a host read reads into this process's
 * staging area. Used only over several nodes; within a node pages are shared memory (device_mpi.c).
 *
 * Nothing of another node is mapped here. A byte is named by its process and its displacement in that
 * process's segment (its cores' L1, then its banks: nd_mpi_lay_segment), which is also its displacement
 * in the RMA window. For a call, each remote core-list entry with pages in the read set gets a span of
 * the staging area (nd_mpi_staging), and the call's base pointer for the entry is set so that its
 * fetched pages are where the accessor computes them; entries with nothing fetched get NULL.
 *
 * The read set, correct for every op: every core-list entry (the whole buffer a tensor has on a core
 * or bank: its pages and their padding) of every copy of every input tensor, held by a process on
 * another node. Kernels read pages only through base and all_base, which point into that set, and
 * only inputs' pages of other cores (owner computes), so nothing a kernel reads is left unfetched.
 * Where the op declares what its output elements read (nd_read_rule: elementwise from EXPR, index
 * letters, an axes or perm list), for an input without pending parts only the input pages holding the
 * elements the output pages this process's cores write read, in the copy each writing core reads, found
 * from the distribution model page by page (and, but for an elementwise op, every entry of those copies
 * addressable: set_whole). Runs are
 * listed per remote process, sorted by displacement and merged where they touch (a tensor passed
 * twice, neighbouring buffers), so no byte is fetched twice in a stage. A launch's read set is walked
 * once and kept (nd_mpi_reads_cache, below): only its gets are issued anew each time.
 */
#include <assert.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpi_internal.h"

int nd_mpi_make_rma(nd_mpi_ctx *c, uint8_t *mine, nd_error *err)
{
    int n = c->procs.nranks;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "false");
    int rc = MPI_Win_create(mine, (MPI_Aint)c->seg_bytes[c->procs.rank], 1, info, c->comm, &c->rma);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        c->rma = MPI_WIN_NULL;
        return nd_failc(err, ND_ESYS, "device over %d processes on %d nodes: MPI_Win_create of the RMA window failed",
                        n, c->nnodes);
    }
    MPI_Win_set_errhandler(c->rma, MPI_ERRORS_RETURN);
    /* One passive-target epoch for the device's lifetime: stages flush it, closing unlocks it. */
    if (MPI_Win_lock_all(MPI_MODE_NOCHECK, c->rma) != MPI_SUCCESS) /* the window is freed at close, collectively */
        return nd_failc(err, ND_ESYS, "device over %d processes: MPI_Win_lock_all of the RMA window failed", n);
    return 0;
}

int nd_mpi_check_tensor(const nd_device *dev, const nd_dist *d, nd_error *err)
{
    const nd_mpi_ctx *c = dev->procs->ctx;
    if (d->spec.buffer != ND_DRAM) /* an L1 entry is written by the core holding it */
        return 0;
    for (int64_t i = 0; i < d->list_cores && i < dev->ncores; ++i) { /* device core i writes entry i */
        int bank = nd_dist_core(d, i).x, h = c->rank_of_bank[bank], w = c->rank_of_core[i];
        if (c->node_of_rank[h] != c->node_of_rank[w])
            return nd_fail(err, "tensor over %d nodes: DRAM entry %lld is bank %d, held by process %d on node %d, but "
                                "core %lld, which writes it, runs on process %d on node %d; a core never writes "
                                "another node's memory: list the banks so that entry i is a bank of core i's node",
                           c->nnodes, (long long)i, bank, h, c->node_of_rank[h], (long long)i, w, c->node_of_rank[w]);
    }
    return 0;
}

/* A byte run of one remote process's segment: [disp, disp + len). */
typedef struct run {
    int64_t disp, len;
    int32_t rank;
} run;

typedef struct runs {
    run *v;
    int64_t n, cap;
} runs;

static int run_order(const void *a, const void *b)
{
    const run *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->disp < y->disp ? -1 : x->disp > y->disp;
}

/* A core-list entry's fetched bytes [lo, hi), as displacements in the segment of its process, whose
 * buffer starts at displacement entry; lo > hi: none. As an interval of the staging area (merged,
 * rounded out to OS pages), it starts at `at` in the area. */
typedef struct nd_mpi_span {
    int64_t lo, hi, entry, at;
    int32_t rank;
} nd_mpi_span;

/* A launch's read set beyond this process: runs held by other processes of its node (read in place,
 * counted only) and by other nodes' processes (fetched), and for the latter each entry's span; slot0:
 * the slot of entry 0 of the tensor being listed. */
typedef struct read_set {
    runs node, other;
    nd_mpi_span *spans;
    int64_t slot0;
} read_set;

static void runs_add(nd_mpi_ctx *c, runs *rs, int32_t rank, int64_t disp, int64_t len)
{
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? 2 * rs->cap : 64;
        run *v = realloc(rs->v, (size_t)rs->cap * sizeof *v);
        if (!v) /* the processes are in step: one that cannot go on must end the job */
            nd_mpi_die(c, "staging (out of memory for the list of pages to get)", MPI_ERR_NO_MEM);
        rs->v = v;
    }
    rs->v[rs->n++] = (run){disp, len, rank};
}

/* Where core-list entry i of t starts in the segment of the process holding it. */
static int64_t entry_disp(const nd_mpi_ctx *c, const nd_tensor *t, int64_t i)
{
    nd_core k = nd_dist_core(&t->dist, i);
    if (t->dist.spec.buffer == ND_DRAM)
        return c->bank_disp[k.x] + t->offset[i];
    return c->core_disp[(int64_t)k.y * t->dev->cfg.grid_x + k.x] + t->offset[i];
}

/* Bytes [off, off + len) of entry i of t into the read set (nothing when this process holds it). */
static void set_add(nd_mpi_ctx *c, read_set *set, const nd_tensor *t, int64_t i, int64_t off, int64_t len)
{
    int h = nd_tensor_rank_of(t, i);
    if (h == c->procs.rank || len <= 0)
        return;
    int64_t entry = entry_disp(c, t, i);
    if (c->node_of_rank[h] == c->node_of_rank[c->procs.rank]) {
        runs_add(c, &set->node, h, entry + off, len);
        return;
    }
    runs_add(c, &set->other, h, entry + off, len);
    nd_mpi_span *sp = &set->spans[set->slot0 + i];
    sp->rank = h, sp->entry = entry;
    sp->lo = entry + off < sp->lo ? entry + off : sp->lo;
    sp->hi = entry + off + len > sp->hi ? entry + off + len : sp->hi;
}

/* Entry i of t addressable whole for the call, when another node holds it: kernels may read pages of
 * the copy they read beyond those the read rule names (the generic matmul packs every column of b's rows,
 * say), whose values cannot change their output; such a page reads as zero or as what the staging area
 * held before, never faults. Not for an elementwise op (POINTWISE): its kernels read each input at the
 * coordinates of the output element they compute and nothing else, which launches ordered with nobody
 * rely on already (device.c, launch_local). */
static void set_whole(nd_mpi_ctx *c, read_set *set, const nd_tensor *t, int64_t i)
{
    int h = nd_tensor_rank_of(t, i);
    if (c->node_of_rank[h] == c->node_of_rank[c->procs.rank])
        return;
    nd_mpi_span *sp = &set->spans[set->slot0 + i];
    sp->rank = h, sp->entry = entry_disp(c, t, i);
    sp->lo = sp->entry < sp->lo ? sp->entry : sp->lo;
    sp->hi = sp->entry + t->dist.bytes_per_core > sp->hi ? sp->entry + t->dist.bytes_per_core : sp->hi;
}

/* The entries of copy `copy` (-1: all) of t. */
static void list_tensor(nd_mpi_ctx *c, const nd_tensor *t, int64_t copy, read_set *set)
{
    int64_t per = t->dist.layout.ncores, lo = copy < 0 ? 0 : copy * per, hi = copy < 0 ? t->ncores : lo + per;
    for (int64_t i = lo; i < hi; ++i)
        set_add(c, set, t, i, 0, t->dist.bytes_per_core);
}

int64_t nd_mpi_copies_read(const nd_read_rule *rule, const nd_tensor *in)
{
    return rule->kind == ND_READS_PARTS ? in->dist.spec.parts : 1;
}

int64_t nd_mpi_copy_read(const nd_read_rule *rule, const nd_tensor *in, int64_t id, int64_t q)
{
    int64_t seen = nd_tensor_copy_seen(in, id), per = in->dist.spec.replicas / in->dist.spec.parts;
    return rule->kind == ND_READS_PARTS ? q * per + seen % per : seen; /* nda_part_page_read's copy of part q */
}

int64_t nd_mpi_writer_core(const nd_mpi_ctx *c, const nd_tensor *t, int64_t i)
{
    int64_t ncores = c->core_lo[c->procs.nranks];
    if (t->dist.spec.buffer == ND_DRAM)
        return i < ncores ? i : -1;
    nd_core k = nd_dist_core(&t->dist, i);
    return (int64_t)k.y * t->dev->cfg.grid_x + k.x;
}

int nd_mpi_writer_of(const nd_mpi_ctx *c, const nd_tensor *t, int64_t i)
{
    int64_t id = nd_mpi_writer_core(c, t, i);
    return id < 0 ? -1 : c->rank_of_core[id];
}

/* Whether in broadcasts to out as numpy does (aligned right, each dim equal or 1), its copies whole. */
static bool broadcasts(const nd_tensor *in, const nd_tensor *out)
{
    const nd_dist_spec *i = &in->dist.spec, *o = &out->dist.spec;
    if (i->parts != 1 || o->parts != 1 || i->rank > o->rank)
        return false;
    for (int j = 0; j < i->rank; ++j)
        if (i->shape[j] != 1 && i->shape[j] != o->shape[j + o->rank - i->rank])
            return false;
    return true;
}

/* Whether the rule says which pages of input k (of nin) the output reads: an input whose copies are
 * whole (no pending parts; a core reads the copy it sees, nd_tensor_copy_seen) and whose dims the rule
 * maps (an index letter per dim of it and of the output, whatever called the launch checked; axes or
 * perm over its rank). */
bool nd_mpi_rule_applies(const nd_read_rule *rule, int k, int nin, const nd_tensor *in, const nd_tensor *out)
{
    const nd_dist_spec *i = &in->dist.spec, *o = &out->dist.spec;
    if (rule->kind == ND_READS_PARTS) /* every part, each at the output's coordinates */
        return nin == 1 && o->parts == 1 && i->rank == o->rank &&
               memcmp(i->shape, o->shape, (size_t)i->rank * sizeof *i->shape) == 0;
    if (i->parts != 1)
        return false;
    switch (rule->kind) {
    case ND_READS_POINTWISE:
        return broadcasts(in, out);
    case ND_READS_LETTERS:
        return (int)strlen(rule->indices[k]) == i->rank && (int)strlen(rule->indices[nin]) == o->rank;
    case ND_READS_AXES:
        return o->rank == i->rank || o->rank == i->rank - rule->naxes;
    case ND_READS_PERM:
        return o->rank == i->rank && rule->naxes == i->rank;
    default:
        return false;
    }
}

/* The dim of input k that a chunked rule's part reads a chunk of (nd_read_rule.chunked), or -1: a
 * reduction's first listed dim in dim order (reduce.c folds its chunk of it); an einsum's one letter
 * that the output lacks (matmul.c and einsum.c split the contraction's extent, which is that letter's
 * when there is one; with several, -1: read whole). */
static int chunked_dim(const nd_read_rule *rule, int k, int nin)
{
    if (rule->kind == ND_READS_AXES) {
        int first = -1;
        for (int a = 0; a < rule->naxes; ++a)
            first = first < 0 || rule->axes[a] < first ? rule->axes[a] : first;
        return first;
    }
    if (rule->kind != ND_READS_LETTERS)
        return -1;
    char lacked = 0;
    for (int t = 0; t < nin; ++t)
        for (const char *l = rule->indices[t]; *l; ++l)
            if (!strchr(rule->indices[nin], *l)) {
                if (lacked && lacked != *l)
                    return -1;
                lacked = *l;
            }
    const char *at = lacked ? strchr(rule->indices[k], lacked) : NULL;
    return at ? (int)(at - rule->indices[k]) : -1;
}

/* [elo[j], ehi[j]) of input k's dim j: the elements the output elements in [olo, ohi) of part `part`
 * read. */
static void read_box(const nd_read_rule *rule, int k, int nin, const nd_tensor *in, const nd_tensor *out,
                     int64_t part, const int64_t *olo, const int64_t *ohi, int64_t *elo, int64_t *ehi)
{
    const nd_dist_spec *i = &in->dist.spec, *o = &out->dist.spec;
    bool listed[ND_MAX_RANK] = {false};
    for (int a = 0; rule->kind == ND_READS_AXES && a < rule->naxes; ++a)
        listed[rule->axes[a]] = true;
    for (int j = 0, kept = 0; j < i->rank; ++j) {
        elo[j] = 0, ehi[j] = i->shape[j]; /* the whole dim, unless the rule fixes it */
        if (rule->kind == ND_READS_PARTS || (rule->kind == ND_READS_POINTWISE && i->shape[j] != 1)) {
            elo[j] = olo[j + o->rank - i->rank], ehi[j] = ohi[j + o->rank - i->rank];
        } else if (rule->kind == ND_READS_LETTERS) {
            const char *at = strchr(rule->indices[nin], rule->indices[k][j]);
            if (at)
                elo[j] = olo[at - rule->indices[nin]], ehi[j] = ohi[at - rule->indices[nin]];
        } else if (rule->kind == ND_READS_AXES && !listed[j]) { /* a listed dim is read whole */
            int d = o->rank == i->rank ? j : kept++; /* kept in place, or the output without the listed dims */
            elo[j] = olo[d], ehi[j] = ohi[d];
        }
    }
    for (int d = 0; rule->kind == ND_READS_PERM && d < o->rank; ++d) /* output dim d is input dim perm[d] */
        elo[rule->axes[d]] = olo[d], ehi[rule->axes[d]] = ohi[d];
    int j = rule->chunked && o->parts > 1 ? chunked_dim(rule, k, nin) : -1;
    if (j >= 0) /* part q's chunk of the dim it reads whole, as the kernel's nda_part_range gives it */
        nda_chunk(i->shape[j], o->parts, part, &elo[j], &ehi[j]);
}

void nd_mpi_page_reads(const nd_read_rule *rule, int k, int nin, const nd_tensor *out, int64_t opage, int64_t part,
                       const nd_tensor *in, void (*visit)(void *ctx, const nd_tensor *in, nd_loc loc), void *ctx)
{
    const nd_dist_spec *o = &out->dist.spec, *i = &in->dist.spec;
    int64_t oc[ND_MAX_RANK], olo[ND_MAX_RANK], ohi[ND_MAX_RANK], elo[ND_MAX_RANK], ehi[ND_MAX_RANK];
    int64_t lo[ND_MAX_RANK], hi[ND_MAX_RANK], at[ND_MAX_RANK];
    nd_dist_page_coord(&out->dist, opage, oc);
    for (int d = 0; d < o->rank; ++d) {
        olo[d] = oc[d] * o->page[d];
        ohi[d] = olo[d] + o->page[d] < o->shape[d] ? olo[d] + o->page[d] : o->shape[d];
    }
    read_box(rule, k, nin, in, out, part, olo, ohi, elo, ehi);
    for (int j = 0; j < i->rank; ++j) { /* the input's page range along dim j */
        if (ehi[j] <= elo[j])
            return; /* reads nothing */
        lo[j] = at[j] = elo[j] / i->page[j];
        hi[j] = (ehi[j] - 1) / i->page[j];
    }
    for (;;) {
        visit(ctx, in, nd_layout_locate_id(&in->dist.squeezed, nd_dist_page_id(&in->dist, at)));
        int j = i->rank - 1; /* next page: odometer over the range */
        while (j >= 0 && ++at[j] > hi[j])
            at[j] = lo[j], --j;
        if (j < 0)
            break;
    }
}

typedef struct list_ctx {
    nd_mpi_ctx *c;
    read_set *set;
    int64_t copy;     /* the input's copy that the reading core sees */
    uint8_t *listed;  /* a bit per page slot of every entry of the input: listed already */
    int64_t slots;    /* page slots per entry */
} list_ctx;

/* One input page an output page reads, into the read set once (many output pages read the same input
 * page: a transpose's output rows each read every input row page, and listing each time cost more than
 * the launch, 56 ms against 1.5 for a 1024 x 1024 transpose over 4 processes). */
static void list_page(void *ctx, const nd_tensor *in, nd_loc loc)
{
    const list_ctx *l = ctx;
    int64_t pb = in->dist.page_bytes, i = l->copy * in->dist.layout.ncores + loc.core, bit = i * l->slots + loc.offset;
    if (l->listed[bit / 8] & (1u << (bit % 8)))
        return;
    l->listed[bit / 8] |= (uint8_t)(1u << (bit % 8));
    set_add(l->c, l->set, in, i, loc.offset * pb, pb);
}

/* Whether page p of in is at the entry and slot of page p of out, for every p: the same shape, page
 * box, shards in pages, entries and strategy (the layout's placement depends on nothing else). */
bool nd_mpi_same_placement(const nd_tensor *in, const nd_tensor *out)
{
    const nd_layout *a = &in->dist.layout, *b = &out->dist.layout;
    if (in->dist.spec.rank != out->dist.spec.rank || !nd_dist_same_paging(&in->dist, &out->dist) ||
        a->rank != b->rank || a->ncores != b->ncores || a->strategy != b->strategy)
        return false;
    for (int j = 0; j < a->rank; ++j)
        if (a->pages[j] != b->pages[j] || a->shard[j] != b->shard[j])
            return false;
    return true;
}

/* Input k's pages that the output pages this process's cores write read under the rule, in the copy of
 * the input each writing core sees (every copy of out holds the same elements). Walks the entries this
 * process writes and their pages alone, so its cost is the process's share, not the tensor's; visits an
 * entry once per input copy read for it; and skips, for an elementwise op, an entry whose input pages
 * sit where its output pages do on a core of this process. */
static void list_rule(nd_mpi_ctx *c, const nd_read_rule *rule, int k, int nin, const nd_tensor *out,
                      const nd_tensor *in, read_set *set)
{
    const nd_dist *d = &out->dist;
    int64_t per = d->layout.ncores, per_in = in->dist.layout.ncores, ncopies = in->dist.spec.replicas;
    bool same = rule->kind == ND_READS_POINTWISE && nd_mpi_same_placement(in, out);
    int64_t slots = in->dist.page_bytes > 0 ? in->dist.bytes_per_core / in->dist.page_bytes : 0;
    /* parts read apart: a chunked rule's parts read different pages of one input copy */
    int64_t nparts = rule->chunked ? d->spec.parts : 1, per_part = d->spec.replicas / d->spec.parts;
    list_ctx l = {c, set, 0, calloc((size_t)((ncopies * per_in * slots + 7) / 8 + 1), 1), slots};
    /* read: the copies this process's cores read; done: the copies and parts walked for entry e */
    bool *read = calloc((size_t)ncopies, sizeof *read), *done = calloc((size_t)(ncopies * nparts), sizeof *done);
    if (!read || !done || !l.listed)
        nd_mpi_die(c, "staging (out of memory)", MPI_ERR_NO_MEM);
    for (int64_t e = 0; e < per; ++e) {
        memset(done, 0, (size_t)(ncopies * nparts) * sizeof *done);
        for (int64_t q = 0; q < d->spec.replicas; ++q) {
            int64_t id = nd_mpi_writer_core(c, out, q * per + e), part = q / per_part;
            for (int64_t j = 0; id >= 0 && c->rank_of_core[id] == c->procs.rank && j < nd_mpi_copies_read(rule, in);
                 ++j) {
                int64_t copy = nd_mpi_copy_read(rule, in, id, j), walked = copy * nparts + (nparts > 1 ? part : 0);
                if (done[walked])
                    continue;
                read[copy] = done[walked] = true;
                if (same && nd_tensor_rank_of(in, copy * per_in + e) == c->procs.rank)
                    continue;
                l.copy = copy;
                for (nd_page_iter it = nd_page_iter_begin(&d->squeezed, e); it.valid; nd_page_iter_next(&it))
                    nd_mpi_page_reads(rule, k, nin, out, it.page_id, part, in, list_page, &l);
            }
        }
    }
    /* the kernels of these two read nothing beyond the rule (set_whole; all_reduce.c's reads are its rule) */
    bool exact = rule->kind == ND_READS_POINTWISE || rule->kind == ND_READS_PARTS;
    for (int64_t r = 0; r < ncopies && !exact; ++r)
        for (int64_t j = 0; read[r] && j < per_in; ++j)
            set_whole(c, set, in, r * per_in + j);
    free(read);
    free(done);
    free(l.listed);
}

/* Sorts and merges touching runs of one process; returns the bytes they cover. */
static int64_t runs_merge(runs *rs)
{
    if (rs->n == 0)
        return 0;
    qsort(rs->v, (size_t)rs->n, sizeof *rs->v, run_order);
    int64_t out = 0, bytes = 0;
    for (int64_t i = 1; i < rs->n; ++i) {
        run *last = &rs->v[out], *r = &rs->v[i];
        if (r->rank == last->rank && r->disp <= last->disp + last->len) {
            int64_t end = r->disp + r->len > last->disp + last->len ? r->disp + r->len : last->disp + last->len;
            last->len = end - last->disp;
        } else {
            rs->v[++out] = *r;
        }
    }
    rs->n = out + 1;
    for (int64_t i = 0; i < rs->n; ++i)
        bytes += rs->v[i].len;
    return bytes;
}

/* The staging area's intervals of one stage, sorted by process and displacement. */
typedef struct intervals {
    nd_mpi_span *v;
    int64_t n;
} intervals;

static int span_order(const void *a, const void *b)
{
    const nd_mpi_span *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The interval holding byte disp of process rank's segment (one does: every fetched byte is in its
 * entry's span). */
static const nd_mpi_span *interval_of(const intervals *iv, int32_t rank, int64_t disp)
{
    int64_t lo = 0, hi = iv->n; /* the last interval at or before (rank, disp) */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        const nd_mpi_span *m = &iv->v[mid];
        if (m->rank < rank || (m->rank == rank && m->lo <= disp))
            lo = mid;
        else
            hi = mid;
    }
    assert(iv->n > 0 && iv->v[lo].rank == rank && iv->v[lo].lo <= disp && disp < iv->v[lo].hi);
    return &iv->v[lo];
}

/* Where byte disp of process rank's segment lands in the staging area. Computed as an integer: for an
 * entry's base pointer, the entry's start may lie before its span and outside the area, and the
 * accessor only ever adds the offset of a fetched page to it. */
static uint8_t *staged_at(const nd_mpi_staging *st, const intervals *iv, int32_t rank, int64_t disp,
                          const nd_mpi_span *in)
{
    if (!in)
        in = interval_of(iv, rank, disp);
    return (uint8_t *)((uintptr_t)st->area + (uintptr_t)(in->at + (disp - in->lo)));
}

/* The spans of nslots entries, as intervals of the staging area: each rounded out to OS pages (so a byte
 * keeps its address modulo an OS page, and with it every alignment a kernel's loads rely on), sorted,
 * merged where they overlap or touch, laid end to end from the area's start. Returns the bytes they
 * take. */
static int64_t lay_intervals(nd_mpi_ctx *c, const nd_mpi_span *spans, int64_t nslots, intervals *iv)
{
    int64_t page = sysconf(_SC_PAGESIZE), n = 0, used = 0;
    iv->v = malloc((size_t)(nslots ? nslots : 1) * sizeof *iv->v);
    if (!iv->v)
        nd_mpi_die(c, "staging (out of memory for the staging area's intervals)", MPI_ERR_NO_MEM);
    for (int64_t k = 0; k < nslots; ++k)
        if (spans[k].lo < spans[k].hi) {
            nd_mpi_span sp = spans[k];
            sp.lo -= sp.lo % page;
            sp.hi += (page - sp.hi % page) % page;
            iv->v[n++] = sp;
        }
    qsort(iv->v, (size_t)n, sizeof *iv->v, span_order);
    int64_t out = 0;
    for (int64_t k = 1; k < n; ++k) {
        nd_mpi_span *last = &iv->v[out], *sp = &iv->v[k];
        if (sp->rank == last->rank && sp->lo <= last->hi)
            last->hi = sp->hi > last->hi ? sp->hi : last->hi;
        else
            iv->v[++out] = *sp;
    }
    iv->n = n ? out + 1 : 0;
    for (int64_t k = 0; k < iv->n; ++k) {
        iv->v[k].at = used;
        used += iv->v[k].hi - iv->v[k].lo;
    }
    return used;
}

/* The staging area grown to at least `used` bytes; its contents need not survive, as every stage
 * fetches anew. */
static void area_fit(nd_mpi_ctx *c, int64_t used)
{
    nd_mpi_staging *st = &c->staging;
    if ((size_t)used <= st->cap)
        return;
    if (st->area)
        munmap(st->area, st->cap);
    /* MAP_NORESERVE: a page costs memory once a get writes it. Read-only but while gets fill it: a kernel
     * that stores into another node's page (nda_page_write of a page its core does not own) faults, where
     * a writable area would take the store and lose it silently. */
    void *m = mmap(NULL, (size_t)used, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    st->area = m == MAP_FAILED ? NULL : m;
    st->cap = m == MAP_FAILED ? 0 : (size_t)used;
    if (!st->area) /* the processes are in step: one that cannot go on must end the job */
        nd_mpi_die(c, "mmap of the staging area for other nodes' pages", MPI_ERR_NO_MEM);
}

/* Each staged tensor's base pointers for the call: its own node's entries as they are, another node's
 * into the staging area at its span, NULL where nothing of it was fetched. */
static void set_bases(nd_mpi_ctx *c, const nd_tensor *const *ts, int n, const nd_mpi_span *spans,
                      const intervals *iv)
{
    nd_mpi_staging *st = &c->staging;
    for (int k = 0, slot = 0; k < n; slot += (int)ts[k]->ncores, ++k)
        for (int64_t i = 0; i < ts[k]->ncores; ++i) {
            const nd_mpi_span *sp = &spans[slot + i];
            int h = nd_tensor_rank_of(ts[k], i);
            if (c->node_of_rank[h] == c->node_of_rank[c->procs.rank])
                st->bases[slot + i] = ts[k]->base[i];
            else
                st->bases[slot + i] = sp->lo < sp->hi ? staged_at(st, iv, h, sp->entry, interval_of(iv, h, sp->lo))
                                                      : NULL;
        }
}

/* Gets that fit MPI's int counts: at most this many bytes each. */
enum { GET_MAX = 1 << 30 };

static void get_bytes(nd_mpi_ctx *c, const intervals *iv, int rank, int64_t disp, int64_t len, int64_t *gets)
{
    for (int64_t at = 0; at < len; at += GET_MAX) {
        int part = (int)(len - at < GET_MAX ? len - at : GET_MAX);
        int rc = MPI_Get(staged_at(&c->staging, iv, rank, disp + at, NULL), part, MPI_BYTE, rank,
                         (MPI_Aint)(disp + at), part, MPI_BYTE, c->rma);
        if (rc != MPI_SUCCESS)
            nd_mpi_die(c, "MPI_Get of another node's pages", rc);
        ++*gets;
    }
}

/* One get of runs v[0..n) of one process (all under GET_MAX, and n <= INT_MAX), through two hindexed
 * datatypes: the runs' addresses in the staging area on this side, their displacements in the
 * segment on the other. */
static void get_batched(nd_mpi_ctx *c, const intervals *iv, const run *v, int n, int64_t *gets)
{
    if (n == 1) {
        get_bytes(c, iv, v[0].rank, v[0].disp, v[0].len, gets);
        return;
    }
    int *lens = malloc((size_t)n * sizeof *lens);
    MPI_Aint *disps = malloc((size_t)n * sizeof *disps), *addrs = malloc((size_t)n * sizeof *addrs);
    if (!lens || !disps || !addrs)
        nd_mpi_die(c, "staging (out of memory for a datatype)", MPI_ERR_NO_MEM);
    for (int i = 0; i < n; ++i) {
        lens[i] = (int)v[i].len;
        disps[i] = (MPI_Aint)v[i].disp;
        MPI_Get_address(staged_at(&c->staging, iv, v[i].rank, v[i].disp, NULL), &addrs[i]);
    }
    MPI_Datatype here, there;
    int rc = MPI_Type_create_hindexed(n, lens, addrs, MPI_BYTE, &here);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&here);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_create_hindexed(n, lens, disps, MPI_BYTE, &there);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&there);
    if (rc != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Type_create_hindexed of another node's pages", rc);
    if ((rc = MPI_Get(MPI_BOTTOM, 1, here, v[0].rank, 0, 1, there, c->rma)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Get of another node's pages", rc);
    ++*gets;
    MPI_Type_free(&here); /* the pending get keeps its own references */
    MPI_Type_free(&there);
    free(lens);
    free(disps);
    free(addrs);
}

/* Per page: the runs cut at every page_bytes (entries are whole pages from their start). */
static void get_per_page(nd_mpi_ctx *c, const intervals *iv, const run *r, int64_t page_bytes, int64_t *gets)
{
    for (int64_t at = 0; at < r->len; at += page_bytes)
        get_bytes(c, iv, r->rank, r->disp + at, r->len - at < page_bytes ? r->len - at : page_bytes, gets);
}

/* The runs' gets, process by process (runs sorted by process): one per page; or batched, one per
 * process, unless a run is longer than one get may be (then a get per run, cut at GET_MAX) or the
 * process has more than INT_MAX runs (then a batch per INT_MAX). */
static int64_t issue(nd_mpi_ctx *c, const intervals *iv, const runs *rs, int64_t page_bytes)
{
    int64_t gets = 0;
    for (int64_t i = 0, j; i < rs->n; i = j) {
        bool fits = true; /* every run of the group fits an int count */
        for (j = i; j < rs->n && rs->v[j].rank == rs->v[i].rank && j - i < INT_MAX; ++j)
            fits &= rs->v[j].len <= GET_MAX;
        if (c->gets == ND_MPI_GETS_BATCHED && fits) {
            get_batched(c, iv, &rs->v[i], (int)(j - i), &gets);
            continue;
        }
        for (int64_t k = i; k < j; ++k)
            if (c->gets == ND_MPI_GETS_PER_PAGE)
                get_per_page(c, iv, &rs->v[k], page_bytes, &gets);
            else
                get_bytes(c, iv, rs->v[k].rank, rs->v[k].disp, rs->v[k].len, &gets);
    }
    return gets;
}

/* Room for nslots entries' base pointers. */
static void make_slots(nd_mpi_ctx *c, int64_t nslots)
{
    nd_mpi_staging *st = &c->staging;
    if (nslots <= st->slots)
        return;
    uint8_t **b = realloc(st->bases, (size_t)nslots * sizeof *b);
    if (!b)
        nd_mpi_die(c, "staging (out of memory for the entries' base pointers)", MPI_ERR_NO_MEM);
    st->bases = b;
    st->slots = nslots;
}

/* Fetches the runs into the area (filled below `used`): writable only while gets fill it. */
static int64_t fetch(nd_mpi_ctx *c, const intervals *iv, const runs *rs, int64_t used, int64_t page_bytes)
{
    nd_mpi_staging *st = &c->staging;
    if (mprotect(st->area, (size_t)used, PROT_READ | PROT_WRITE) != 0)
        nd_mpi_die(c, "mprotect of the staging area (writable, for the gets)", MPI_ERR_OTHER);
    int64_t gets = issue(c, iv, rs, page_bytes);
    /* every get of this stage has landed; none issued, nothing to wait for (a flush may cost a round
     * trip to every process, with the pt2pt one-sided component) */
    int rc = gets ? MPI_Win_flush_all(c->rma) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Win_flush_all after the gets", rc);
    if (mprotect(st->area, (size_t)used, PROT_READ) != 0)
        nd_mpi_die(c, "mprotect of the staging area (read-only again)", MPI_ERR_OTHER);
    return gets;
}

/* ---------------------------------------------------------------- read sets, walked once per launch */

enum { READS_TENSORS = 17, READS_RULE_TEXT = 256, READS_CACHE = 16 };

/* What a launch's read set depends on beyond the device and this process's place in it (the context's
 * own): its tensors, by serial (a tensor's distribution and arena offsets are fixed while it lives, and
 * no serial is given twice), which of them are inputs, and its read rule, written out. */
typedef struct reads_key {
    int ninputs, ntensors;            /* the inputs, then the output if any; ntensors 0: an empty slot */
    uint64_t serial[READS_TENSORS];
    char rule[READS_RULE_TEXT];
} reads_key;

/* A read set as staging uses it: what to fetch, where each entry lies in the staging area, what it
 * counts. */
typedef struct reads {
    reads_key key;
    runs other;                /* runs of other nodes' processes, merged */
    int64_t bytes, node_bytes; /* their bytes; the bytes of this node's other processes, read in place */
    int64_t page_bytes;        /* the smallest page of the tensors: per-page gets */
    int64_t nslots;            /* the tensors' core-list entries, tensor after tensor */
    nd_mpi_span *spans;        /* [nslots]: each entry's bytes fetched, or addressable (set_whole) */
    intervals iv;              /* the spans as intervals of the staging area, laid end to end */
    int64_t used;              /* the area's bytes they take */
} reads;

/* The last launches' read sets, replaced in turn: walking one costs the output pages this process
 * writes times the input pages each reads (a 1024 x 1024 transpose over 2 nodes of 1: 40% of the
 * launch), and nothing a launch changes moves it. */
struct nd_mpi_reads_cache {
    reads slot[READS_CACHE];
    int next;
};

/* The rule written out as a key holds it (all that the walk reads of it); false when it does not fit,
 * and then the read set is walked each time. */
static bool rule_text(const nd_read_rule *rule, int nin, char *buf, size_t len)
{
    if (!rule)
        return snprintf(buf, len, "every page") < (int)len;
    int at = snprintf(buf, len, "kind %d%s, axes", (int)rule->kind, rule->chunked ? ", chunked" : "");
    for (int a = 0; a < rule->naxes && at < (int)len; ++a)
        at += snprintf(buf + at, len - (size_t)at, " %d", rule->axes[a]);
    for (int k = 0; rule->kind == ND_READS_LETTERS && k <= nin && at < (int)len; ++k)
        at += snprintf(buf + at, len - (size_t)at, ", %s", rule->indices[k]);
    return at < (int)len;
}

static bool key_of(const nd_tensor *const *ts, int n, const nd_tensor *out, const nd_read_rule *rule, reads_key *k)
{
    memset(k, 0, sizeof *k);
    if (n + 1 > READS_TENSORS)
        return false;
    k->ninputs = n, k->ntensors = n + (out != NULL);
    for (int i = 0; i < n; ++i)
        k->serial[i] = ts[i]->serial;
    if (out)
        k->serial[n] = out->serial;
    return rule_text(rule, n, k->rule, sizeof k->rule);
}

static bool same_key(const reads_key *a, const reads_key *b)
{
    if (a->ninputs != b->ninputs || a->ntensors != b->ntensors || strcmp(a->rule, b->rule) != 0)
        return false;
    for (int i = 0; i < a->ntensors; ++i)
        if (a->serial[i] != b->serial[i])
            return false;
    return true;
}

static void reads_free(reads *r)
{
    free(r->other.v);
    free(r->spans);
    free(r->iv.v);
    *r = (reads){0};
}

static reads *reads_cached(nd_mpi_ctx *c, const reads_key *k)
{
    struct nd_mpi_reads_cache *rc = c->staging.reads;
    for (int i = 0; rc && i < READS_CACHE; ++i)
        if (rc->slot[i].key.ntensors > 0 && same_key(&rc->slot[i].key, k))
            return &rc->slot[i];
    return NULL;
}

/* The slot the next read set takes, its last one freed. */
static reads *reads_slot(nd_mpi_ctx *c)
{
    nd_mpi_staging *st = &c->staging;
    if (!st->reads && !(st->reads = calloc(1, sizeof *st->reads)))
        nd_mpi_die(c, "staging (out of memory for the read sets)", MPI_ERR_NO_MEM);
    reads *r = &st->reads->slot[st->reads->next];
    st->reads->next = (st->reads->next + 1) % READS_CACHE;
    reads_free(r);
    return r;
}

/* Walks the read set of a launch (out and rule) or of a host read (copy) into r. */
static void walk(nd_mpi_ctx *c, const nd_tensor *const *ts, int n, const nd_tensor *out, const nd_read_rule *rule,
                 int64_t copy, reads *r)
{
    r->page_bytes = INT64_MAX; /* per-page gets: the smallest page among the tensors */
    for (int i = 0; i < n; ++i)
        r->nslots += ts[i]->ncores;
    if (!(r->spans = malloc((size_t)(r->nslots ? r->nslots : 1) * sizeof *r->spans)))
        nd_mpi_die(c, "staging (out of memory for the entries' spans)", MPI_ERR_NO_MEM);
    for (int64_t k = 0; k < r->nslots; ++k)
        r->spans[k] = (nd_mpi_span){INT64_MAX, INT64_MIN, 0, 0, -1};
    read_set set = {{0}, {0}, r->spans, 0};
    for (int i = 0; i < n; set.slot0 += ts[i]->ncores, ++i) {
        if (out && rule && copy < 0 && nd_mpi_rule_applies(rule, i, n, ts[i], out))
            list_rule(c, rule, i, n, out, ts[i], &set);
        else
            list_tensor(c, ts[i], copy, &set);
        if (ts[i]->dist.page_bytes > 0 && ts[i]->dist.page_bytes < r->page_bytes)
            r->page_bytes = ts[i]->dist.page_bytes;
    }
    r->bytes = runs_merge(&set.other);
    r->node_bytes = runs_merge(&set.node);
    free(set.node.v);
    r->other = set.other;
    r->used = lay_intervals(c, r->spans, r->nslots, &r->iv);
}

/* Fetches r's runs and sets the call's base pointers; a launch's statistics are its own. */
static void stage_reads(nd_mpi_ctx *c, const nd_tensor *const *ts, int n, const reads *r, bool launch,
                        uint8_t *const **bases)
{
    int64_t gets = 0;
    double t0 = nd_mpi_now();
    if (r->iv.n > 0) { /* several nodes, and entries of another to address (pages of them to fetch, or not) */
        area_fit(c, r->used);
        gets = r->other.n > 0 ? fetch(c, &r->iv, &r->other, r->used, r->page_bytes) : 0;
        make_slots(c, r->nslots);
        set_bases(c, ts, n, r->spans, &r->iv);
        for (int i = 0, slot = 0; i < n; slot += (int)ts[i]->ncores, ++i)
            bases[i] = c->staging.bases + slot;
    }
    if (launch) { /* this launch's alone: one that asks for no statistics is never gathered */
        c->mine.node_bytes = r->node_bytes;
        c->mine.staged_bytes = r->bytes;
        c->mine.gets = gets;
        c->mine.stage_seconds = nd_mpi_now() - t0;
        c->mine.reserved_bytes = c->node_window_bytes + (int64_t)c->staging.cap;
        c->mine.staging_bytes = (int64_t)c->staging.cap;
    }
}

void nd_mpi_stage(nd_device *dev, const nd_tensor *const *ts, int n, const nd_tensor *out, const nd_read_rule *rule,
                  int64_t copy, bool launch, uint8_t *const **bases)
{
    nd_mpi_ctx *c = dev->procs->ctx;
    for (int i = 0; i < n; ++i)
        bases[i] = ts[i]->base;
    if (!launch && c->nnodes == 1) /* a host read on one node: every page is in the shared window */
        return;
    reads_key key;
    const bool keyed = launch && copy < 0 && key_of(ts, n, out, rule, &key);
    reads once = {0}, *r = keyed ? reads_cached(c, &key) : NULL;
    if (!r && keyed) { /* walked once, kept */
        r = reads_slot(c);
        walk(c, ts, n, out, rule, copy, r);
        r->key = key;
    }
    if (!r) /* a host read (a list of entries, no walk), or a key that does not fit */
        walk(c, ts, n, out, rule, copy, r = &once);
    stage_reads(c, ts, n, r, launch, bases);
    reads_free(&once);
}

void nd_mpi_staging_free(nd_mpi_staging *s)
{
    if (s->area)
        munmap(s->area, s->cap);
    for (int i = 0; s->reads && i < READS_CACHE; ++i)
        reads_free(&s->reads->slot[i]);
    free(s->reads);
    free(s->bases);
    *s = (nd_mpi_staging){0};
}
