/*
 * test_bounded_memory.c - a core that holds no shard touches no memory, and reserved memory reads as
 * zero without a memset: freed buffers, scribbled over whole (padding and empty slots too) or filled by
 * a Partial product's ones, read as zero when the next tensor takes their place; three 64x64 tensors on
 * a 1024x1024 grid (12.9 GB resident when every core's reservation was zeroed) stay small, in this
 * process and in `ndrun compare` (its peak resident size, from wait4).
 * Large buffers get transparent huge pages, and only they. An L1 tensor's entries lie in core order.
 * Usage: test_bounded_memory NDRUN CACHE_DIR [--no-rss]; --no-rss (sanitizer builds, whose shadow
 * memory dwarfs these figures) checks zeros only.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nd_runtime.h"
#include "testutil.h"

static int64_t passed;

static nd_dist make(const char *shape, const char *shard, const char *grid, const char *dtype)
{
    nd_dist_flags f = {.shape = shape, .shard = shard, .grid = grid, .dtype = dtype, .l1_size = "1024G"};
    nd_dist d;
    nd_error err;
    if (nd_dist_from_flags(&f, &d, &err)) {
        fprintf(stderr, "%s / %s: %s\n", shape, shard, err.msg);
        exit(1);
    }
    return d;
}

static nd_tensor *alloc(nd_device *dev, const nd_dist *d)
{
    nd_tensor *t;
    nd_error err;
    if (nd_tensor_alloc(dev, d, &t, &err)) {
        fprintf(stderr, "alloc: %s\n", err.msg);
        exit(1);
    }
    return t;
}

/* Every byte of every core's buffer of t, in every copy, is zero. */
static void expect_zero(const char *what, const nd_tensor *t)
{
    const nd_dist *d = nd_tensor_dist(t);
    const nda_tensor *v = nd_tensor_view(t);
    int64_t bad = 0;
    for (int64_t i = 0; i < d->list_cores; ++i)
        for (int64_t b = 0; b < d->bytes_per_core; ++b)
            bad += v->all_base[i][b] != 0;
    CHECK(bad == 0, "%s: %" PRId64 " bytes are not zero", what, bad);
    ++passed;
}

/* Writes values, then scribbles over the whole buffer of every core holding a shard, as a kernel may. */
static void dirty(nd_tensor *t)
{
    const nd_dist *d = nd_tensor_dist(t);
    int64_t bytes = d->elem_bytes;
    for (int i = 0; i < d->spec.rank; ++i)
        bytes *= d->spec.shape[i];
    uint8_t *host = malloc((size_t)bytes);
    nd_error err;
    memset(host, 0x5a, (size_t)bytes);
    CHECK(nd_tensor_write(t, host, bytes, &err) == 0, "write: %s", err.msg);
    for (int64_t i = 0; i < d->list_cores; ++i)
        if (nd_layout_core_shards(&d->layout, i % d->layout.ncores) > 0)
            memset(nd_tensor_view(t)->all_base[i], 0xa5, (size_t)d->bytes_per_core);
    free(host);
}

/* Buffers straddle OS pages (a 31000-byte L1 per core, offsets after a small tensor); 3 of 12 cores
 * hold no shard. */
static void zero_on_reuse(void)
{
    nd_device_config cfg;
    nd_device *dev;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = 4, cfg.grid_y = 3, cfg.l1_bytes = 31000, cfg.threads = 1;
    CHECK(nd_device_open(&cfg, &dev, &err) == 0, "open: %s", err.msg);
    nd_dist small = make("5", "5", "4x3", "u8"), a = make("100,130", "40,64", "4x3", "f32");
    nd_tensor *s = alloc(dev, &small), *t = alloc(dev, &a);
    expect_zero("a new tensor", t);
    dirty(t);
    nd_tensor_free(t);
    t = alloc(dev, &a);
    expect_zero("a tensor where a scribbled one was", t);
    nd_tensor_free(t);

    nd_dist_spec spec = a.spec; /* a pending product over 2 copies of 6 cores: 3 shards, 3 idle cores each */
    spec.shape[0] = 40, spec.replicas = 2, spec.parts = 2, spec.reduce = ND_REDUCE_PRODUCT;
    nd_dist partial;
    CHECK(nd_dist_make(&spec, 4, 3, &partial, &err) == 0, "partial: %s", err.msg);
    t = alloc(dev, &partial);
    dirty(t); /* part 1 is filled with ones on every core, idle ones included */
    nd_tensor_free(t);
    t = alloc(dev, &a);
    expect_zero("a tensor where a Partial product was", t);
    nd_tensor_free(t);
    nd_tensor_free(s);
    nd_device_close(dev);
}

/* The smaps field `key` (such as "THPeligible") of the mapping holding address p, or -1 when it cannot
 * be read. Mappings are split where their huge-page advice differs, so the one holding p carries p's. */
static long smaps_field(const void *p, const char *key)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    bool in = false;
    long v = -1;
    size_t klen = strlen(key);
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            if (in)
                break;
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        } else if (in && strncmp(line, key, klen) == 0 && line[klen] == ':') {
            v = strtol(line + klen + 1, NULL, 10);
            break;
        }
    }
    if (f)
        fclose(f);
    return v;
}

