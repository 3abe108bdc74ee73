/*
 * test_partial_jit: partial kernels specialized on demand (issue 17), on op add of
 * tests/partial/partial.lua, whose prebuilt kernels fix 64x64 shards: these launches use 32x64
 * shards, which only the JIT serves. For each partial set (nd_kernels_set_fixed):
 *
 *  - the first launch builds a kernel (ND_JIT_BUILT, one library in the cache); another size, on the
 *    same kernels, runs that kernel with no JIT at all; on fresh kernels (as a new process would) it is
 *    a cache hit (ND_JIT_HIT, still one library and one manifest: nothing compiled);
 *  - a launch whose fixed parameters differ (the grid for "pattern", the strategy for "shard") falls
 *    through: the loaded kernel is not taken, and the JIT builds another (a second library);
 *  - with the JIT off, such a launch falls through to the generic kernel;
 *  - every result equals the generic kernel's and a plain sum, bit for bit, with equal statistics.
 * And the JIT's compile flags: the library's registry records the flags its kernels were built with
 * (each word of NDGEN_KERNEL_CFLAGS, which CTest passes as $NDGEN_TEST_KERNEL_CFLAGS, is among them); a
 * JIT given no flags compiles with exactly those words, and one given its own with those (the compiler
 * is a wrapper that logs its arguments).
 * Usage: test_partial_jit LIB NDGEN SPEC_DIR TEMPLATE_DIR INCLUDE_DIR CFLAGS LDFLAGS [seed]
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "device_setup.h"
#include "nd_runtime.h"
#include "testutil.h"

static nd_device *dev;
static nd_jit_config cfg;
static const char *lib;
static int64_t passed;
static uint64_t rng;

/* Files in dir whose names end with suffix. */
static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    size_t sl = strlen(suffix);
    while (d && (e = readdir(d)))
        n += strlen(e->d_name) >= sl && strcmp(e->d_name + strlen(e->d_name) - sl, suffix) == 0;
    if (d)
        closedir(d);
    return n;
}

static nd_kernels *open_kernels(const char *set, bool jit)
{
    nd_kernels *k;
    nd_error err;
    if (nd_kernels_open(&k, &err) || nd_kernels_load(k, lib, &err) || (jit && nd_kernels_set_jit(k, &cfg, &err)) ||
        nd_kernels_set_fixed(k, set, &err)) {
        fprintf(stderr, "test_partial_jit: %s\n", err.msg);
        exit(1);
    }
    return k;
}

/* One launch of add on r x c, shards 32 x 64 rows, cores (0,0)-(gx-1,gy-1) dealt by strategy: the pick,
 * after checking the result against the generic kernel and a plain sum, and the statistics. */
typedef struct outcome {
    nd_kernel_pick pick;
    bool ok;
} outcome;

static int launch(nd_kernels *k, nd_tensor **t, nd_variant want, float *out, int64_t n, nd_kernel_pick *pick,
                  nd_launch_stats *st, nda_stats **per_core, nd_error *err)
{
    memset(out, 0, (size_t)n * sizeof *out);
    if (nd_tensor_write(t[2], out, n * 4, err) ||
        nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "add", .tensors = t, .ntensors = 3,
                                 .variant = want, .pick = pick, .stats = st}, err))
        return -1;
    *per_core = malloc((size_t)st->ncores * sizeof **per_core);
    memcpy(*per_core, st->per_core, (size_t)st->ncores * sizeof **per_core);
    return nd_tensor_read(t[2], out, n * 4, err);
}

static outcome add_case(nd_kernels *k, int64_t r, int64_t c, int gx, int gy, nd_strategy strategy)
{
    outcome o = {0};
    nd_dist_spec s;
    nd_dist_spec_init(&s);
    s.rank = s.shard_rank = 2;
    s.shape[0] = r, s.shape[1] = c, s.shard[0] = 32, s.shard[1] = 64;
    s.strategy = strategy;
    s.cores.nranges = 1;
    s.cores.ranges[0] = (nd_core_range){{0, 0}, {gx - 1, gy - 1}};
    int64_t n = r * c;
    nd_dist d;
    nd_error err;
    nd_tensor *t[3] = {0};
    float *in[2] = {malloc((size_t)n * 4), malloc((size_t)n * 4)}, *got = malloc((size_t)n * 4),
          *want = malloc((size_t)n * 4);
    nda_stats *pg = NULL, *pp = NULL;
    nd_launch_stats sg, sp;
    nd_kernel_pick generic;
    int rc = nd_dist_make(&s, 8, 8, &d, &err);
    for (int i = 0; i < 3 && !rc; ++i)
        rc = nd_tensor_alloc(dev, &d, &t[i], &err);
    for (int i = 0; i < 2 && !rc; ++i) {
        for (int64_t e = 0; e < n; ++e)
            in[i][e] = (float)rng_range(&rng, -4000, 4000) / 32.0f;
        rc = nd_tensor_write(t[i], in[i], n * 4, &err);
    }
    rc = rc || launch(k, t, ND_VARIANT_GENERIC, want, n, &generic, &sg, &pg, &err) ||
         launch(k, t, ND_VARIANT_AUTO, got, n, &o.pick, &sp, &pp, &err);
    CHECK(rc == 0, "add %lldx%lld on %dx%d: %s", (long long)r, (long long)c, gx, gy, err.msg);
    int64_t bad = -1;
    for (int64_t e = 0; !rc && e < n && bad < 0; ++e)
        if (memcmp(&got[e], &want[e], 4) || got[e] != in[0][e] + in[1][e])
            bad = e;
    CHECK(!rc && bad < 0, "add %lldx%lld on %dx%d: element %lld: %s %g, generic %g, sum %g", (long long)r,
          (long long)c, gx, gy, (long long)bad, o.pick.symbol, bad < 0 ? 0.0 : (double)got[bad],
          bad < 0 ? 0.0 : (double)want[bad], bad < 0 ? 0.0 : (double)(in[0][bad] + in[1][bad]));
    bool same_stats = !rc && sg.ncores == sp.ncores && memcmp(pg, pp, (size_t)sg.ncores * sizeof *pg) == 0;
    CHECK(rc || same_stats, "add %lldx%lld: per-core statistics differ from the generic kernel's", (long long)r,
          (long long)c);
    o.ok = !rc && bad < 0 && same_stats;
    passed += o.ok;
    for (int i = 0; i < 3; ++i)
        nd_tensor_free(t[i]);
    free(in[0]), free(in[1]), free(got), free(want), free(pg), free(pp);
    return o;
}

