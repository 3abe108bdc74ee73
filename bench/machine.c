/*
 * machine.c - what the machine can do, measured in the same run as the kernels and on the same
 * threads: STREAM-style copy and add, a read-only stream and memcpy over arrays of the case's size,
 * the f32 multiply-add peak from registers, and OpenBLAS sgemm when ndrun was built with it; and what
 * the machine is (CPU model, CPUs, caches), read from the system, never assumed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ndrun.h"

#ifdef NDRUN_HAVE_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);
char *openblas_get_config(void);

/*
 * The OpenBLAS peer reads its settings from the environment once, when the library loads, before
 * main (OpenBLAS's "Runtime variables": OPENBLAS_CORETYPE overrides the detected CPU of a DYNAMIC_ARCH
 * build, OPENBLAS_THREAD_TIMEOUT bounds how long idle threads spin, as 2^N cycles, N from 4 to 30).
 * So before ndrun runs, it executes itself again once with:
 * - OPENBLAS_THREAD_TIMEOUT=4, so that the peer's threads sleep at once after each call instead of
 *   spinning for 2^28 cycles on the cores the next variant is timed on;
 * - OPENBLAS_CORETYPE=SkylakeX when the CPU has AVX-512 (F, CD, BW, DQ, VL) and OpenBLAS picked kernels
 *   without it (it maps CPUs it does not know, such as AMD Zen 4, to Haswell or Zen).
 * Either is left alone when the user set it. Only OpenBLAS reads these: the kernels never call it.
 */
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

static char peer_note[160];

/* glibc passes a program's constructors argc, argv and envp. */
__attribute__((constructor)) static void peer_environment(int argc, char **argv, char **envp)
{
    (void)argc, (void)envp;
    const char *core = openblas_get_corename();
    bool set_core = !getenv("OPENBLAS_CORETYPE") && !avx512_core(core ? core : "") && cpu_avx512();
    bool set_timeout = !getenv("OPENBLAS_THREAD_TIMEOUT");
    if (getenv("NDRUN_PEER_ENV")) { /* the second run: say what the first one set */
        snprintf(peer_note, sizeof peer_note, "%s", getenv("NDRUN_PEER_ENV"));
        return;
    }
    char note[sizeof peer_note] = "";
    if (set_core) {
        setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
        snprintf(note, sizeof note, "OPENBLAS_CORETYPE=SkylakeX (it picked %s on an AVX-512 CPU)", core ? core : "?");
    }
    if (set_timeout) {
        setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
        snprintf(note + strlen(note), sizeof note - strlen(note), "%sOPENBLAS_THREAD_TIMEOUT=4", note[0] ? ", " : "");
    }
    if (!note[0] || !argv || !argv[0])
        return;
    setenv("NDRUN_PEER_ENV", note, 1);
    execv("/proc/self/exe", argv); /* returns only on failure: run on, with the peer as it is */
    unsetenv("NDRUN_PEER_ENV");
}
#endif

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
    snprintf(cpu.peer, sizeof cpu.peer, "%.80s, kernels for %.24s%s%.150s", config ? config : "OpenBLAS", core ? core : "?",
             peer_note[0] ? "; set by ndrun for the peer alone: " : "", peer_note);
#else
    snprintf(cpu.peer, sizeof cpu.peer, "none (ndrun was built without OpenBLAS)");
#endif
    return &cpu;
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

double nr_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}


