/* device.c - the virtual core grid: memory arenas, tensor placement and kernel launches. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "runtime_internal.h"

void nd_device_config_init(nd_device_config *cfg)
{
    cfg->grid_x = 8;
    cfg->grid_y = 8;
    cfg->l1_bytes = ND_DEFAULT_L1_BYTES;
    cfg->dram_banks = ND_DEFAULT_DRAM_BANKS;
    cfg->dram_bank_bytes = ND_DEFAULT_DRAM_BANK_BYTES;
    cfg->threads = 0;
    cfg->huge_pages = true;
}

static int hardware_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Sets the kernel's huge-page advice on the whole huge pages inside [p, p + len); the rest keeps its
 * own. Advice only: where the OS has no transparent huge pages, memory stays as it was. */
static void advise_huge(uint8_t *p, int64_t len, int advice)
{
    const uintptr_t h = (uintptr_t)ND_HUGE_PAGE_BYTES;
    uintptr_t a = ((uintptr_t)p + h - 1) & ~(h - 1), b = ((uintptr_t)p + (uintptr_t)len) & ~(h - 1);
    if (b > a)
        (void)madvise((void *)a, b - a, advice);
}

/* Reserves address space without committing RAM: pages are backed only once touched, 4 KiB at a
 * time: a tensor's pieces ask for huge pages where they hold whole ones (place), so that a small
 * tensor on each of 4096 cores commits 4 KiB each, not 2 MiB, whatever the system's default. */
static uint8_t *reserve(int64_t bytes)
{
    void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, (size_t)bytes, MADV_NOHUGEPAGE); /* all of it: edges left out would merge with a neighbour */
    return p;
}

int nd_device_check_config(const nd_device_config *c, nd_error *err)
{
    int64_t total;
    if (c->grid_x < 1 || c->grid_y < 1 || c->grid_x > ND_MAX_GRID || c->grid_y > ND_MAX_GRID)
        return nd_fail(err, "grid %dx%d: need 1 to %d cores in each direction", c->grid_x, c->grid_y, ND_MAX_GRID);
    if (c->l1_bytes < 1 || __builtin_mul_overflow(c->l1_bytes, (int64_t)c->grid_x * c->grid_y, &total))
        return nd_failc(err, c->l1_bytes < 1 ? ND_EINVAL : ND_ERANGE,
                        "l1_bytes %lld: must be positive and fit the address space over %dx%d cores",
                        (long long)c->l1_bytes, c->grid_x, c->grid_y);
    if (c->dram_banks < 1 || c->dram_bank_bytes < 1)
        return nd_fail(err, "dram %d banks of %lld bytes: need at least one bank of positive size", c->dram_banks,
                       (long long)c->dram_bank_bytes);
    if (__builtin_mul_overflow(c->dram_bank_bytes, (int64_t)c->dram_banks, &total))
        return nd_failc(err, ND_ERANGE, "dram %d banks of %lld bytes: the total overflows the address space",
                        c->dram_banks, (long long)c->dram_bank_bytes);
    if (c->threads < 0)
        return nd_fail(err, "threads %d: must be 0 (one per hardware thread) or more", c->threads);
    return 0;
}

/* A device of cfg with its bookkeeping allocated and its memory not yet set; NULL when out of memory. */
static nd_device *device_new(const nd_device_config *cfg)
{
    nd_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return NULL;
    dev->cfg = *cfg;
    dev->cfg.threads = cfg->threads ? cfg->threads : hardware_threads();
    dev->ncores = (int64_t)cfg->grid_x * cfg->grid_y;
    dev->l1_base = calloc((size_t)dev->ncores, sizeof *dev->l1_base);
    dev->bank_base = calloc((size_t)cfg->dram_banks, sizeof *dev->bank_base);
    dev->l1_arena = calloc((size_t)dev->ncores, sizeof *dev->l1_arena);
    dev->dram_arena = calloc((size_t)cfg->dram_banks, sizeof *dev->dram_arena);
    dev->stats = calloc((size_t)dev->ncores, sizeof *dev->stats);
    if (!dev->l1_base || !dev->bank_base || !dev->l1_arena || !dev->dram_arena || !dev->stats) {
        nd_device_close(dev);
        return NULL;
    }
    for (int64_t i = 0; i < dev->ncores; ++i)
        dev->l1_arena[i].size = cfg->l1_bytes;
    for (int i = 0; i < cfg->dram_banks; ++i)
        dev->dram_arena[i].size = cfg->dram_bank_bytes;
    return dev;
}

