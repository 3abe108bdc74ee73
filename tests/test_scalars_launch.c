/*
 * test_scalars_launch: typed launch scalars at run time (issue 15), on tests/scalars/scalars.lua.
 *
 *  - axpb, out = (alpha * a + beta) * times, whose template reads its scalars by name: random values
 *    in the declared ranges pick the kernel whose fixed values they match (two of three fixed, all
 *    fixed), else the one fixing none; every variant equals the generic kernel bit for bit and a plain
 *    loop written here, with identical statistics;
 *  - a kernel fixing other values is never taken: SPECIALIZED fails with ND_ENOENT, AUTO runs generic;
 *  - values outside the declaration are refused before anything runs (count, range, integer, f32
 *    underflow), with the scalar named;
 *  - reduce_sum with the axes fixed by a target reads constants, and equals the generic kernel;
 *  - a generic kernel reading a scalar by name launched without names (nd_launch) stops with a message;
 *  - a second library declaring axpb's scalars in another order (tests/scalars/reordered.lua) is refused
 *    whole, so its kernel never reads beta as alpha: the launch on its distribution runs generic.
 * Usage: test_scalars_launch LIB REORDERED_LIB [cases [seed]]
 */
#include <math.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device_setup.h"
#include "nd_runtime.h"
#include "testutil.h"

static nd_kernels *K;
static nd_device *dev;
static int64_t passed;

enum { ROWS = 300, COLS = 200, RCOLS = 520 };

/* Operand k of the kernel named symbol, at its target's distribution. */
static nd_tensor *alloc(const char *symbol, int k)
{
    nd_dist d;
    nd_tensor *t = NULL;
    nd_error err;
    int gx, gy, rc = -1;
    snprintf(err.msg, sizeof err.msg, "no kernel %s", symbol);
    for (int i = 0; i < nd_kernels_count(K) && rc; ++i) {
        const nda_kernel_entry *e = nd_kernels_entry(K, i);
        if (strcmp(e->symbol, symbol) == 0)
            rc = nd_dist_from_signature(e->signatures[k], &d, &gx, &gy, &err) || nd_dist_make(&d.spec, gx, gy, &d, &err) ||
                 nd_tensor_alloc(dev, &d, &t, &err);
    }
    CHECK(rc == 0, "alloc: %s", err.msg);
    return t;
}

typedef struct result {
    float out[ROWS * RCOLS];
    nd_kernel_pick pick;
    nda_stats total;
} result;

static int run(const char *op, nd_tensor **t, const double *sc, int nsc, nd_variant want, int64_t n, result *r,
               nd_error *err)
{
    nd_launch_stats st;
    memset(r->out, 0, sizeof r->out);
    if (nd_tensor_write(t[1], r->out, n * 4, err) ||
        nd_run(&(nd_launch_desc){.device = dev, .kernels = K, .op = op, .tensors = t, .ntensors = 2, .scalars = sc,
                                 .nscalars = nsc, .variant = want, .pick = &r->pick, .stats = &st}, err))
        return -1;
    r->total = st.total;
    return nd_tensor_read(t[1], r->out, n * 4, err);
}

static float in[ROWS * RCOLS];
static result g, s;

