/*
 * machine.c - what the machine can do, measured in the same run as the kernels and on the same
 * threads: STREAM-style copy and add, a read-only stream and memcpy over arrays of the case's size,
 * the f32 multiply-add peak from registers, and OpenBLAS sgemm when ndrun was built with it; and what
 * the machine is (CPU model, CPUs, caches), read from the system, never assumed.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__SSE__)
#include <immintrin.h>
#endif

#include "ndrun.h"
#include "target.h"

#ifdef NDRUN_HAVE_OPENBLAS
char *openblas_get_corename(void);
char *openblas_get_config(void);
#endif

/*
 * The peers read settings from the environment once, when their libraries load, before main
 * (OpenBLAS's "Runtime variables": OPENBLAS_CORETYPE overrides the detected CPU of a DYNAMIC_ARCH
 * build, OPENBLAS_THREAD_TIMEOUT bounds how long idle threads spin, as 2^N cycles, N from 4 to 30;
 * OpenMP's OMP_WAIT_POLICY, read by libgomp under oneDNN and BLIS). So before ndrun runs, it executes
 * itself again once with:
 * - OPENBLAS_THREAD_TIMEOUT=4 and OMP_WAIT_POLICY=PASSIVE, so that a peer's threads sleep at once after
 *   each call instead of spinning on the cores the next variant is timed on;
 * - OPENBLAS_CORETYPE=SkylakeX when the CPU has AVX-512 (F, CD, BW, DQ, VL) and OpenBLAS picked kernels
 *   without it (it maps CPUs it does not know, such as AMD Zen 4, to Haswell or Zen).
 * Each is left alone when the user set it. Only the peers read these: the kernels never call them.
 */
#ifdef NDRUN_HAVE_OPENBLAS
static bool cpu_has(const char *flags, const char *flag)
{
    size_t n = strlen(flag);
    for (const char *p = strstr(flags, flag); p; p = strstr(p + 1, flag))
        if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

static bool cpu_avx512(void)
{
    char line[8192];
    bool yes = false;
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) {
            yes = cpu_has(line, "avx512f") && cpu_has(line, "avx512cd") && cpu_has(line, "avx512bw") &&
                  cpu_has(line, "avx512dq") && cpu_has(line, "avx512vl");
            break;
        }
    if (f)
        fclose(f);
    return yes;
}

static bool avx512_core(const char *name)
{
    static const char *const cores[] = {"SkylakeX", "Cooperlake", "SapphireRapids", "Zen4", "Zen5"};
    for (size_t i = 0; i < sizeof cores / sizeof *cores; ++i)
        if (strcmp(name, cores[i]) == 0)
            return true;
    return false;
}

#endif

static char peer_note[200];

/* Sets name=value unless the user set name, noting it. */
static void peer_setenv(char *note, size_t len, const char *name, const char *value, const char *why)
{
    if (getenv(name))
        return;
    setenv(name, value, 1);
    snprintf(note + strlen(note), len - strlen(note), "%s%s=%s%s", note[0] ? ", " : "", name, value, why);
}

/* glibc passes a program's constructors argc, argv and envp. */
__attribute__((constructor)) static void peer_environment(int argc, char **argv, char **envp)
{
    (void)argc, (void)envp;
    if (getenv("NDRUN_PEER_ENV")) { /* the second run: say what the first one set */
        snprintf(peer_note, sizeof peer_note, "%s", getenv("NDRUN_PEER_ENV"));
        return;
    }
    char note[sizeof peer_note] = "", why[80] = "";
#ifdef NDRUN_HAVE_OPENBLAS
    const char *core = openblas_get_corename();
    if (!avx512_core(core ? core : "") && cpu_avx512()) {
        snprintf(why, sizeof why, " (it picked %s on an AVX-512 CPU)", core ? core : "?");
        peer_setenv(note, sizeof note, "OPENBLAS_CORETYPE", "SkylakeX", why);
    }
    peer_setenv(note, sizeof note, "OPENBLAS_THREAD_TIMEOUT", "4", "");
#endif
#if defined(NDRUN_HAVE_DNNL) || defined(NDRUN_HAVE_BLIS)
    peer_setenv(note, sizeof note, "OMP_WAIT_POLICY", "PASSIVE", "");
#endif
    (void)why;
    if (!note[0] || !argv || !argv[0])
        return;
    setenv("NDRUN_PEER_ENV", note, 1);
    execv("/proc/self/exe", argv); /* returns only on failure: run on, with the peers as they are */
    unsetenv("NDRUN_PEER_ENV");
}