int nd_device_open(const nd_device_config *cfg, nd_device **out, nd_error *err)
{
    if (nd_device_check_config(cfg, err))
        return -1;
    nd_device *dev = device_new(cfg);
    if (!dev)
        return nd_failc(err, ND_ENOMEM, "device: out of memory");
    dev->l1 = reserve(dev->ncores * cfg->l1_bytes);
    dev->dram = reserve((int64_t)cfg->dram_banks * cfg->dram_bank_bytes);
    if (!dev->l1 || !dev->dram) {
        /* the message first: it reads dev, which closing frees */
        nd_failc(err, ND_ENOMEM, "device %dx%d: cannot reserve %lld bytes of L1 and %lld of DRAM", cfg->grid_x,
                 cfg->grid_y, (long long)(dev->ncores * cfg->l1_bytes),
                 (long long)(cfg->dram_banks * cfg->dram_bank_bytes));
        nd_device_close(dev);
        return -1;
    }
    for (int64_t i = 0; i < dev->ncores; ++i)
        dev->l1_base[i] = dev->l1 + i * cfg->l1_bytes;
    for (int i = 0; i < cfg->dram_banks; ++i)
        dev->bank_base[i] = dev->dram + i * cfg->dram_bank_bytes;
    if (nd_pool_create(dev->cfg.threads, &dev->pool, err)) {
        nd_device_close(dev);
        return -1;
    }
    *out = dev;
    return 0;
}

int nd_device_open_procs(const nd_device_config *cfg, uint8_t *const *l1, uint8_t *const *banks,
                         nd_device_procs *procs, nd_device **out, nd_error *err)
{
    assert(nd_device_check_config(cfg, NULL) == 0 && procs && procs->core_lo <= procs->core_hi);
    nd_device *dev = device_new(cfg);
    if (!dev) {
        procs->close(procs);
        return nd_failc(err, ND_ENOMEM, "device: out of memory");
    }
    dev->procs = procs; /* from here closing the device closes procs */
    dev->cfg.huge_pages = false; /* shared windows: place() gives no advice, and the config says so */
    memcpy(dev->l1_base, l1, (size_t)dev->ncores * sizeof *l1);
    memcpy(dev->bank_base, banks, (size_t)cfg->dram_banks * sizeof *banks);
    if (nd_pool_create(dev->cfg.threads, &dev->pool, err)) {
        nd_device_close(dev);
        return -1;
    }
    *out = dev;
    return 0;
}

void nd_device_close(nd_device *dev)
{
    if (!dev)
        return;
    nd_pool_destroy(dev->pool);
    if (dev->l1)
        munmap(dev->l1, (size_t)(dev->ncores * dev->cfg.l1_bytes));
    if (dev->dram)
        munmap(dev->dram, (size_t)(dev->cfg.dram_banks * dev->cfg.dram_bank_bytes));
    if (dev->procs)
        dev->procs->close(dev->procs);
    for (int64_t i = 0; dev->l1_arena && i < dev->ncores; ++i)
        nd_arena_release(&dev->l1_arena[i]);
    for (int i = 0; dev->dram_arena && i < dev->cfg.dram_banks; ++i)
        nd_arena_release(&dev->dram_arena[i]);
    free(dev->l1_arena);
    free(dev->dram_arena);
    free(dev->l1_base);
    free(dev->bank_base);
    free(dev->stats);
    free(dev);
}

int nd_device_set_threads(nd_device *dev, int threads, nd_error *err)
{
    nd_pool *pool;
    if (threads == 0)
        threads = hardware_threads();
    if (nd_pool_create(threads, &pool, err))
        return -1;
    nd_pool_destroy(dev->pool);
    dev->pool = pool;
    dev->cfg.threads = threads;
    return 0;
}

int nd_device_threads(const nd_device *dev) { return nd_pool_threads(dev->pool); }
nd_device_config nd_device_get_config(const nd_device *dev) { return dev->cfg; }

/* ---------------------------------------------------------------- tensors */

#ifndef NDEBUG
/* The tensor's cores were checked against the device (check_fits_device): a DRAM core is a bank
 * (x only), an L1 core lies in the grid. For assertions. */
static bool core_on_device(const nd_tensor *t, nd_core c)
{
    const nd_device_config *cfg = &t->dev->cfg;
    if (t->dist.spec.buffer == ND_DRAM)
        return c.x >= 0 && c.x < cfg->dram_banks && c.y == 0;
    return c.x >= 0 && c.y >= 0 && c.x < cfg->grid_x && c.y < cfg->grid_y;
}
#endif