static const char *jit_name(nd_jit_outcome j)
{
    static const char *const names[] = {"none", "hit", "built", "rebuilt", "failed"};
    return j >= ND_JIT_NONE && j <= ND_JIT_FAILED ? names[j] : "?";
}

/* The pick's JIT outcome and set are these. */
static void expect(const outcome *o, nd_jit_outcome jit, const char *fixed, const char *what)
{
    bool ok = o->ok && o->pick.jit == jit && strcmp(o->pick.fixed, fixed) == 0;
    CHECK(ok, "%s: jit %s (%s), fixed %s; want jit %s, fixed %s", what, jit_name(o->pick.jit), o->pick.jit_note,
          o->pick.fixed, jit_name(jit), fixed);
    passed += ok;
}

static void expect_files(const char *dir, int libs, const char *what)
{
    int so = count_files(dir, ".so"), manifests = count_files(dir, ".manifest");
    CHECK(so == libs && manifests == libs, "%s: %d libraries and %d manifests in the cache, want %d", what, so,
          manifests, libs);
    passed += so == libs && manifests == libs;
}

/* The sequence for one set: sizes, and a second layout differing in a parameter the set fixes. */
typedef struct set_case {
    const char *set;
    int gx, gy, gx2, gy2;             /* cores of the first launches, and of later sizes */
    nd_strategy strategy, strategy2;  /* strategy, and the differing fixed parameter */
    int mgx, mgy;                     /* the mismatching launch's cores */
} set_case;

static void run_set(const set_case *sc, const char *dir)
{
    char what[128];
    nd_kernels *k = open_kernels(sc->set, true);
    outcome o = add_case(k, 300, 200, sc->gx, sc->gy, sc->strategy);
    snprintf(what, sizeof what, "%s: first launch", sc->set);
    expect(&o, ND_JIT_BUILT, sc->set, what);
    expect_files(dir, 1, what);
    const nda_kernel_entry *built = o.pick.entry;
    o = add_case(k, 517, 77, sc->gx2, sc->gy2, sc->strategy); /* a new size (and for shard, new cores) */
    snprintf(what, sizeof what, "%s: another size, same kernels", sc->set);
    expect(&o, ND_JIT_NONE, sc->set, what);
    CHECK(o.pick.entry == built, "%s: %s ran, not the kernel built first", what, o.pick.symbol);
    nd_kernels_close(k);

    k = open_kernels(sc->set, true); /* as a new process: the cache's entry serves the new size */
    o = add_case(k, 33, 700, sc->gx2, sc->gy2, sc->strategy);
    snprintf(what, sizeof what, "%s: another size, fresh kernels", sc->set);
    expect(&o, ND_JIT_HIT, sc->set, what);
    expect_files(dir, 1, what);
    o = add_case(k, 300, 200, sc->mgx, sc->mgy, sc->strategy2); /* a fixed parameter differs */
    snprintf(what, sizeof what, "%s: a fixed parameter differs", sc->set);
    expect(&o, ND_JIT_BUILT, sc->set, what);
    expect_files(dir, 2, what);
    nd_kernels_close(k);

    k = open_kernels(sc->set, false); /* no JIT: only the generic kernel serves a 32x64 shard */
    o = add_case(k, 300, 200, sc->mgx, sc->mgy, sc->strategy2);
    snprintf(what, sizeof what, "%s: no JIT", sc->set);
    expect(&o, ND_JIT_NONE, "none", what);
    nd_kernels_close(k);
}