/* Static split, one piece per thread, as STREAM's OpenMP loops do. */
static void stream_piece(void *ctx, int64_t p)
{
    stream_job *j = ctx;
    int64_t lo = j->n * p / j->pieces, hi = j->n * (p + 1) / j->pieces;
    float *restrict a = j->a, *restrict b = j->b, *restrict c = j->c;
    switch (j->kind) {
    case 0:
        for (int64_t i = lo; i < hi; ++i) {
            a[i] = 1.0f;
            b[i] = 2.0f;
            c[i] = 0.0f;
        }
        break;
    case 1:
        for (int64_t i = lo; i < hi; ++i)
            c[i] = a[i];
        break;
    case 2:
        for (int64_t i = lo; i < hi; ++i)
            c[i] = a[i] + b[i];
        break;
    case NR_STREAM_READ: { /* four streams at once, each summed in 16 lanes: the loads set the pace, and a
                              reduction reading several rows per pass (reduce.c) is held to the bandwidth
                              several streams reach, not one */
        typedef float v16u __attribute__((vector_size(64), aligned(4)));
        v16u s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
        const int64_t q = (hi - lo) / 64 * 16; /* four quarters of whole 16-element blocks, the tail after */
        const float *a0 = a + lo, *a1 = a0 + q, *a2 = a1 + q, *a3 = a2 + q;
        for (int64_t i = 0; i < q; i += 16) {
            s0 += *(const v16u *)(a0 + i);
            s1 += *(const v16u *)(a1 + i);
            s2 += *(const v16u *)(a2 + i);
            s3 += *(const v16u *)(a3 + i);
        }
        float t = 0;
        for (int64_t i = lo + 4 * q; i < hi; ++i)
            t += a[i];
        s0 += s1 + s2 + s3;
        for (int k = 0; k < 16; ++k)
            t += s0[k];
        c[lo] = t; /* kept, so the loads are */
        break;
    }
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
        nr_flush_caches(dev, 3 * j->n * 4); /* cold, as every timed variant starts */
        double t0 = nr_now();
        nd_device_parallel(dev, j->pieces, stream_piece, j);
        t[n++] = nr_now() - t0;
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

typedef float v16 __attribute__((vector_size(64)));

typedef struct fma_job {
    float *sink;
    int iterations;
} fma_job;

/* Sixteen independent multiply-add chains per thread, long enough to hide the latency; each
 * multiply-add fused into one instruction, as the hardware's peak counts it. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=fast")))
#endif
static void fma_piece(void *ctx, int64_t p)
{
    const fma_job *j = ctx;
    float *sink = j->sink;
    v16 acc[16], x = {0}, y = {0};
    for (int i = 0; i < 16; ++i) {
        x[i] = 0.999f;
        y[i] = 0.001f;
    }
    for (int i = 0; i < 16; ++i)
        acc[i] = x * (float)(i + 1);
    for (int it = 0; it < j->iterations; ++it)
        for (int i = 0; i < 16; ++i)
            acc[i] = acc[i] * x + y;
    float total = 0;
    for (int i = 0; i < 16; ++i)
        total += acc[i][0];
    sink[p] = total;
}

/* The best of 5 runs of at least 20 ms each (a short run measures the clock ramping up and thread
 * wake-ups, not the FMA units). */
static double peak_gflops(nd_device *dev)
{
    int threads = nd_device_threads(dev);
    fma_job j = {calloc((size_t)threads, sizeof(float)), 1 << 12};
    double best = 0, t = 0;
    while (j.sink && j.iterations < 1 << 28) { /* lengthen until one run takes 20 ms */
        double t0 = nr_now();
        nd_device_parallel(dev, threads, fma_piece, &j);
        if ((t = nr_now() - t0) >= 0.02)
            break;
        j.iterations *= t < 0.002 ? 8 : 2;
    }
    for (int r = 0; r < 5 && j.sink; ++r) {
        double t0 = nr_now();
        nd_device_parallel(dev, threads, fma_piece, &j);
        double gf = 2.0 * 16 * 16 * (double)j.iterations * threads / (nr_now() - t0) / 1e9;
        best = gf > best ? gf : best;
    }
    free(j.sink);
    return best;
}

int nr_stream_open(nd_device *dev, int64_t bytes, stream_job *j)
{
    memset(j, 0, sizeof *j);
    j->n = (bytes + 3) / 4 < 1024 ? 1024 : (bytes + 3) / 4;
    j->pieces = nd_device_threads(dev);
    j->a = aligned_alloc(64, (size_t)(j->n * 4 + 63) / 64 * 64);
    j->b = aligned_alloc(64, (size_t)(j->n * 4 + 63) / 64 * 64);
    j->c = aligned_alloc(64, (size_t)(j->n * 4 + 63) / 64 * 64);
    if (!j->a || !j->b || !j->c) {
        nr_stream_close(j);
        return -1;
    }
    j->kind = 0;
    nd_device_parallel(dev, j->pieces, stream_piece, j); /* first touch by the threads that use it */
    return 0;
}

void nr_stream_close(stream_job *j)
{
    free(j->a);
    free(j->b);
    free(j->c);
    j->a = j->b = j->c = NULL;
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
    return (kind == NR_STREAM_ADD ? 3.0 : kind == NR_STREAM_READ ? 1.0 : 2.0) * (double)j->n * 4;
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

bool nr_have_openblas(void)
{
#ifdef NDRUN_HAVE_OPENBLAS
    return true;
#else
    return false;
#endif
}

void nr_sgemm(int threads, int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c)
{
#ifdef NDRUN_HAVE_OPENBLAS
    openblas_set_num_threads(threads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a, (int)k, b, (int)n, 0.0f,
                c, (int)n);
#else
    (void)threads, (void)m, (void)n, (void)k, (void)a, (void)b, (void)c;
#endif
}