static nd_arena *tensor_arena(const nd_tensor *t, nd_core c)
{
    const nd_device *dev = t->dev;
    assert(core_on_device(t, c));
    if (t->dist.spec.buffer == ND_DRAM)
        return &dev->dram_arena[c.x];
    return &dev->l1_arena[(int64_t)c.y * dev->cfg.grid_x + c.x];
}

static uint8_t *arena_base(const nd_tensor *t, nd_core c)
{
    const nd_device *dev = t->dev;
    assert(core_on_device(t, c));
    if (t->dist.spec.buffer == ND_DRAM)
        return dev->bank_base[c.x];
    return dev->l1_base[(int64_t)c.y * dev->cfg.grid_x + c.x];
}

/* The distribution was validated against some grid; check it against this device's. */
static int check_fits_device(const nd_device *dev, const nd_dist *d, nd_error *err)
{
    bool dram = d->spec.buffer == ND_DRAM;
    int gx = dram ? dev->cfg.dram_banks : dev->cfg.grid_x, gy = dram ? 1 : dev->cfg.grid_y;
    for (int i = 0; i < d->spec.cores.nranges; ++i) {
        nd_core_range r = d->spec.cores.ranges[i];
        if (r.hi.x >= gx || r.hi.y >= gy)
            return nd_fail(err, "cores (%d,%d)-(%d,%d): range %d leaves the device's %dx%d %s", r.lo.x, r.lo.y,
                           r.hi.x, r.hi.y, i, gx, gy, dram ? "DRAM banks" : "core grid");
    }
    return nd_dist_check_fit(d, dram ? dev->cfg.dram_bank_bytes : dev->cfg.l1_bytes, err); /* ND_ENOMEM */
}

/*
 * Free arena memory always reads as zero, so a new tensor needs no memset and a core that holds none
 * of its shards is never touched: the reservation starts zero, and a tensor leaving clears what it may
 * have written. That is the cores holding its shards (no page lives elsewhere, so no kernel writes
 * elsewhere), and for a Partial tensor every core, as nd_tensor_write fills the other parts' buffers
 * whole (hostio.c).
 */
static bool region_used(const nd_tensor *t, int64_t i)
{
    return t->dist.spec.parts > 1 || nd_layout_core_shards(&t->dist.layout, i % t->dist.layout.ncores) > 0;
}

/* [p, p + len) reads as zero again: its whole pages are dropped (the next touch maps a fresh zero
 * page, and until then they cost no RAM), the pieces of pages at either end are cleared. */
static void clear_region(uint8_t *p, int64_t len, uintptr_t page)
{
    uintptr_t lo = (uintptr_t)p, hi = lo + (uintptr_t)len, a = (lo + page - 1) & ~(page - 1), b = hi & ~(page - 1);
    if (a >= b) {
        memset(p, 0, (size_t)len);
        return;
    }
    memset(p, 0, a - lo);
    memset((uint8_t *)b, 0, hi - b);
    if (madvise((void *)a, b - a, MADV_DONTNEED) != 0)
        memset((void *)a, 0, b - a);
}

int nd_tensor_rank_of(const nd_tensor *t, int64_t i)
{
    const nd_device_procs *p = t->dev->procs;
    if (!p)
        return 0;
    nd_core c = nd_dist_core(&t->dist, i);
    if (t->dist.spec.buffer == ND_DRAM)
        return p->rank_of_bank[c.x];
    return p->rank_of_core[(int64_t)c.y * t->dev->cfg.grid_x + c.x];
}

/* Over several processes the memory is a shared mapping, where dropping pages does not zero them, and
 * other processes may read it: there each process clears its own cores' buffers when a tensor arrives
 * (place), and a leaving tensor is left as it is. */
static void tensor_release(nd_tensor *t, int64_t placed)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int64_t i = 0; i < placed; ++i) {
        if (!t->dev->procs && !t->host && region_used(t, i))
            clear_region(t->base[i], t->dist.bytes_per_core, page);
        if (!t->dev->procs && !t->host && t->dev->cfg.huge_pages && t->base[i])
            advise_huge(t->base[i], t->dist.bytes_per_core, MADV_NOHUGEPAGE);
        nd_arena_free(tensor_arena(t, nd_dist_core(&t->dist, i)), t->offset[i]);
    }
    if (t->host)
        munmap(t->host, (size_t)t->host_bytes);
    if (t->owner_of != t->index_of)
        free(t->owner_of);
    free(t->offset);
    free(t->base);
    free(t->index_of);
    free(t->replica_of);
    free(t);
}