/* One draw of axpb's scalars: sometimes a target's fixed values, else random ones in range. */
static void axpb_case(uint64_t *rng, char *desc)
{
    static const double fixed[][3] = {{2, 0, 3}, {0.5, -1, 1}};
    int kind = (int)rng_range(rng, 0, 2);
    double sc[3] = {(double)rng_range(rng, -400, 400) / 64.0, (double)rng_range(rng, -640, 640) / 64.0,
                    (double)rng_range(rng, 1, 4)};
    if (kind == 0) { /* t0 fixes alpha and times; beta stays random */
        sc[0] = fixed[0][0];
        sc[2] = fixed[0][2];
    } else if (kind == 1) {
        memcpy(sc, fixed[1], sizeof sc);
    }
    snprintf(desc, 128, "axpb alpha=%g beta=%g times=%g", sc[0], sc[1], sc[2]);
    const char *want = kind == 0 ? "nd_axpb__f32__t0" : kind == 1 ? "nd_axpb__f32__t2" : "nd_axpb__f32__t1";
    if (kind == 2 && sc[0] == 2 && sc[2] == 3)
        want = "nd_axpb__f32__t0";
    nd_tensor *t[2] = {alloc("nd_axpb__f32__t1", 0), alloc("nd_axpb__f32__t1", 1)};
    nd_error err;
    for (int64_t e = 0; e < ROWS * COLS; ++e)
        in[e] = (float)rng_range(rng, -1000, 1000) / 8.0f;
    int rc = nd_tensor_write(t[0], in, ROWS * COLS * 4, &err) ||
             run("axpb", t, sc, 3, ND_VARIANT_GENERIC, ROWS * COLS, &g, &err) ||
             run("axpb", t, sc, 3, ND_VARIANT_SPECIALIZED, ROWS * COLS, &s, &err);
    CHECK(rc == 0, "%s", err.msg);
    if (rc == 0) {
        CHECK(strcmp(s.pick.symbol, want) == 0, "picked %s, want %s", s.pick.symbol, want);
        int64_t bad = -1;
        for (int64_t e = 0; e < ROWS * COLS && bad < 0; ++e) {
            float ref = ((float)sc[0] * in[e] + (float)sc[1]) * (float)sc[2];
            if (memcmp(&g.out[e], &s.out[e], 4) != 0 || g.out[e] != ref)
                bad = e;
        }
        CHECK(bad < 0, "element %lld: specialized %g, generic %g", (long long)bad, (double)s.out[bad], (double)g.out[bad]);
        CHECK(memcmp(&g.total, &s.total, sizeof g.total) == 0, "statistics differ");
        passed += bad < 0;
    }
    nd_tensor_free(t[0]);
    nd_tensor_free(t[1]);
}