const nr_cpu *nr_machine_cpu(void)
{
    static nr_cpu cpu;
    static bool done;
    if (done)
        return &cpu;
    done = true;
    char line[1024], path[128];
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (colon && (strncmp(line, "model name", 10) == 0 || (!cpu.model[0] && strncmp(line, "Model", 5) == 0))) {
            snprintf(cpu.model, sizeof cpu.model, "%s", colon + 2);
            cpu.model[strcspn(cpu.model, "\n")] = '\0';
        }
    }
    if (f)
        fclose(f);
    if (!cpu.model[0])
        snprintf(cpu.model, sizeof cpu.model, "unknown CPU");
    snprintf(cpu.isa, sizeof cpu.isa, "%s", ND_ISA);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu.cpus = n > 0 ? (int)n : 1;
    for (int i = 0; i < 8; ++i) { /* cpu0's caches: level, type, size, and how many CPUs share each */
        int level = 0;
        char type[32] = "", size[32] = "", shared[256] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (!(f = fopen(path, "r")))
            break;
        if (fscanf(f, "%d", &level) != 1)
            level = 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%31s", type) != 1)
                type[0] = '\0';
            fclose(f);
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%31s", size) != 1)
                size[0] = '\0';
            fclose(f);
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
        if ((f = fopen(path, "r"))) {
            if (!fgets(shared, sizeof shared, f))
                shared[0] = '\0';
            fclose(f);
        }
        char *end;
        int64_t bytes = strtoll(size, &end, 10);
        bytes *= *end == 'K' ? 1024 : *end == 'M' ? 1 << 20 : *end == 'G' ? 1 << 30 : 1;
        int sharing = 0; /* CPUs in a list such as "0-1" or "0,2" */
        for (char *p = shared; *p && *p != '\n';) {
            long lo = strtol(p, &end, 10), hi = lo;
            if (end == p)
                break;
            if (*end == '-')
                hi = strtol(end + 1, &end, 10);
            sharing += (int)(hi - lo + 1);
            p = *end == ',' ? end + 1 : end;
        }
        int instances = sharing > 0 ? (cpu.cpus + sharing - 1) / sharing : 1;
        if (level == 1 && strcmp(type, "Instruction") != 0)
            cpu.l1d = bytes;
        else if (level == 2)
            cpu.l2 = bytes, cpu.l2_instances = instances;
        else if (level == 3)
            cpu.l3 = bytes, cpu.l3_instances = instances;
    }
#ifdef NDRUN_HAVE_OPENBLAS
    const char *config = openblas_get_config(), *core = openblas_get_corename();
    snprintf(cpu.peer, sizeof cpu.peer, "%.80s, kernels for %.24s", config ? config : "OpenBLAS", core ? core : "?");
    const char *user = getenv("OPENBLAS_CORETYPE");
    if (user && !strstr(peer_note, "OPENBLAS_CORETYPE") && !avx512_core(core ? core : "") && cpu_avx512())
        snprintf(cpu.peer + strlen(cpu.peer), sizeof cpu.peer - strlen(cpu.peer),
                 " (OPENBLAS_CORETYPE=%.20s, from the environment, keeps it off its AVX-512 kernels on this AVX-512 "
                 "CPU; unset it to compare with them)", user);
#else
    snprintf(cpu.peer, sizeof cpu.peer, "not built in");
#endif
    if (peer_note[0])
        snprintf(cpu.peer + strlen(cpu.peer), sizeof cpu.peer - strlen(cpu.peer), "; set by ndrun for the peers alone: %.180s",
                 peer_note);
    return &cpu;
}

/* Pinning: each of the device's threads (the caller among them) takes one piece of a job of as many
 * pieces, pins itself to the next CPU of the process's affinity mask, and waits until every thread has
 * one, so no thread can take two. */
typedef struct pin_job {
    cpu_set_t allowed;
    int cpus[CPU_SETSIZE];
    atomic_int taken;
    int threads;
} pin_job;