/* One process, L1: the tensor's entries in one mapping of its own, entry i at i * stride, rather than in
 * each core's L1 reservation, 1.5 MiB apart. The arenas still give every entry its L1 offset (capacity,
 * fragmentation and placement are the device's), but where a thread runs consecutive cores their pages
 * are consecutive in memory, as a dense array's are: with one 4 KiB row per core on 64x64 cores, an add
 * whose entries lay 1.5 MiB apart ran 1.3 to 1.5x behind the same add on 2x1 cores (docs/runtime.md).
 * Huge pages go to the whole mapping when every entry holds shards (a sparse tensor would commit 2 MiB
 * for a few bytes). A fresh mapping reads as zero; freeing unmaps it. 0, or -1 when out of memory. */
static int map_entries(nd_tensor *t, int64_t stride, nd_error *err)
{
    if (t->dev->procs || t->dist.spec.buffer != ND_L1 || stride == 0)
        return 0;
    if (__builtin_mul_overflow(stride, t->ncores, &t->host_bytes) || !(t->host = reserve(t->host_bytes))) {
        nd_failc(err, ND_ENOMEM, "L1 tensor: cannot map %lld entries of %lld bytes", (long long)t->ncores,
                 (long long)stride);
        t->host = NULL, t->host_bytes = 0;
        return -1;
    }
    bool dense = true;
    for (int64_t i = 0; i < t->ncores && dense; ++i)
        dense = region_used(t, i);
    if (dense && t->dev->cfg.huge_pages)
        advise_huge(t->host, t->host_bytes, MADV_HUGEPAGE);
    return 0;
}

static int place(nd_tensor *t, nd_error *err)
{
    int64_t bytes = t->dist.bytes_per_core;
    const int64_t stride = nd_entry_align_up(bytes); /* between entries of the tensor's own mapping */
    if (map_entries(t, stride, err)) {
        tensor_release(t, 0); /* as a full arena below: the device is as it was */
        return -1;
    }
    for (int64_t i = 0; i < t->ncores; ++i) {
        nd_core c = nd_dist_core(&t->dist, i);
        nd_arena *a = tensor_arena(t, c);
        if (nd_arena_alloc(a, bytes, &t->offset[i])) {
            nd_failc(err, ND_ENOMEM, "%s: core (%d,%d) has %lld bytes free in one piece, but the tensor needs %lld",
                    nd_buffer_name(t->dist.spec.buffer), c.x, c.y, (long long)nd_arena_largest_gap(a),
                    (long long)bytes);
            tensor_release(t, i); /* undoes cores 0..i-1: the device is as it was */
            return -1;
        }
        assert(t->offset[i] >= 0 && t->offset[i] + bytes <= a->size); /* the arena found a gap that holds it */
        uint8_t *arena = arena_base(t, c); /* NULL: another node's, not mapped here */
        t->base[i] = t->host ? t->host + i * stride : arena ? arena + t->offset[i] : NULL; /* reads as zero,
                                                                             padding included: region_used */
        if (t->dev->procs && nd_tensor_rank_of(t, i) == t->dev->procs->rank)
            memset(t->base[i], 0, (size_t)bytes);
        else if (!t->dev->procs && !t->host && t->dev->cfg.huge_pages)
            advise_huge(t->base[i], bytes, MADV_HUGEPAGE); /* a 4096 x 4096 f32 transpose: see docs/runtime.md */
        if (t->dist.spec.buffer == ND_L1) {
            int64_t id = (int64_t)c.y * t->dev->cfg.grid_x + c.x, n = t->dist.layout.ncores;
            assert(id < t->dev->ncores && t->index_of[id] < 0); /* a core list holds each core once */
            t->index_of[id] = (int32_t)(i % n);
            t->replica_of[id] = (int32_t)(i / n);
        }
    }
    return 0;
}

/* What a process's fences say of a tensor: its distribution and where its entries lie in the arenas.
 * Processes keep the same arena bookkeeping by allocating and freeing in the same order; one that did
 * not has other offsets here, and its first fence on the tensor says so. */
static uint64_t tensor_ident(const nd_tensor *t)
{
    char sig[ND_SIGNATURE_LEN];
    nd_dist_signature(&t->dist, sig, sizeof sig); /* truncated alike on every process */
    uint64_t h = nd_hash_bytes(ND_HASH_SEED, sig, strnlen(sig, sizeof sig));
    return nd_hash_bytes(h, t->offset, (size_t)t->ncores * sizeof *t->offset);
}

