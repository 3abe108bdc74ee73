/*
 * stage_mpi.c - the pages of other nodes: the local mirror their base pointers point into, the RMA
 * window that exposes each process's segment, and staging, the gets that fill the mirror before a
 * launch or a host read. Used only over several nodes; within a node pages are shared memory
 * (device_mpi.c).
 *
 * The mirror holds each other node's process's segment at its own offset, laid out exactly as that
 * segment (its cores' L1, then its banks: nd_mpi_lay_segment), so a byte at displacement d in process
 * r's segment is mirrored at seg_base[r] + d: a get's origin and target are described by the same
 * displacements, and one derived datatype serves both sides.
 *
 * The read set, correct for every op: every core-list entry (the whole buffer a tensor has on a core
 * or bank: its pages and their padding) of every copy of every input tensor, held by a process on
 * another node. Kernels read pages only through base and all_base, which point into that set, and
 * only inputs' pages of other cores (owner computes), so nothing a kernel reads is left unfetched.
 * Where the op declares what its output elements read (nd_read_rule: elementwise from EXPR, index
 * letters, an axes or perm list), for an input of one whole copy only the input pages holding the
 * elements the output pages this process's cores write read, found from the distribution model page by
 * page. Runs are
 * listed per remote process, sorted by displacement and merged where they touch (a tensor passed
 * twice, neighbouring buffers), so no byte is fetched twice in a stage.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpi_internal.h"

int nd_mpi_make_mirror(nd_mpi_ctx *c, const nd_device_config *cfg, uint8_t **l1, uint8_t **banks, nd_error *err)
{
    int me = c->procs.rank;
    size_t total = 0;
    for (int r = 0; r < c->procs.nranks; ++r)
        if (c->node_of_rank[r] != c->node_of_rank[me])
            total += (size_t)c->seg_bytes[r];
    if (total == 0)
        return 0;
    /* MAP_NORESERVE: reserving the other nodes' whole memory costs address space only; a page costs
     * memory once a get writes it. Read-only but while gets fill it (nd_mpi_stage): a kernel that stores
     * into another node's page (nda_page_write of a page its core does not own) faults, where a
     * writable mirror would take the store and lose it silently. */
    void *m = mmap(NULL, total, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return nd_failc(err, ND_ENOMEM, "device over %d processes on %d nodes: cannot reserve %zu bytes of address "
                                        "space for the mirror of the other nodes' memory", c->procs.nranks,
                        c->nnodes, total);
    c->mirror = m;
    c->mirror_bytes = total;
    size_t at = 0;
    for (int r = 0; r < c->procs.nranks; ++r)
        if (c->node_of_rank[r] != c->node_of_rank[me]) {
            c->seg_base[r] = c->mirror + at;
            nd_mpi_lay_segment(c, cfg, r, c->seg_base[r], l1, banks);
            at += (size_t)c->seg_bytes[r];
        }
    return 0;
}

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

/* A launch's read set beyond this process: runs held by other processes of its node (read in place,
 * counted only) and by other nodes' processes (fetched). */