static void pin_piece(void *ctx, int64_t p)
{
    pin_job *j = ctx;
    (void)p;
    int i = atomic_fetch_add(&j->taken, 1);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(j->cpus[i], &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    while (atomic_load(&j->taken) < j->threads) /* every thread in the job before any leaves */
        sched_yield();
}

static pin_job pins;

/* Every thread of the device (the caller among them) allowed the whole of the process's mask again. */
static void unpin_piece(void *ctx, int64_t p)
{
    (void)p;
    const pin_job *j = ctx;
    pthread_setaffinity_np(pthread_self(), sizeof j->allowed, &j->allowed);
}

static void nr_run_unpinned_all(nd_device *dev)
{
    nd_device_parallel(dev, nd_device_threads(dev), unpin_piece, &pins);
}

bool nr_pin_threads(nd_device *dev)
{
    pin_job *j = &pins;
    static int n; /* CPUs of the process's mask, read once: after the first pinning this thread's own mask
                     is one CPU, and threads a later device starts inherit it */
    if (n == 0) {
        if (sched_getaffinity(0, sizeof j->allowed, &j->allowed) != 0)
            return false;
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &j->allowed))
                j->cpus[n++] = c;
    }
    j->threads = nd_device_threads(dev);
    if (j->threads > n) { /* more threads than CPUs: pinning would only stack them; let them all move */
        nr_run_unpinned_all(dev);
        return false;
    }
    atomic_store(&j->taken, 0);
    nd_device_parallel(dev, j->threads, pin_piece, j);
    return true;
}

void nr_run_unpinned(void (*fn)(void *ctx), void *ctx)
{
    cpu_set_t mine;
    bool pinned = CPU_COUNT(&pins.allowed) > 0 && pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0;
    if (pinned)
        pthread_setaffinity_np(pthread_self(), sizeof pins.allowed, &pins.allowed);
    fn(ctx);
    if (pinned)
        pthread_setaffinity_np(pthread_self(), sizeof mine, &mine);
}

int64_t nr_cache_bytes(void)
{
    const nr_cpu *c = nr_machine_cpu();
    int64_t n = c->l2 * c->l2_instances + c->l3 * c->l3_instances;
    return n > 0 ? n : 64 << 20; /* no cache sizes from the system: assume a large one */
}

typedef struct flush_job {
    uint8_t *buf;
    int64_t bytes, pieces;
    uint8_t round;
} flush_job;

static void flush_piece(void *ctx, int64_t p)
{
    flush_job *j = ctx;
    int64_t lo = j->bytes * p / j->pieces, hi = j->bytes * (p + 1) / j->pieces;
    memset(j->buf + lo, j->round, (size_t)(hi - lo));
}

void *nr_host_alloc(const nd_device *dev, int64_t bytes)
{
    const size_t h = (size_t)ND_HUGE_PAGE_BYTES, n = ((size_t)(bytes > 0 ? bytes : 1) + h - 1) / h * h;
    void *p = aligned_alloc(h, n);
    if (p)
        (void)madvise(p, n, nd_device_get_config(dev).huge_pages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE); /* advice */
    return p;
}

void nr_flush_caches(nd_device *dev, int64_t working_bytes)
{
    static flush_job j;
    if (working_bytes >= 4 * nr_cache_bytes()) /* too large to stay cached between runs: cold anyway */
        return;
    if (!j.buf) {
        j.bytes = 2 * nr_cache_bytes();
        j.buf = malloc((size_t)j.bytes);
        if (!j.buf)
            return;
    }
    j.pieces = nd_device_threads(dev);
    j.round++;
    nd_device_parallel(dev, j.pieces, flush_piece, &j);
}

void nr_cold(nd_device *dev, const nr_spans *run, const nr_spans *before)
{
    if (run && run->bytes >= 4 * nr_cache_bytes()) /* as nr_flush_caches: a run this large is cold anyway */
        return;
    if (!run || !nr_spans_evict(dev, run, before))
        nr_flush_caches(dev, run ? run->bytes : 0);
}

double nr_load_average(void)
{
    double load = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf", &load) != 1)
        load = -1;
    if (f)
        fclose(f);
    return load;
}

double nr_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