const char *nd_call_name(nd_call c)
{
#define ND_FENCE_CALL_NAME(kind, name) name,
    static const char *const names[] = {ND_FENCE_CALLS(ND_FENCE_CALL_NAME)};
#undef ND_FENCE_CALL_NAME
    return c >= 0 && c < ND_NCALLS ? names[c] : "an unknown call";
}

int nd_tensor_alloc(nd_device *dev, const nd_dist *d, nd_tensor **out, nd_error *err)
{
    if (check_fits_device(dev, d, err))
        return -1;
    if (dev->procs && dev->procs->check_tensor && dev->procs->check_tensor(dev, d, err))
        return -1;
    nd_tensor *t = calloc(1, sizeof *t);
    if (!t)
        return nd_failc(err, ND_ENOMEM, "tensor: out of memory");
    t->dev = dev;
    t->dist = *d;
    t->ncores = d->list_cores;
    t->offset = calloc((size_t)t->ncores, sizeof *t->offset);
    t->base = calloc((size_t)t->ncores, sizeof *t->base);
    t->index_of = malloc((size_t)dev->ncores * sizeof *t->index_of);
    t->replica_of = malloc((size_t)dev->ncores * sizeof *t->replica_of);
    if (!t->offset || !t->base || !t->index_of || !t->replica_of) {
        /* the message before t is freed */
        nd_failc(err, ND_ENOMEM, "tensor: out of memory for %lld core entries", (long long)t->ncores);
        tensor_release(t, 0);
        return -1;
    }
    for (int64_t i = 0; i < dev->ncores; ++i)
        t->index_of[i] = t->replica_of[i] = -1;
    t->owner_of = t->index_of;
    if (d->spec.buffer == ND_DRAM) { /* device core c writes bank c of the list */
        t->owner_of = malloc((size_t)dev->ncores * sizeof *t->owner_of);
        if (!t->owner_of) {
            nd_failc(err, ND_ENOMEM, "tensor: out of memory for %lld core entries", (long long)dev->ncores);
            tensor_release(t, 0);
            return -1;
        }
        for (int64_t i = 0; i < dev->ncores; ++i)
            t->owner_of[i] = i < t->ncores ? (int32_t)i : -1;
    }
    /* Over processes, place() clears each entry on the process holding it. An L1 entry's holder is its
     * writer, whose launches are ordered with every reader of its pages (in pairs or by fences). A DRAM
     * entry's holder (its bank's process) need not be the process whose core writes it, nor any process
     * reading it, so nothing else orders its clearing: it is fenced on both sides, so that no launch still
     * reads the memory when it is cleared and none reads or writes it before it is clear. */
    const bool fence_clear = dev->procs && d->spec.buffer == ND_DRAM;
    if (fence_clear)
        dev->procs->fence(dev, (nd_fence_call){ND_CALL_ALLOC_DRAM, false, 0});
    if (place(t, err))
        return -1;
    t->view = (nda_tensor){&t->dist, &t->dist.squeezed, t->base, t->index_of, t->owner_of, d->page_bytes,
                           d->spec.replicas, d->spec.parts, 0, t->base, (int32_t)d->spec.reduce};
    if (dev->procs)
        t->ident = tensor_ident(t);
    if (fence_clear)
        dev->procs->fence(dev, (nd_fence_call){ND_CALL_ALLOC_DRAM, true, t->ident});
    ++dev->live_tensors;
    t->serial = ++dev->tensors_made;
    *out = t;
    return 0;
}

void nd_tensor_free(nd_tensor *t)
{
    if (!t)
        return;
    assert(t->dev->live_tensors > 0);
    --t->dev->live_tensors;
    tensor_release(t, t->ncores);
}

const nd_dist *nd_tensor_dist(const nd_tensor *t) { return &t->dist; }
const nda_tensor *nd_tensor_view(const nd_tensor *t) { return &t->view; }

/* ---------------------------------------------------------------- launch */

void nd_device_parallel(nd_device *dev, int64_t n, void (*fn)(void *ctx, int64_t i), void *ctx)
{
    nd_pool_run(dev->pool, n, fn, ctx);
}

enum { MAX_LAUNCH_TENSORS = 16 };

typedef struct launch_job {
    nd_device *dev;
    int64_t first; /* the job's item i runs device core first + i */
    nda_kernel_fn *kernel;
    nda_args args;
    nd_tensor *const *tensors;
    bool copies; /* some tensor has several copies: each core gets views of its own group's copies */
} launch_job;