/* The first line of a sysfs file, or "" when it cannot be read. */
static void sys_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f || !fgets(buf, (int)len, f))
        buf[0] = '\0';
    if (f)
        fclose(f);
}

/* Whether the system grants 2 MiB huge pages to memory that asks: they are its huge page size, and its
 * mode is "always" or "madvise", for that size too where the kernel has a switch per size. */
static bool thp_on(void)
{
    char mode[128], size[128], per[128];
    sys_line("/sys/kernel/mm/transparent_hugepage/enabled", mode, sizeof mode);
    sys_line("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", size, sizeof size);
    sys_line("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled", per, sizeof per);
    const bool on = strstr(mode, "[always]") || strstr(mode, "[madvise]"); /* "inherit" takes it */
    const bool own = strstr(per, "[always]") || strstr(per, "[madvise]");
    const bool sized = (!per[0] || strstr(per, "[inherit]")) ? on : own;
    return sized && strtol(size, NULL, 10) == ND_HUGE_PAGE_BYTES;
}

/* The first 2 MiB boundary inside core i's buffer of t: the start of its first whole huge page. */
static const uint8_t *huge_inside(const nd_tensor *t, int64_t i)
{
    const uintptr_t a = (uintptr_t)nd_tensor_view(t)->all_base[i], h = (uintptr_t)ND_HUGE_PAGE_BYTES;
    return (const uint8_t *)((a + h - 1) & ~(h - 1));
}

/* Huge pages go exactly to a tensor's whole 2 MiB pages, and only while it lives: a 16 MiB buffer per
 * core gets them, a small tensor beside it does not (a 4096-core grid of small tensors would commit
 * 2 MiB a core), neither does anything with nd_device_config.huge_pages off; a buffer freed and taken
 * again reads as zero, huge pages and all. */
static void huge_pages(bool on)
{
    nd_device_config cfg;
    nd_device *dev;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = 2, cfg.grid_y = 1, cfg.l1_bytes = 40 << 20, cfg.threads = 1, cfg.huge_pages = on;
    CHECK(nd_device_open(&cfg, &dev, &err) == 0, "open: %s", err.msg);
    nd_dist small = make("64,64", "32,64", "2x1", "f32"), big = make("4096,2048", "2048,2048", "2x1", "f32");
    nd_tensor *s = alloc(dev, &small), *t = alloc(dev, &big);
    dirty(t);
    const bool thp = thp_on();
    for (int64_t i = 0; i < 2; ++i) {
        long big_ok = smaps_field(huge_inside(t, i), "THPeligible");
        long small_ok = smaps_field(nd_tensor_view(s)->all_base[i], "THPeligible");
        printf("huge pages %s: core %lld: 16 MiB buffer eligible %ld (%ld KiB in huge pages), small buffer %ld\n",
               on ? "on" : "off", (long long)i, big_ok, smaps_field(huge_inside(t, i), "AnonHugePages"), small_ok);
        if (big_ok < 0 || !thp) { /* no smaps field, or a system without them: nothing to hold it to */
            printf("  (not checked: %s)\n", thp ? "smaps has no THPeligible" : "transparent huge pages are off");
            continue;
        }
        CHECK(big_ok == (on ? 1 : 0), "huge pages %s: a 16 MiB buffer is eligible %ld", on ? "on" : "off", big_ok);
        CHECK(small_ok == 0, "a 32 KiB buffer is eligible for huge pages (%ld)", small_ok);
        ++passed;
    }
    const uint8_t *was = huge_inside(t, 0);
    nd_tensor_free(t);
    if (thp && smaps_field(was, "THPeligible") >= 0)
        CHECK(smaps_field(was, "THPeligible") == 0, "a freed buffer's memory still asks for huge pages");
    t = alloc(dev, &big);
    expect_zero("a 16 MiB tensor where a scribbled one was", t);
    nd_tensor_free(t);
    nd_tensor_free(s);
    nd_device_close(dev);
}

/* In one process an L1 tensor's entries lie in core-list order, each ND_ENTRY_ALIGN (64) bytes aligned,
 * entry i + 1 right after entry i rounded up to that, so that consecutive cores' pages are consecutive
 * in memory (docs/runtime.md); two tensors' entries never overlap. 96-byte entries take 128 bytes. */