const char *nr_stream_name(int kind)
{
#define NR_STREAM_NAME(k, name, bytes) name,
    static const char *const names[] = {NR_STREAMS(NR_STREAM_NAME)};
#undef NR_STREAM_NAME
    return kind >= 0 && kind < NR_NSTREAMS ? names[kind] : "?";
}

int nr_limit_probes(int limit_kind, int kinds[NR_MAX_PROBES])
{
    static const int sets[][NR_MAX_PROBES + 1] = {
        [NR_STREAM_COPY] = {NR_STREAM_COPY, NR_STREAM_MEMCPY, NR_STREAM_COPY_NT, NR_STREAM_COPY_NT_CORE,
                            NR_STREAM_COPY_NT_ALIKE, -1},
        [NR_STREAM_MEMCPY] = {NR_STREAM_MEMCPY, NR_STREAM_COPY, NR_STREAM_COPY_NT, NR_STREAM_COPY_NT_CORE,
                              NR_STREAM_COPY_NT_ALIKE, -1},
        [NR_STREAM_ADD] = {NR_STREAM_ADD, NR_STREAM_ADD_NT, NR_STREAM_ADD_NT_CORE, NR_STREAM_ADD_NT_ALIKE, -1},
        [NR_STREAM_READ] = {NR_STREAM_READ, NR_STREAM_READ1, NR_STREAM_READ8},
    };
    int n = 0;
    if (limit_kind >= 0 && limit_kind < (int)(sizeof sets / sizeof *sets))
        for (; n < NR_MAX_PROBES && sets[limit_kind][n] > 0; ++n)
            kinds[n] = sets[limit_kind][n];
    return n;
}

/* The compile target's vectors (target.h), as the kernels use them; unaligned loads. */
typedef float vu __attribute__((vector_size(ND_VBYTES), aligned(4)));
enum { VLANES = ND_VBYTES / 4 };

/* A store that bypasses the caches (no read for ownership) of one target vector at y, aligned to it. */
static inline void stream_vec(float *y, vu x)
{
#if defined(__AVX512F__) && ND_VBYTES == 64
    _mm512_stream_ps(y, (__m512)x);
#elif defined(__AVX__) && ND_VBYTES == 32
    _mm256_stream_ps(y, (__m256)x);
#elif defined(__SSE__) && ND_VBYTES == 16
    _mm_stream_ps(y, (__m128)x);
#else
    memcpy(y, &x, sizeof x);
#endif
}

/* c[lo, hi) = a (+ b when add) with non-temporal stores of whole aligned 64-byte lines, plain ones at
 * the edges. The sums are computed in the target's vectors and stored from the registers: summed into
 * a buffer of 16 floats first, GCC built each line from 16 scalar adds and shuffles, a probe slower
 * than the add kernels it bounds (rows at 106% of it). */
static void stream_nt_run(float *restrict c, const float *restrict a, const float *restrict b, int64_t lo, int64_t hi)
{
    int64_t i = lo;
    for (; i < hi && ((uintptr_t)(c + i) & 63); ++i)
        c[i] = b ? a[i] + b[i] : a[i];
    for (; i + 16 <= hi; i += 16)
        for (int v = 0; v < 16; v += VLANES) {
            vu x = *(const vu *)(a + i + v);
            if (b)
                x += *(const vu *)(b + i + v);
            stream_vec(c + i + v, x);
        }
    for (; i < hi; ++i)
        c[i] = b ? a[i] + b[i] : a[i];
}

static void stream_nt(float *restrict c, const float *restrict a, const float *restrict b, int64_t lo, int64_t hi)
{
    stream_nt_run(c, a, b, lo, hi);
#if defined(__SSE__)
    _mm_sfence(); /* the streaming stores are globally visible before the piece returns */
#endif
}

/* The sum of a[lo, hi) read as `streams` (1, 4 or 8) sequential streams into eight vectors of the target
 * (target.h), so that the loads set the pace: the range's whole groups of eight vectors are cut into
 * `streams` equal parts, each read in order by 8 / streams of the accumulators taking consecutive
 * vectors in turn; the tail is added at the end. */