int64_t nd_tensor_copy_seen(const nd_tensor *t, int64_t id)
{
    int32_t r = t->replica_of[id];
    return t->dist.spec.replicas > 1 && r > 0 ? r : 0;
}

/* The tensors as core id sees them: each replicated tensor's view addresses the core's own copy. */
static void core_views(const launch_job *job, int64_t id, nda_tensor *views)
{
    for (int i = 0; i < job->args.ntensors; ++i) {
        views[i] = job->args.tensors[i];
        int64_t r = nd_tensor_copy_seen(job->tensors[i], id);
        assert(r < views[i].replicas);
        if (r > 0) {
            views[i].replica = (int32_t)r;
            views[i].base = views[i].all_base + (int64_t)r * views[i].layout->ncores;
        }
    }
}

static void run_core(void *ctx, int64_t i)
{
    launch_job *job = ctx;
    int64_t id = job->first + i;
    int gx = job->dev->cfg.grid_x;
    assert(id >= 0 && id < job->dev->ncores);
    nda_core core = {(int32_t)(id % gx), (int32_t)(id / gx), (int32_t)id, &job->dev->stats[id]};
    if (!job->copies) {
        job->kernel(&core, &job->args);
        return;
    }
    nda_tensor views[MAX_LAUNCH_TENSORS];
    nda_args args = job->args;
    core_views(job, id, views);
    args.tensors = views;
    job->kernel(&core, &args);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sum_stats(const nda_stats *per_core, int64_t n, nda_stats *total)
{
    memset(total, 0, sizeof *total);
    for (int64_t i = 0; i < n; ++i) {
        total->local_pages_read += per_core[i].local_pages_read;
        total->remote_pages_read += per_core[i].remote_pages_read;
        total->local_bytes_read += per_core[i].local_bytes_read;
        total->remote_bytes_read += per_core[i].remote_bytes_read;
        total->pages_written += per_core[i].pages_written;
        total->remote_pages_written += per_core[i].remote_pages_written;
    }
}

/* What a launch's fences say of it: its op (when launched from a registry entry), tensors, scalars and
 * their names. */
static uint64_t launch_key(const char *op, nd_tensor *const *tensors, int ntensors, int ninputs,
                           const double *scalars, int nscalars, const char *names)
{
    uint64_t h = nd_hash_bytes(ND_HASH_SEED, op ? op : "", op ? strlen(op) + 1 : 1);
    int counts[3] = {ntensors, ninputs, nscalars};
    h = nd_hash_bytes(h, counts, sizeof counts);
    for (int i = 0; i < ntensors; ++i)
        h = nd_hash_bytes(h, &tensors[i]->ident, sizeof tensors[i]->ident);
    if (nscalars > 0)
        h = nd_hash_bytes(h, scalars, (size_t)nscalars * sizeof *scalars); /* the bits: -0.0 is not 0.0 */
    return nd_hash_bytes(h, names ? names : "", names ? strlen(names) : 0);
}

/* Whether no core of the launch reads a page another core holds, so that no process reads memory
 * another writes and the launch needs no fence over processes: an op whose output elements read each
 * input at their own coordinates (the read rule POINTWISE), every input placed exactly as its one
 * output (same shape, pages, shards, cores and strategy), all in L1, one copy and no pending parts.
 * Then core c reads only its own pages, which only core c wrote since the last fence (owner computes;
 * host writes end in a fence), and writes only pages no other process reads before the next fence or
 * the next READY from this process (a launch that reads others' pages begins with one or the other:
 * pairs_mpi.c). Every process decides alike, from the arguments. */
static bool launch_local(nd_tensor *const *tensors, int ntensors, int ninputs, const nd_read_rule *rule)
{
    if (!rule || rule->kind != ND_READS_POINTWISE || ntensors - ninputs != 1)
        return false;
    const nd_dist *out = &tensors[ntensors - 1]->dist;
    for (int i = 0; i < ntensors; ++i) {
        const nd_dist *d = &tensors[i]->dist;
        if (d->spec.buffer != ND_L1 || d->spec.replicas != 1 || d->spec.parts != 1 ||
            !nd_dist_same_paging(d, out) || !nd_dist_same_placement(d, out))
            return false;
    }
    return true;
}

/* ninputs: the first ninputs tensors are read (a bare function's roles are unknown: all of them); no
 * kernel reads an output's pages of other cores, which those cores write in the same launch. rule: what
 * the output's elements read of the inputs (nd_device_procs.stage), or NULL: every page. */
static int launch(nd_device *dev, const char *op, nda_kernel_fn *kernel, nd_tensor *const *tensors, int ntensors,
                  int ninputs, const nd_read_rule *rule, const double *scalars, int nscalars, const char *names,
                  nd_launch_stats *stats, nd_error *err)
{
    nda_tensor views[MAX_LAUNCH_TENSORS];
    bool copies = false, dram = false;
    if (ntensors < 0 || ntensors > MAX_LAUNCH_TENSORS)
        return nd_fail(err, "launch: %d tensors; a launch takes 0 to %d", ntensors, MAX_LAUNCH_TENSORS);
    if (!kernel)
        return nd_fail(err, "launch: no kernel function");
    for (int i = 0; i < ntensors; ++i) {
        if (!tensors[i] || tensors[i]->dev != dev)
            return nd_fail(err, "launch: tensor %d does not belong to this device", i);
        views[i] = tensors[i]->view;
        copies |= views[i].replicas > 1;
        dram |= tensors[i]->dist.spec.buffer == ND_DRAM;
    }
    dev->last_launch_dram = dram;
    nd_device_procs *procs = dev->procs;
    int64_t lo = procs ? procs->core_lo : 0, hi = procs ? procs->core_hi : dev->ncores;
    launch_job job = {dev, lo, kernel, {ntensors, views, nscalars, scalars, names}, tensors, copies};
    memset(dev->stats, 0, (size_t)dev->ncores * sizeof *dev->stats);
    nd_fence_call call = {ND_CALL_LAUNCH, false, 0};
    enum { SYNC_FENCE, SYNC_SKIP, SYNC_PAIRS } sync = SYNC_FENCE;
    if (procs) { /* every process's writes before the launch are visible to every core that reads them */
        call.key = launch_key(op, tensors, ntensors, ninputs, scalars, nscalars, names);
        call.key = nd_hash_bytes(call.key, &(uint8_t){stats != NULL}, 1); /* whether it gathers (below) */
        if (procs->skip && launch_local(tensors, ntensors, ninputs, rule))
            sync = SYNC_SKIP, procs->skip(dev, call);
        else if (procs->pair_open && procs->pair_open(dev, call, tensors, ntensors, ninputs, rule))
            sync = SYNC_PAIRS;
        else
            procs->fence(dev, call);
    }
    double start = procs ? now_seconds() : 0; /* over processes a launch's time includes its gets */
    if (procs && procs->stage) { /* other nodes' pages the cores read, into the staging area */
        uint8_t *const *bases[MAX_LAUNCH_TENSORS];
        procs->stage(dev, (const nd_tensor *const *)tensors, ninputs, rule ? tensors[ntensors - 1] : NULL, rule, -1,
                     true, bases);
        for (int i = 0; i < ninputs; ++i) /* copy r > 0 of a core: core_views, from all_base */
            views[i].base = views[i].all_base = bases[i];
    }
    double t0 = now_seconds();
    if (!procs)
        start = t0;
    nd_pool_run(dev->pool, hi - lo, run_core, &job);
    double t1 = now_seconds();
    dev->run_seconds = t1 - t0;
    if (procs) { /* and every core's writes to every process after it */
        call.end = true;
        (sync == SYNC_SKIP ? procs->skip : sync == SYNC_PAIRS ? procs->pair_close : procs->fence)(dev, call);
        if (stats) /* statistics only where asked: a launch without them meets no process it does not talk to */
            procs->gather(dev, t1 - t0);
        t1 = now_seconds();
    }
    if (stats) {
        stats->seconds = t1 - start;
        stats->ncores = dev->ncores;
        stats->per_core = dev->stats;
        sum_stats(dev->stats, dev->ncores, &stats->total);
    }
    return 0;
}

int nd_launch(nd_device *dev, nda_kernel_fn *kernel, nd_tensor *const *tensors, int ntensors,
              const double *scalars, int nscalars, nd_launch_stats *stats, nd_error *err)
{
    return launch(dev, NULL, kernel, tensors, ntensors, ntensors, NULL, scalars, nscalars, NULL, stats, err);
}

/* Whether every operand's index is letters alone (an einsum's), not "...". */
static bool lettered(const nda_kernel_entry *e)
{
    for (int i = 0; i < e->noperands; ++i) {
        const char *x = e->indices ? e->indices[i] : NULL;
        if (!x || !*x)
            return false;
        for (; *x; ++x)
            if (*x < 'a' || *x > 'z')
                return false;
    }
    return e->noperands > 0;
}

/* The list scalar's values as input dims, checked (the launch's own checks come later, in nd_run): axes
 * distinct and in range, a perm a permutation of them all; false otherwise. */
static bool list_dims(const double *v, int n, int rank, bool perm, int *out)
{
    bool seen[ND_MAX_RANK] = {false};
    if (n < 1 || n > rank || (perm && n != rank))
        return false;
    for (int i = 0; i < n; ++i) {
        if (!(v[i] >= 0 && v[i] < rank) || v[i] != (int)v[i] || seen[(int)v[i]])
            return false;
        seen[(int)v[i]] = true;
        out[i] = (int)v[i];
    }
    return true;
}

/* What the output's elements read of the inputs, from what the entry declares (e->reads, which ndgen
 * derives from the op's reference, NDA_READS_KINDS). An op's meaning is its reference, which every
 * kernel of it is checked against: a reference derived from EXPR is elementwise; the bundled ref_einsum
 * is the einsum of the declared letters, ref_reduce_* reduces along the axes list, ref_softmax
 * normalizes along the last axis, ref_permute transposes by the perm list. A kernel that computes that
 * meaning depends on no other input element, so pages it might read beyond these cannot change its
 * output. An op without a reference on the bundled all_reduce.c (all_reduce, reduce_scatter) combines
 * its Partial input's parts at each output element's coordinates. Any other op's inputs are read whole
 * (its letters, say, may be a stencil's). */
static void read_rule(const nda_kernel_entry *e, nd_tensor *const *tensors, int ntensors, int ninputs,
                      const double *scalars, int nscalars, nd_read_rule *rule)
{
    memset(rule, 0, sizeof *rule);
    if (e->noutputs != 1 || ninputs != ntensors - 1 || ninputs < 1)
        return;
    /* a reference derived from EXPR (spec reference = "elementwise") states out[e] = EXPR(inputs at e) */
    if (e->reads == NDA_READS_POINTWISE) {
        rule->kind = ND_READS_POINTWISE;
        return;
    }
    if (e->reads == NDA_READS_PARTS && ninputs == 1) { /* all_reduce.c's: every part at the output's coordinates */
        rule->kind = ND_READS_PARTS;
        return;
    }
    if (e->reads == NDA_READS_LAST_AXIS && ninputs == 1 && tensors[0]->dist.spec.rank >= 1) { /* softmax's */
        rule->kind = ND_READS_AXES;
        rule->naxes = 1;
        rule->axes[0] = tensors[0]->dist.spec.rank - 1;
        return;
    }
    nd_scalars s;
    int list = e->scalars && nd_scalars_parse(e->scalars, &s, NULL) == 0 ? nd_scalars_list(&s) : -1;
    bool perm = list >= 0 && s.d[list].type == ND_SCALAR_PERM;
    if (list >= 0 && ninputs == 1 && e->reads == (perm ? NDA_READS_PERM : NDA_READS_AXES)) {
        if (list_dims(scalars + list, nscalars - list, tensors[0]->dist.spec.rank, perm, rule->axes)) {
            rule->naxes = nscalars - list;
            rule->kind = perm ? ND_READS_PERM : ND_READS_AXES;
            rule->chunked = !perm && e->parts_chunked;
        }
        return;
    }
    if (list < 0 && e->reads == NDA_READS_LETTERS && lettered(e) && e->noperands == ntensors) {
        rule->kind = ND_READS_LETTERS;
        rule->indices = e->indices;
        rule->chunked = e->parts_chunked;
    }
}

int nd_launch_entry(nd_device *dev, const nda_kernel_entry *e, nd_tensor *const *tensors, int ntensors,
                    const double *scalars, int nscalars, nd_launch_stats *stats, nd_error *err)
{
    char names[ND_MAX_SCALARS * ND_SCALAR_NAME];
    if (!e)
        return nd_fail(err, "launch: no registry entry");
    if (nd_op_scalar_names(e, names, sizeof names, err))
        return -1;
    if (!nd_kernel_serves_scalars(e, scalars, nscalars)) /* its constants would silently replace them */
        return nd_failc(err, ND_EREFUSED, "launch: %s fixed other scalar values than the launch gives", e->symbol);
    int ninputs = e->noutputs >= 0 && e->noutputs <= ntensors ? ntensors - e->noutputs : ntensors;
    nd_read_rule rule;
    read_rule(e, tensors, ntensors, ninputs, scalars, nscalars, &rule);
    return launch(dev, e->op, e->fn, tensors, ntensors, ninputs, dev->procs && rule.kind != ND_READS_WHOLE ? &rule : NULL,
                  scalars, nscalars, names, stats, err);
}