/* Values outside the declaration, and a kernel that fixed other values. */
static void refusals(void)
{
    nd_tensor *t[2] = {alloc("nd_axpb__f32__t1", 0), alloc("nd_axpb__f32__t1", 1)};
    nd_error err;
    static const struct {
        double v[3];
        int n;
        const char *text;
    } bad[] = {
        {{1, 11, 1}, 3, "scalar 'beta' = 11 is outside [-10, 10], the range its spec declares"},
        {{1, 0, 2.5}, 3, "scalar 'times' = 2.5 is not an integer of int32_t (i32)"},
        {{1, 0, 5}, 3, "scalar 'times' = 5 is outside [1, 4]"},
        {{1e-50, 0, 1}, 3, "scalar 'alpha' = 1e-50 is not a finite float (f32): it underflows to 0"},
        {{1e39, 0, 1}, 3, "scalar 'alpha' = 1e+39 is not a finite float (f32)"},
        {{NAN, 0, 1}, 3, "scalar 'alpha' = nan is not a finite float"},
        {{1, 0, 1}, 2, "op 'axpb' takes 3 scalar values (alpha: f32, beta: f32 in [-10, 10], times: i32 in [1, 4]), "
                       "but the launch gives 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
        int rc = run("axpb", t, bad[i].v, bad[i].n, ND_VARIANT_AUTO, ROWS * COLS, &s, &err);
        CHECK_ERROR(rc, err, ND_EINVAL, bad[i].text);
        passed += rc == -1;
    }
    double other[3] = {3, 1, 2}, own[3] = {2, 1, 2};
    int rc = run("axpb_fixed_only", t, other, 3, ND_VARIANT_SPECIALIZED, ROWS * COLS, &s, &err);
    CHECK_ERROR(rc, err, ND_ENOENT, "fixed other scalar values than the launch gives");
    rc = run("axpb_fixed_only", t, other, 3, ND_VARIANT_AUTO, ROWS * COLS, &s, &err);
    CHECK(rc == 0 && !s.pick.specialized, "AUTO with other values: rc %d, picked %s", rc, rc ? err.msg : s.pick.symbol);
    rc = run("axpb_fixed_only", t, own, 3, ND_VARIANT_AUTO, ROWS * COLS, &s, &err);
    CHECK(rc == 0 && strcmp(s.pick.symbol, "nd_axpb_fixed_only__f32__t0") == 0, "its own values: %s",
          rc ? err.msg : s.pick.symbol);
    nd_kernel_pick pick; /* without values, only a kernel fixing none: `scalars = {}` fixes none */
    rc = nd_kernels_pick(K, "axpb_fixes_none", t, 2, ND_VARIANT_SPECIALIZED, &pick, &err);
    CHECK(rc == 0 && strcmp(pick.symbol, "nd_axpb_fixes_none__f32__t0") == 0, "scalars = {}: %s",
          rc ? err.msg : pick.symbol);
    rc = nd_kernels_pick(K, "axpb_fixed_only", t, 2, ND_VARIANT_SPECIALIZED, &pick, &err);
    CHECK_ERROR(rc, err, ND_ENOENT, "fixed other scalar values");
    passed += 2;
    const nda_kernel_entry *fixed = NULL; /* launched directly with other values: refused, not run */
    for (int i = 0; i < nd_kernels_count(K); ++i)
        if (strcmp(nd_kernels_entry(K, i)->symbol, "nd_axpb_fixed_only__f32__t0") == 0)
            fixed = nd_kernels_entry(K, i);
    rc = fixed ? nd_launch_entry(dev, fixed, t, 2, other, 3, NULL, &err) : -2;
    CHECK_ERROR(rc, err, ND_EREFUSED, "fixed other scalar values than the launch gives");
    double zero[3] = {1, 0.0, 1}, minus_zero[3] = {1, -0.0, 1}; /* fixed values match to the bit */
    rc = run("axpb_negative_zero", t, zero, 3, ND_VARIANT_AUTO, ROWS * COLS, &s, &err);
    CHECK(rc == 0 && !s.pick.specialized, "beta 0.0 took %s, fixed for -0.0", rc ? err.msg : s.pick.symbol);
    rc = run("axpb_negative_zero", t, minus_zero, 3, ND_VARIANT_AUTO, ROWS * COLS, &s, &err);
    CHECK(rc == 0 && s.pick.specialized, "beta -0.0: %s", rc ? err.msg : s.pick.symbol);
    passed += 5;
    nd_tensor_free(t[0]);
    nd_tensor_free(t[1]);
}

/* reduce_sum over axis 1 and axis 0 of [300,520], by the kernels fixing them and the generic one. */
static void fixed_axes(void)
{
    uint64_t rng = 77;
    for (int64_t e = 0; e < ROWS * RCOLS; ++e)
        in[e] = (float)rng_range(&rng, -1000, 1000) / 16.0f;
    for (int axis = 0; axis < 2; ++axis) {
        int64_t oshape[1] = {axis ? ROWS : RCOLS};
        const char *want = axis ? "nd_reduce_sum__f32__t1" : "nd_reduce_sum__f32__t2";
        nd_tensor *t[2] = {alloc(want, 0), alloc(want, 1)};
        double sc[1] = {axis};
        nd_error err;
        int rc = nd_tensor_write(t[0], in, ROWS * RCOLS * 4, &err) ||
                 run("reduce_sum", t, sc, 1, ND_VARIANT_GENERIC, oshape[0], &g, &err) ||
                 run("reduce_sum", t, sc, 1, ND_VARIANT_SPECIALIZED, oshape[0], &s, &err);
        CHECK(rc == 0, "%s", err.msg);
        if (rc == 0) {
            CHECK(strcmp(s.pick.symbol, want) == 0, "axis %d: picked %s, want %s (the kernel fixing the axes)", axis,
                  s.pick.symbol, want);
            CHECK(memcmp(g.out, s.out, (size_t)oshape[0] * 4) == 0, "axis %d: fixed axes differ from generic", axis);
            double worst = 0;
            for (int64_t o = 0; o < oshape[0]; ++o) { /* inputs are multiples of 1/16: every sum is exact */
                double ref = 0;
                for (int64_t k = 0; k < (axis ? RCOLS : ROWS); ++k)
                    ref += in[axis ? o * RCOLS + k : k * RCOLS + o];
                worst = fmax(worst, fabs(ref - s.out[o]));
            }
            CHECK(worst == 0, "axis %d: off the reference by %g", axis, worst);
            CHECK(memcmp(&g.total, &s.total, sizeof g.total) == 0, "axis %d: statistics differ", axis);
            passed += 4;
        }
        nd_tensor_free(t[0]);
        nd_tensor_free(t[1]);
    }
}

/* nd_launch gives a kernel no scalar names: a generic kernel reading a scalar by name stops the process
 * (SIGABRT) with a message naming the scalar, never reads a wrong value. */
static void bare_launch(void)
{
    nda_kernel_fn *fn = NULL;
    for (int i = 0; i < nd_kernels_count(K); ++i) /* the generic kernel: a specialized one knows the indices */
        if (strcmp(nd_kernels_entry(K, i)->symbol, "nd_axpb__f32__generic") == 0)
            fn = nd_kernels_entry(K, i)->fn;
    int fd[2];
    CHECK(fn && pipe(fd) == 0, "no kernel nd_axpb__f32__generic, or no pipe");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) { /* a device of its own: the parent's worker threads do not exist in the child */
        double sc[3] = {1, 1, 1};
        nd_error err;
        nd_device_config cfg;
        nd_device_config_init(&cfg);
        dup2(fd[1], 2);
        cfg.threads = 2;
        if (nd_device_open(&cfg, &dev, &err) == 0) {
            nd_tensor *t[2] = {alloc("nd_axpb__f32__t1", 0), alloc("nd_axpb__f32__t1", 1)};
            nd_launch(dev, fn, t, 2, sc, 3, NULL, &err);
        }
        fprintf(stderr, "the launch returned: %s\n", err.msg);
        _exit(0);
    }
    close(fd[1]);
    char msg[512] = "";
    ssize_t n = read(fd[0], msg, sizeof msg - 1);
    msg[n > 0 ? n : 0] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && strstr(msg, "launch scalar 'alpha'"),
          "a bare launch reading scalars by name: status %d, message '%s'", status, msg);
    passed += WIFSIGNALED(status);
}