static float read_streams(const float *a, int64_t lo, int64_t hi, int streams)
{
    enum { L = VLANES, ACC = 8 };
    const int per_stream = ACC / streams; /* accumulators reading one stream */
    const int64_t iters = (hi - lo) / (ACC * L), part = iters * per_stream * L, step = per_stream * L;
    const float *base[ACC];
    for (int k = 0; k < ACC; ++k)
        base[k] = a + lo + k / per_stream * part + k % per_stream * L;
    vu s[ACC] = {{0}};
    for (int64_t i = 0; i < iters * step; i += step)
        for (int k = 0; k < ACC; ++k)
            s[k] += *(const vu *)(base[k] + i);
    float t = 0;
    for (int64_t i = lo + ACC * iters * L; i < hi; ++i)
        t += a[i];
    for (int k = 1; k < ACC; ++k)
        s[0] += s[k];
    for (int k = 0; k < L; ++k)
        t += s[0][k];
    return t;
}

/* Static split, one piece per thread, as STREAM's OpenMP loops do. */
static void stream_piece(void *ctx, int64_t p)
{
    stream_job *j = ctx;
    int64_t lo = j->n * p / j->pieces, hi = j->n * (p + 1) / j->pieces;
    float *restrict a = j->a, *restrict b = j->b, *restrict c = j->c;
    switch (j->kind) {
    case NR_STREAM_INIT:
        for (int64_t i = lo; i < hi; ++i) {
            a[i] = 1.0f;
            b[i] = 2.0f;
            c[i] = 0.0f;
        }
        for (int64_t i = 0; i < 3 * j->region; ++i)
            j->core[3 * j->region * p + i] = 1.0f;
        for (int k = 0; k < 3; ++k)
            for (int64_t i = lo; i < hi; ++i)
                j->alike[k][i] = (float)(k + 1);
        break;
    case NR_STREAM_COPY:
        for (int64_t i = lo; i < hi; ++i)
            c[i] = a[i];
        break;
    case NR_STREAM_ADD:
        for (int64_t i = lo; i < hi; ++i)
            c[i] = a[i] + b[i];
        break;
    case NR_STREAM_COPY_NT:
        stream_nt(c, a, NULL, lo, hi);
        break;
    case NR_STREAM_ADD_NT:
        stream_nt(c, a, b, lo, hi);
        break;
    case NR_STREAM_COPY_NT_CORE: /* the same, each piece's arrays in its own region, as a device core's */
    case NR_STREAM_ADD_NT_CORE: {
        float *r = j->core + 3 * j->region * p;
        stream_nt(r + 2 * j->region, r, j->kind == NR_STREAM_ADD_NT_CORE ? r + j->region : NULL, 0, hi - lo);
        break;
    }
    case NR_STREAM_COPY_NT_ALIKE: /* the same over arrays aligned alike, as the device's tensors are */
    case NR_STREAM_ADD_NT_ALIKE:
        stream_nt(j->alike[2], j->alike[0], j->kind == NR_STREAM_ADD_NT_ALIKE ? j->alike[1] : NULL, lo, hi);
        break;
    case NR_STREAM_READ1:
        c[lo] = read_streams(a, lo, hi, 1); /* kept, so the loads are */
        break;
    case NR_STREAM_READ: /* a reduction reading several rows per pass (reduce.c) is held to the bandwidth
                            several streams reach, not one */
        c[lo] = read_streams(a, lo, hi, 4);
        break;
    case NR_STREAM_READ8:
        c[lo] = read_streams(a, lo, hi, 8);
        break;
    default:
        memcpy(c + lo, a + lo, (size_t)(hi - lo) * sizeof *c);
        break;
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median seconds of one kernel over rounds, under the settings' repeat rules. */
static double median_of(nd_device *dev, stream_job *j, int kind, const nr_settings *s)
{
    double t[1000], start = nr_now();
    int n = 0;
    j->kind = kind;
    nd_device_parallel(dev, j->pieces, stream_piece, j); /* warm up */
    while (n < 1000 && (n < s->min_repeats || nr_now() - start < s->min_seconds / 4)) {
        nr_cold(dev, nr_stream_spans(j, kind), NULL); /* cold, as every timed variant starts */
        double t0 = nr_now();
        nd_device_parallel(dev, j->pieces, stream_piece, j);
        t[n++] = nr_now() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

/* The compile target's vectors (target.h), as the kernels use them; enough independent chains to
 * cover a multiply-add's latency times the FMA units (4 x 2 on current x86 cores), in registers. */
typedef float vt __attribute__((vector_size(ND_VBYTES)));
enum { FMA_LANES = ND_VBYTES / 4, FMA_CHAINS = ND_VREGS >= 32 ? 16 : 12 };

typedef struct fma_job {
    float *sink;
    int iterations;
} fma_job;

/* FMA_CHAINS independent multiply-add chains per thread, long enough to hide the latency; each
 * multiply-add fused into one instruction, as the hardware's peak counts it. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=fast")))
#endif
static void fma_piece(void *ctx, int64_t p)
{
    const fma_job *j = ctx;
    float *sink = j->sink;
    vt acc[FMA_CHAINS], x = {0}, y = {0};
    for (int i = 0; i < FMA_LANES; ++i) {
        x[i] = 0.999f;
        y[i] = 0.001f;
    }
    for (int i = 0; i < FMA_CHAINS; ++i)
        acc[i] = x * (float)(i + 1);
    for (int it = 0; it < j->iterations; ++it)
        for (int i = 0; i < FMA_CHAINS; ++i)
            acc[i] = acc[i] * x + y;
    float total = 0;
    for (int i = 0; i < FMA_CHAINS; ++i)
        total += acc[i][0];
    sink[p] = total;
}

/* One run of `iterations` multiply-adds per chain on every thread, in GFLOP/s; 0 out of memory. */
static double fma_run(nd_device *dev, int iterations, double *seconds)
{
    int threads = nd_device_threads(dev);
    fma_job j = {calloc((size_t)threads, sizeof(float)), iterations};
    *seconds = 0;
    if (!j.sink)
        return 0;
    double t0 = nr_now();
    nd_device_parallel(dev, threads, fma_piece, &j);
    *seconds = nr_now() - t0;
    free(j.sink);
    return 2.0 * FMA_CHAINS * FMA_LANES * (double)iterations * threads / *seconds / 1e9;
}

/* The f32 FMA peak: the best of runs of at least 20 ms each (a short run measures the clock ramping
 * up and thread wake-ups, not the FMA units). It is the machine's, not a case's, so the work is done
 * once per process and thread count: the length found, then 5 runs; each later call adds one run and
 * keeps the best so far, so a burst of load during the first runs does not stay the limit. Measured
 * in full for each of ndrun bench's cases it was 24 of `ndrun bench --tiny`'s 26 s on a 2-CPU Zen 3
 * VM. Host code runs one case at a time, so no lock. */
static double peak_gflops(nd_device *dev)
{
    static int threads, iterations;
    static double best;
    double t;
    if (iterations > 0 && threads == nd_device_threads(dev)) {
        double gf = fma_run(dev, iterations, &t);
        return best = gf > best ? gf : best;
    }
    threads = nd_device_threads(dev), best = 0;
    int it = 1 << 12;
    while (it < 1 << 28) { /* lengthen until one run takes 20 ms */
        if (fma_run(dev, it, &t) <= 0)
            return 0; /* out of memory: nothing kept, tried again at the next call */
        if (t >= 0.02)
            break;
        it *= t < 0.002 ? 8 : 2;
    }
    for (int r = 0; r < 5; ++r) {
        double gf = fma_run(dev, it, &t);
        best = gf > best ? gf : best;
    }
    iterations = best > 0 ? it : 0;
    return best;
}

int nr_stream_open(nd_device *dev, int64_t bytes, stream_job *j)
{
    memset(j, 0, sizeof *j);
    j->n = (bytes + 3) / 4 < 1024 ? 1024 : (bytes + 3) / 4;
    j->pieces = nd_device_threads(dev);
    /* One allocation, the arrays 65 and 130 lines past a multiple of 4 KiB from each other (as STREAM's
     * OFFSET): element i of each would otherwise share its cache set and DRAM bank, a conflict no kernel
     * of the case's distinct buffers has, which made the probes slower than the kernels they bound. */
    const int64_t stride = ((j->n * 4 + 4095) / 4096 * 4096 + 65 * 64) / 4;
    if (!(j->block = nr_host_alloc(dev, 3 * stride * 4)))
        return -1;
    j->a = j->block, j->b = j->a + stride, j->c = j->b + stride;
    /* Per piece, its parts of a, b and c back to back in one region, as the emulated device keeps each
     * core's pages of every tensor in the core's own memory: copies and adds with non-temporal stores ran
     * 0 to 12% faster so on this project's 2-CPU AMD EPYC VM (kernels at up to 108% of the probe over
     * the staggered arrays), a layout effect the probes must include to be a ceiling. */
    j->region = ((j->n / j->pieces + 1) * 4 + 4095) / 4096 * 4096 / 4;
    if (!(j->core = nr_host_alloc(dev, 3 * j->region * j->pieces * 4))) {
        free(j->block);
        return -1;
    }
    /* Each array an allocation of its own from a huge-page boundary, as the device maps each tensor (a
     * mapping of its own, entries in core order from its start): element i of a, b and c then share
     * their offset within a page, and their cache set. On a 2-CPU AMD EPYC (Zen 3, AVX2) the add
     * kernels ran 4 to 7% past both layouts above, and at 99 to 102% of this one. */
    for (int k = 0; k < 3; ++k)
        if (!(j->alike[k] = nr_host_alloc(dev, j->n * 4))) {
            nr_stream_close(j);
            return -1;
        }
    j->kind = 0;
    nd_device_parallel(dev, j->pieces, stream_piece, j); /* first touch by the threads that use it */
    if (nr_spans_add(&j->staggered, j->block, 3 * stride * 4) ||
        nr_spans_add(&j->cores, j->core, 3 * j->region * j->pieces * 4) ||
        nr_spans_add(&j->alikes, j->alike[0], j->n * 4) || nr_spans_add(&j->alikes, j->alike[1], j->n * 4) ||
        nr_spans_add(&j->alikes, j->alike[2], j->n * 4)) {
        nr_stream_close(j);
        return -1;
    }
    return 0;
}

const nr_spans *nr_stream_spans(const stream_job *j, int kind)
{
    if (kind == NR_STREAM_COPY_NT_ALIKE || kind == NR_STREAM_ADD_NT_ALIKE)
        return &j->alikes;
    return kind == NR_STREAM_COPY_NT_CORE || kind == NR_STREAM_ADD_NT_CORE ? &j->cores : &j->staggered;
}

void nr_stream_close(stream_job *j)
{
    nr_spans_free(&j->staggered);
    nr_spans_free(&j->cores);
    nr_spans_free(&j->alikes);
    free(j->block);
    free(j->core);
    for (int k = 0; k < 3; ++k)
        free(j->alike[k]), j->alike[k] = NULL;
    j->block = j->a = j->b = j->c = j->core = NULL;
}

double nr_stream_once(nd_device *dev, stream_job *j, int kind)
{
    j->kind = kind;
    double t0 = nr_now();
    nd_device_parallel(dev, j->pieces, stream_piece, j);
    return nr_now() - t0;
}

double nr_stream_bytes(const stream_job *j, int kind)
{
#define NR_STREAM_BYTES(k, name, bytes) bytes,
    static const int per_elem[] = {NR_STREAMS(NR_STREAM_BYTES)};
#undef NR_STREAM_BYTES
    return per_elem[kind] * (double)j->n;
}

void nr_measure_machine(nd_device *dev, int64_t bytes, const nr_settings *s, nr_machine *m)
{
    stream_job j;
    memset(m, 0, sizeof *m);
    if (nr_stream_open(dev, bytes, &j) == 0) {
        m->copy_gbs = nr_stream_bytes(&j, NR_STREAM_COPY) / median_of(dev, &j, NR_STREAM_COPY, s) / 1e9;
        m->add_gbs = nr_stream_bytes(&j, NR_STREAM_ADD) / median_of(dev, &j, NR_STREAM_ADD, s) / 1e9;
        m->memcpy_gbs = nr_stream_bytes(&j, NR_STREAM_MEMCPY) / median_of(dev, &j, NR_STREAM_MEMCPY, s) / 1e9;
        m->read_gbs = nr_stream_bytes(&j, NR_STREAM_READ) / median_of(dev, &j, NR_STREAM_READ, s) / 1e9;
        nr_stream_close(&j);
    }
    m->peak_gflops = peak_gflops(dev);
}