typedef struct read_set {
    runs node, other;
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

/* Bytes at p, held by process h, into the read set (nothing when h is this process). */
static void set_add(nd_mpi_ctx *c, read_set *set, int h, const uint8_t *p, int64_t len)
{
    if (h != c->procs.rank && len > 0)
        runs_add(c, c->node_of_rank[h] == c->node_of_rank[c->procs.rank] ? &set->node : &set->other, h,
                 p - c->seg_base[h], len);
}

/* The entries of copy `copy` (-1: all) of t. */
static void list_tensor(nd_mpi_ctx *c, const nd_tensor *t, int64_t copy, read_set *set)
{
    int64_t per = t->dist.layout.ncores, lo = copy < 0 ? 0 : copy * per, hi = copy < 0 ? t->ncores : lo + per;
    for (int64_t i = lo; i < hi; ++i)
        set_add(c, set, nd_tensor_rank_of(t, i), t->base[i], t->dist.bytes_per_core);
}

int nd_mpi_writer_of(const nd_mpi_ctx *c, const nd_tensor *t, int64_t i)
{
    int64_t ncores = c->core_lo[c->procs.nranks];
    if (t->dist.spec.buffer == ND_DRAM)
        return i < ncores ? c->rank_of_core[i] : -1;
    return nd_tensor_rank_of(t, i);
}

/* Whether this process's cores write core-list entry i of t. */
static bool writes_entry(const nd_mpi_ctx *c, const nd_tensor *t, int64_t i)
{
    return nd_mpi_writer_of(c, t, i) == c->procs.rank;
}

/* Whether in broadcasts to out as numpy does (aligned right, each dim equal or 1), as one whole copy. */
static bool broadcasts(const nd_tensor *in, const nd_tensor *out)
{
    const nd_dist_spec *i = &in->dist.spec, *o = &out->dist.spec;
    if (i->replicas != 1 || i->parts != 1 || o->parts != 1 || i->rank > o->rank)
        return false;
    for (int j = 0; j < i->rank; ++j)
        if (i->shape[j] != 1 && i->shape[j] != o->shape[j + o->rank - i->rank])
            return false;
    return true;
}

/* Whether the rule says which pages of input k (of nin) the output reads: an input of one whole copy
 * whose dims the rule maps (an index letter per dim of it and of the output, whatever called the launch
 * checked; axes or perm over its rank). */
bool nd_mpi_rule_applies(const nd_read_rule *rule, int k, int nin, const nd_tensor *in, const nd_tensor *out)
{
    const nd_dist_spec *i = &in->dist.spec, *o = &out->dist.spec;
    if (i->replicas != 1 || i->parts != 1)
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

/* [elo[j], ehi[j]) of input k's dim j: the elements the output elements in [olo, ohi) read. */
static void read_box(const nd_read_rule *rule, int k, int nin, const nd_tensor *in, const nd_tensor *out,
                     const int64_t *olo, const int64_t *ohi, int64_t *elo, int64_t *ehi)
{
    const nd_dist_spec *i = &in->dist.spec, *o = &out->dist.spec;
    bool listed[ND_MAX_RANK] = {false};
    for (int a = 0; rule->kind == ND_READS_AXES && a < rule->naxes; ++a)
        listed[rule->axes[a]] = true;
    for (int j = 0, kept = 0; j < i->rank; ++j) {
        elo[j] = 0, ehi[j] = i->shape[j]; /* the whole dim, unless the rule fixes it */
        if (rule->kind == ND_READS_POINTWISE && i->shape[j] != 1) {
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
}

void nd_mpi_page_reads(const nd_read_rule *rule, int k, int nin, const nd_tensor *out, int64_t opage,
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
    read_box(rule, k, nin, in, out, olo, ohi, elo, ehi);
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
} list_ctx;

/* One input page an output page reads, into the read set. */
static void list_page(void *ctx, const nd_tensor *in, nd_loc loc)
{
    const list_ctx *l = ctx;
    int64_t pb = in->dist.page_bytes;
    set_add(l->c, l->set, nd_tensor_rank_of(in, loc.core), in->base[loc.core] + loc.offset * pb, pb);
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

/* Input k's pages that the output pages this process's cores write read under the rule (in any copy of
 * out: every copy holds the same elements). Walks the entries this process writes and their pages
 * alone, so its cost is the process's share, not the tensor's; and skips, for an elementwise op, an
 * entry whose input pages sit where its output pages do on a core of this process. */
static void list_rule(nd_mpi_ctx *c, const nd_read_rule *rule, int k, int nin, const nd_tensor *out,
                      const nd_tensor *in, read_set *set)
{
    const nd_dist *d = &out->dist;
    int64_t per = d->layout.ncores;
    bool same = rule->kind == ND_READS_POINTWISE && nd_mpi_same_placement(in, out);
    list_ctx l = {c, set};
    for (int64_t e = 0; e < per; ++e) {
        bool mine = false;
        for (int64_t r = 0; r < d->spec.replicas && !mine; ++r)
            mine = writes_entry(c, out, r * per + e);
        if (!mine || (same && nd_tensor_rank_of(in, e) == c->procs.rank))
            continue;
        for (nd_page_iter it = nd_page_iter_begin(&d->squeezed, e); it.valid; nd_page_iter_next(&it))
            nd_mpi_page_reads(rule, k, nin, out, it.page_id, in, list_page, &l);
    }
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

/* Gets that fit MPI's int counts: at most this many bytes each. */
enum { GET_MAX = 1 << 30 };

static void get_bytes(nd_mpi_ctx *c, int rank, int64_t disp, int64_t len, int64_t *gets)
{
    for (int64_t at = 0; at < len; at += GET_MAX) {
        int part = (int)(len - at < GET_MAX ? len - at : GET_MAX);
        int rc = MPI_Get(c->seg_base[rank] + disp + at, part, MPI_BYTE, rank, (MPI_Aint)(disp + at), part, MPI_BYTE,
                         c->rma);
        if (rc != MPI_SUCCESS)
            nd_mpi_die(c, "MPI_Get of another node's pages", rc);
        ++*gets;
    }
}

/* One get of runs v[0..n) of one process (all under GET_MAX, and n <= INT_MAX), through an hindexed
 * datatype whose displacements hold on both sides. */
static void get_batched(nd_mpi_ctx *c, const run *v, int n, int64_t *gets)
{
    if (n == 1) {
        get_bytes(c, v[0].rank, v[0].disp, v[0].len, gets);
        return;
    }
    int *lens = malloc((size_t)n * sizeof *lens);
    MPI_Aint *disps = malloc((size_t)n * sizeof *disps);
    if (!lens || !disps)
        nd_mpi_die(c, "staging (out of memory for a datatype)", MPI_ERR_NO_MEM);
    for (int i = 0; i < n; ++i) {
        lens[i] = (int)v[i].len;
        disps[i] = (MPI_Aint)v[i].disp;
    }
    MPI_Datatype type;
    int rc = MPI_Type_create_hindexed(n, lens, disps, MPI_BYTE, &type);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&type);
    if (rc != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Type_create_hindexed of another node's pages", rc);
    if ((rc = MPI_Get(c->seg_base[v[0].rank], 1, type, v[0].rank, 0, 1, type, c->rma)) != MPI_SUCCESS)
        nd_mpi_die(c, "MPI_Get of another node's pages", rc);
    ++*gets;
    MPI_Type_free(&type); /* the pending get keeps its own reference */
    free(lens);
    free(disps);
}

/* Per page: the runs cut at every page_bytes (entries are whole pages from their start). */
static void get_per_page(nd_mpi_ctx *c, const run *r, int64_t page_bytes, int64_t *gets)
{
    for (int64_t at = 0; at < r->len; at += page_bytes)
        get_bytes(c, r->rank, r->disp + at, r->len - at < page_bytes ? r->len - at : page_bytes, gets);
}

/* The runs' gets, process by process (runs sorted by process): one per page; or batched, one per
 * process, unless a run is longer than one get may be (then a get per run, cut at GET_MAX) or the
 * process has more than INT_MAX runs (then a batch per INT_MAX). */
static int64_t issue(nd_mpi_ctx *c, const runs *rs, int64_t page_bytes)
{
    int64_t gets = 0;
    for (int64_t i = 0, j; i < rs->n; i = j) {
        bool fits = true; /* every run of the group fits an int count */
        for (j = i; j < rs->n && rs->v[j].rank == rs->v[i].rank && j - i < INT_MAX; ++j)
            fits &= rs->v[j].len <= GET_MAX;
        if (c->gets == ND_MPI_GETS_BATCHED && fits) {
            get_batched(c, &rs->v[i], (int)(j - i), &gets);
            continue;
        }
        for (int64_t k = i; k < j; ++k)
            if (c->gets == ND_MPI_GETS_PER_PAGE)
                get_per_page(c, &rs->v[k], page_bytes, &gets);
            else
                get_bytes(c, rs->v[k].rank, rs->v[k].disp, rs->v[k].len, &gets);
    }
    return gets;
}

void nd_mpi_stage(nd_device *dev, const nd_tensor *const *ts, int n, const nd_tensor *out, const nd_read_rule *rule,
                  int64_t copy, bool launch)
{
    nd_mpi_ctx *c = dev->procs->ctx;
    read_set set = {{0}, {0}};
    int64_t page_bytes = INT64_MAX; /* per-page gets: the smallest page among the tensors */
    if (!launch && c->nnodes == 1) /* a host read on one node: every page is in the shared window */
        return;
    for (int i = 0; i < n; ++i) {
        if (out && rule && copy < 0 && nd_mpi_rule_applies(rule, i, n, ts[i], out))
            list_rule(c, rule, i, n, out, ts[i], &set);
        else
            list_tensor(c, ts[i], copy, &set);
        if (ts[i]->dist.page_bytes > 0 && ts[i]->dist.page_bytes < page_bytes)
            page_bytes = ts[i]->dist.page_bytes;
    }
    int64_t bytes = runs_merge(&set.other), node_bytes = runs_merge(&set.node), gets = 0;
    double t0 = nd_mpi_now();
    if (c->rma != MPI_WIN_NULL) { /* several nodes */
        /* the mirror is writable only while gets fill it, and only the span they fill (mprotect's cost
         * grows with the resident pages it covers) */
        uintptr_t lo = UINTPTR_MAX, hi = 0, page = (uintptr_t)sysconf(_SC_PAGESIZE);
        for (int64_t i = 0; i < set.other.n; ++i) {
            uintptr_t a = (uintptr_t)(c->seg_base[set.other.v[i].rank] + set.other.v[i].disp);
            lo = a < lo ? a : lo;
            hi = a + (uintptr_t)set.other.v[i].len > hi ? a + (uintptr_t)set.other.v[i].len : hi;
        }
        bool open = set.other.n > 0;
        lo &= ~(page - 1);
        if (open && mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0)
            nd_mpi_die(c, "mprotect of the mirror of other nodes' memory (writable, for the gets)", MPI_ERR_OTHER);
        gets = issue(c, &set.other, page_bytes);
        /* every get of this stage has landed in the mirror; none issued, nothing to wait for (a flush may
         * cost a round trip to every process, with the pt2pt one-sided component) */
        int rc = gets ? MPI_Win_flush_all(c->rma) : MPI_SUCCESS;
        if (rc != MPI_SUCCESS)
            nd_mpi_die(c, "MPI_Win_flush_all after the gets", rc);
        if (open && mprotect((void *)lo, hi - lo, PROT_READ) != 0)
            nd_mpi_die(c, "mprotect of the mirror of other nodes' memory (read-only again)", MPI_ERR_OTHER);
    }
    free(set.other.v);
    free(set.node.v);
    if (launch) {
        c->mine.node_bytes += node_bytes;
        c->mine.staged_bytes += bytes;
        c->mine.gets += gets;
        c->mine.stage_seconds += nd_mpi_now() - t0;
    }
}