/* A library declaring another order of axpb's scalars, loaded after LIB: refused, and a launch on its
 * target's distribution gives the values their declared meaning (the generic kernel runs). */
static void reordered(const char *path)
{
    nd_kernels *other = NULL;
    nd_tensor *t[2] = {NULL, NULL};
    nd_error err;
    int rc = nd_kernels_open(&other, &err) || nd_kernels_load(other, path, &err);
    CHECK(rc == 0, "%s", err.msg);
    for (int i = 0; i < (rc ? 0 : nd_kernels_count(other)); ++i) { /* its target's distribution */
        const nda_kernel_entry *e = nd_kernels_entry(other, i);
        for (int k = 0; k < 2 && e->signatures; ++k) {
            nd_dist d;
            int gx, gy;
            rc |= nd_dist_from_signature(e->signatures[k], &d, &gx, &gy, &err) ||
                  nd_dist_make(&d.spec, gx, gy, &d, &err) || nd_tensor_alloc(dev, &d, &t[k], &err);
        }
    }
    CHECK(rc == 0 && t[0] && t[1], "tensors of %s: %s", path, err.msg);
    if (rc == 0 && t[0] && t[1]) {
        rc = nd_kernels_load(K, path, &err);
        CHECK_ERROR(rc, err, ND_ESTALE, "op 'axpb' declares the launch scalars 'beta: f32 in [-10, 10], alpha: f32, "
                                        "times: i32 in [1, 4]', but a library loaded before declares 'alpha: f32, ");
        double sc[3] = {0.5, 3, 2}; /* alpha, beta, times as LIB declares them */
        for (int64_t e = 0; e < ROWS * COLS; ++e)
            in[e] = (float)(e % 97) / 8.0f;
        rc = nd_tensor_write(t[0], in, ROWS * COLS * 4, &err) ||
             run("axpb", t, sc, 3, ND_VARIANT_AUTO, ROWS * COLS, &s, &err);
        CHECK(rc == 0, "%s", err.msg);
        int64_t bad = -1;
        for (int64_t e = 0; e < ROWS * COLS && bad < 0 && rc == 0; ++e)
            bad = s.out[e] != (0.5f * in[e] + 3.0f) * 2.0f ? e : -1;
        CHECK(rc == 0 && bad < 0, "%s: element %lld is %g, want %g", s.pick.symbol, (long long)bad,
              bad < 0 ? 0.0 : (double)s.out[bad], bad < 0 ? 0.0 : (double)((0.5f * in[bad] + 3.0f) * 2.0f));
        passed += 2;
    }
    nd_tensor_free(t[0]);
    nd_tensor_free(t[1]);
    nd_kernels_close(other);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_scalars_launch LIB REORDERED_LIB [cases [seed]]\n");
        return 2;
    }
    if (td_open_library("test_scalars_launch", argv[1], 2, &K, &dev))
        return 1;
    char *sub[] = {argv[0], argc > 3 ? argv[3] : "30", argc > 4 ? argv[4] : "1500"};
    test_run_cases(3, sub, 0, 0, axpb_case);
    refusals();
    fixed_axes();
    bare_launch();
    reordered(argv[2]);
    nd_device_close(dev);
    nd_kernels_close(K);
    return test_finish(passed);
}