static void entries_in_core_order(void)
{
    nd_device_config cfg;
    nd_device *dev;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = 8, cfg.grid_y = 8, cfg.threads = 1;
    CHECK(nd_device_open(&cfg, &dev, &err) == 0, "open: %s", err.msg);
    nd_dist rows = make("256,1024", "4,1024", "8x8", "f32"), odd = make("64,24", "1,24", "8x8", "f32");
    nd_tensor *t[2] = {alloc(dev, &rows), alloc(dev, &odd)};
    const int64_t stride[2] = {16384, 128};
    const uint8_t *lo[2], *hi[2];
    for (int k = 0; k < 2; ++k) {
        const nda_tensor *v = nd_tensor_view(t[k]);
        const int64_t n = nd_tensor_dist(t[k])->list_cores, bytes = nd_tensor_dist(t[k])->bytes_per_core;
        int64_t bad = 0;
        for (int64_t i = 0; i < n; ++i)
            bad += ((uintptr_t)v->all_base[i] % 64 != 0) + (i > 0 && v->all_base[i] - v->all_base[i - 1] != stride[k]);
        CHECK(bad == 0, "%lld-byte entries: %" PRId64 " of %lld not 64-byte aligned or not %lld bytes after the last",
              (long long)bytes, bad, (long long)n, (long long)stride[k]);
        lo[k] = v->all_base[0], hi[k] = v->all_base[n - 1] + bytes;
        passed += bad == 0;
    }
    CHECK(hi[0] <= lo[1] || hi[1] <= lo[0], "two tensors' entries overlap");
    ++passed;
    nd_tensor_free(t[1]);
    nd_tensor_free(t[0]);
    nd_device_close(dev);
}

static int64_t resident_bytes(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = 0;
    if (f)
        fclose(f);
    return (int64_t)resident * sysconf(_SC_PAGESIZE);
}

/* Three 64x64 f32 tensors in 32x32 shards on a gx x gy grid, two written, as ndrun compare sets them up:
 * bytes resident per device core. Only 4 cores hold a shard; the runtime keeps ~230 bytes of entries
 * per core, where zeroing every core's 4096-byte buffer cost 3 OS pages per core. */
static int64_t grid_bytes_per_core(int gx, int gy)
{
    char grid[32];
    nd_device_config cfg;
    nd_device *dev;
    nd_error err;
    snprintf(grid, sizeof grid, "%dx%d", gx, gy);
    nd_device_config_init(&cfg);
    cfg.grid_x = gx, cfg.grid_y = gy, cfg.l1_bytes = 4096 + 3 * (4096 + 4096), cfg.threads = 1;
    CHECK(nd_device_open(&cfg, &dev, &err) == 0, "open: %s", err.msg);
    nd_dist d = make("64,64", "32,32", grid, "f32");
    float host[64 * 64];
    for (int i = 0; i < 64 * 64; ++i)
        host[i] = (float)i;
    int64_t before = resident_bytes();
    nd_tensor *t[3] = {alloc(dev, &d), alloc(dev, &d), alloc(dev, &d)};
    for (int k = 0; k < 2; ++k)
        CHECK(nd_tensor_write(t[k], host, sizeof host, &err) == 0, "write: %s", err.msg);
    int64_t grew = resident_bytes() - before;
    for (int k = 0; k < 3; ++k)
        nd_tensor_free(t[k]);
    nd_device_close(dev);
    printf("%dx%d grid: %" PRId64 " bytes resident for 3 tensors, %" PRId64 " per core\n", gx, gy, grew,
           grew / ((int64_t)gx * gy));
    return grew / ((int64_t)gx * gy);
}

/* The peak resident size of ndrun compare on the same case, in KiB. */
static long ndrun_peak_kib(const char *ndrun, const char *cache, const char *grid)
{
    fflush(stdout); /* else the child's freopen writes what this process printed a second time */
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout))
            _exit(126);
        execl(ndrun, ndrun, "compare", "--op", "add", "--shape", "64,64", "--shard", "32,32", "--grid", grid,
              "--repeats", "1", "--min-time", "0", "--no-probes", "--threads", "2", "--cache-dir", cache, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        CHECK(0, "ndrun compare --grid %s failed (status %d)", grid, status);
        return -1;
    }
    printf("ndrun compare --grid %s: peak %ld KiB resident\n", grid, ru.ru_maxrss);
    return ru.ru_maxrss;
}

int main(int argc, char **argv)
{
    if (argc < 3 || (argc == 4 && strcmp(argv[3], "--no-rss")) || argc > 4) {
        fprintf(stderr, "usage: test_bounded_memory NDRUN CACHE_DIR [--no-rss]\n");
        return 2;
    }
    zero_on_reuse();
    huge_pages(true);
    huge_pages(false);
    entries_in_core_order();
    if (argc == 4)
        return test_finish(passed);
    /* the small grid first: if buffers are touched there, the big one would need 12.9 GB */
    int64_t small = grid_bytes_per_core(128, 128);
    CHECK(small < 1024, "128x128 grid: %" PRId64 " bytes resident per core", small);
    if (small < 1024) {
        int64_t big = grid_bytes_per_core(1024, 1024);
        CHECK(big < 1024, "1024x1024 grid: %" PRId64 " bytes resident per core", big);
        ++passed;
    }
    long peak = ndrun_peak_kib(argv[1], argv[2], "128x128");
    CHECK(peak > 0 && peak < 512 * 1024, "ndrun on 128x128 cores: peak %ld KiB", peak);
    if (peak > 0 && peak < 512 * 1024) {
        peak = ndrun_peak_kib(argv[1], argv[2], "1024x1024");
        CHECK(peak > 0 && peak < 1024 * 1024, "ndrun on 1024x1024 cores: peak %ld KiB, want under 1 GiB", peak);
        ++passed;
    }
    return test_finish(passed);
}