/* Whether every blank-separated word of words is a whole word of line. */
static bool has_words(const char *line, const char *words)
{
    char w[4096];
    for (const char *p = words; *p;) {
        while (*p == ' ')
            ++p;
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        snprintf(w, sizeof w, " %.*s ", (int)n, p);
        char padded[16384];
        snprintf(padded, sizeof padded, " %s ", line);
        padded[strcspn(padded, "\n")] = ' ';
        if (!strstr(padded, w))
            return false;
        p += n;
    }
    return true;
}

/* The compile command the wrapper logged (the line naming -shared), or "" when none. */
static void logged_compile(const char *log, char *line, size_t len)
{
    FILE *f = fopen(log, "r");
    line[0] = '\0';
    char buf[16384];
    while (f && fgets(buf, sizeof buf, f))
        if (strstr(buf, " -shared"))
            snprintf(line, len, "%s", buf);
    if (f)
        fclose(f);
}

/* One JIT build of a 32x64-shard add in a fresh cache, with cflags (NULL: the library's), through a
 * compiler that logs its arguments: the compile line. */
static void build_logged(char *const *words, const char *cflags, char *line, size_t len)
{
    char dir[] = "/tmp/ndgen-jit-flags-XXXXXX", wrapper[256], logpath[256], cmd[1024];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(wrapper, sizeof wrapper, "%s/logcc", dir);
    snprintf(logpath, sizeof logpath, "%s/log", dir);
    FILE *f = fopen(wrapper, "w");
    const char *cc = getenv("CC") && getenv("CC")[0] ? getenv("CC") : "cc";
    if (!f || fprintf(f, "#!/bin/sh\necho \"$@\" >> '%s'\nexec %s \"$@\"\n", logpath, cc) < 0 || fclose(f) ||
        chmod(wrapper, 0700)) {
        perror(wrapper);
        exit(1);
    }
    td_jit_config(&cfg, words, dir);
    cfg.cc = wrapper;
    cfg.cflags = cflags;
    nd_kernels *k = open_kernels("pattern", true);
    outcome o = add_case(k, 300, 200, 2, 2, ND_ROUND_ROBIN);
    expect(&o, ND_JIT_BUILT, "pattern", cflags ? "flags given: built" : "the library's flags: built");
    nd_kernels_close(k);
    logged_compile(logpath, line, len);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_partial_jit: could not remove %s\n", dir);
}

static void check_flags(char *const *words)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    const nda_kernel_library *reg = h ? dlsym(h, "nda_kernel_registry") : NULL;
    const char *want = getenv("NDGEN_TEST_KERNEL_CFLAGS");
    const char *rec = reg && reg->cflags ? reg->cflags : "";
    CHECK(reg && reg->cflags && want && has_words(rec, want), "the registry records flags \"%s\", want every word of "
          "NDGEN_KERNEL_CFLAGS \"%s\"", rec, want ? want : "(unset)");
    passed += reg && reg->cflags && want && has_words(rec, want);
    char line[16384];
    build_logged(words, NULL, line, sizeof line);
    CHECK(line[0] && has_words(line, rec), "a JIT given no flags compiled with \"%s\", not the library's \"%s\"", line,
          rec);
    passed += line[0] && has_words(line, rec);
    build_logged(words, "-O1 -DNDGEN_TEST_FLAGS_MARK=1", line, sizeof line);
    CHECK(has_words(line, "-O1 -DNDGEN_TEST_FLAGS_MARK=1"), "a JIT given flags compiled with \"%s\"", line);
    passed += has_words(line, "-O1 -DNDGEN_TEST_FLAGS_MARK=1");
    if (h)
        dlclose(h);
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: test_partial_jit LIB NDGEN SPEC_DIR TEMPLATE_DIR INCLUDE_DIR CFLAGS LDFLAGS [seed]\n");
        return 2;
    }
    lib = argv[1];
    rng = argc > 8 ? strtoull(argv[8], NULL, 0) : 17;
    printf("test_partial_jit: seed %llu\n", (unsigned long long)rng);
    nd_device_config dc;
    nd_device_config_init(&dc);
    dc.threads = 2;
    nd_error err;
    if (nd_device_open(&dc, &dev, &err)) {
        fprintf(stderr, "test_partial_jit: %s\n", err.msg);
        return 1;
    }
    static const set_case sets[] = {
        /* pattern: the grid is fixed, so 3x1 cores are another kernel */
        {"pattern", 2, 2, 2, 2, ND_ROUND_ROBIN, ND_ROUND_ROBIN, 3, 1},
        /* shard: any cores, so 2x2, then 3x2; the strategy is fixed */
        {"shard", 2, 2, 3, 2, ND_ROUND_ROBIN, ND_CONTIGUOUS, 2, 2},
    };
    for (size_t i = 0; i < sizeof sets / sizeof *sets; ++i) {
        char dir[] = "/tmp/ndgen-partial-jit-XXXXXX";
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
        td_jit_config(&cfg, argv + 2, dir);
        run_set(&sets[i], dir);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "test_partial_jit: could not remove %s\n", dir);
    }
    check_flags(argv + 2);
    nd_device_close(dev);
    return test_finish(passed);
}
