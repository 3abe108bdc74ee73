/*
 * test_contract.c - random contractions (matmul, bmm, scores, context, matvec) at sizes that cross every block
 * of templates/contract.h on the machine running the test: the register tile (CT_MR x CT_NR, from the compile target), kc along k,
 * mc rows and nc columns (each drawn past its block by an uneven tail), on random distributions (row,
 * narrow and tile pages, one or several cores, interleaved DRAM, k split over cores). The generic
 * kernel of the op library (the templates compiled as-is) is checked against plain loops here,
 * accumulating in double.
 *
 * Tolerance: a sum of K products accumulated in f32, with one rounding per multiply-add, is within
 * K * 2^-24 * sum |a_k b_k| (to first order) of the exact sum; the test allows twice that, plus the
 * rounding of the result itself.
 *
 * Usage: test_contract LIBRARY [cases [seed]]; the seed is printed first.
 */
#include <float.h>
#include <math.h>
#include <time.h>

#include "contract.h"
#include "nd_runtime.h"
#include "testutil.h"

enum { MAX_AXES = 4 };

/* One op: its index letters, as the bundled specs (specs/einsum.lua) declare them. */
typedef struct op_def {
    const char *name, *ix[3];
} op_def;

static const op_def ops[] = {
    {"matmul", {"ik", "kj", "ij"}},
    {"bmm", {"bik", "bkj", "bij"}},
    {"scores", {"bhqd", "bhkd", "bhqk"}},
    {"context", {"bhqk", "bhkd", "bhqd"}},
    {"matvec", {"ij", "j", "i"}},
};

static nd_kernels *lib;
static ct_blocks blocks;

/* A size past a block of n: n plus an uneven tail of 1 to `over`. */
static int64_t past(uint64_t *rng, int64_t n, int64_t over)
{
    return n + rng_range(rng, 1, over);
}

/* Letter sizes: the output's columns past nc, its rows past mc, the reduced letters past kc; batch
 * letters small. An output of one axis (matvec) has classes of one row, whose blocks are
 * ct_blocks_rows(K): one time in two, k past that block's 16384 steps (so a lane's dot is carried
 * between steps of k) and the columns past its block of columns. */
static void draw_sizes(uint64_t *rng, const op_def *op, int64_t *size)
{
    const char *out = op->ix[2];
    char col = out[strlen(out) - 1];
    for (int c = 'a'; c <= 'z'; ++c)
        size[c] = 0;
    if (strlen(out) == 1 && rng_range(rng, 0, 1)) {
        const int64_t k = past(rng, ct_blocks_rows(1 << 30).kc, 100);
        for (int t = 0; t < 2; ++t)
            for (const char *p = op->ix[t]; *p; ++p)
                size[(unsigned char)*p] = *p == col ? past(rng, ct_blocks_rows(k).nc, 2 * CT_NR + 5) : k;
        return;
    }
    for (int t = 0; t < 2; ++t)
        for (const char *p = op->ix[t]; *p; ++p) {
            unsigned char c = (unsigned char)*p;
            if (size[c])
                continue;
            bool in_out = strchr(out, c) != NULL, in_a = strchr(op->ix[0], c), in_b = strchr(op->ix[1], c);
            if (!in_out) /* reduced: one time in three one step of k, stored from the tile; else one to two past kc */
                size[c] = rng_range(rng, 0, 2) ? past(rng, blocks.kc, blocks.kc) : rng_range(rng, 1, blocks.kc);
            else if (c == col)
                size[c] = past(rng, blocks.nc, 2 * CT_NR + 5);
            else if (in_a && in_b)
                size[c] = rng_range(rng, 1, 2); /* a batch letter */
            else
                size[c] = past(rng, blocks.mc, 2 * CT_MR + 3);
        }
}

static void shape_text(const char *ix, const int64_t *size, char *text, size_t len)
{
    text[0] = '\0';
    for (const char *p = ix; *p; ++p)
        snprintf(text + strlen(text), len - strlen(text), "%s%lld", p == ix ? "" : ",",
                 (long long)size[(unsigned char)*p]);
}

/*
 * A random distribution of a tensor of shape ix: kind 0 one core, row pages; 1 two cores split on the
 * first axis; 2 pages narrower than a panel (17 elements: columns cross panels unevenly); 3 32x32
 * tiles on 2x2 cores; 4 interleaved in DRAM; 5 split on the last axis over two cores (for an input
 * whose last axis is reduced, k lives on two cores).
 */
static int make_dist(int kind, const char *ix, const int64_t *size, nd_dist *d, char *desc, nd_error *err)
{
    int r = (int)strlen(ix);
    char shape[128], shard[128], page[128];
    int64_t sh[MAX_AXES];
    for (int i = 0; i < r; ++i)
        sh[i] = size[(unsigned char)ix[i]];
    shape_text(ix, size, shape, sizeof shape);
    nd_dist_flags f = {.shape = shape, .grid = "1x1", .l1_size = "512M"};
    int64_t part[MAX_AXES];
    memcpy(part, sh, sizeof part);
    if (kind == 1 || kind == 3)
        part[0] = (sh[0] + 1) / 2;
    if (kind == 5)
        part[r - 1] = (sh[r - 1] + 1) / 2;
    if (kind == 2) /* whole pages: the shard's last axis rounded up to them, its padding past the tensor */
        part[r - 1] = (sh[r - 1] + 16) / 17 * 17;
    if (kind == 3 && r >= 2) { /* tiles need the last two axes whole multiples of 32 in the shard */
        part[r - 2] = (sh[r - 2] + 63) / 64 * 32;
        part[r - 1] = (sh[r - 1] + 63) / 64 * 32;
        part[0] = r > 2 ? 1 : part[0];
        f.tile = "32x32";
    }
    shard[0] = page[0] = '\0';
    for (int i = 0; i < r; ++i) {
        snprintf(shard + strlen(shard), sizeof shard - strlen(shard), "%s%lld", i ? "," : "", (long long)part[i]);
        snprintf(page + strlen(page), sizeof page - strlen(page), "%s%d", i ? "," : "", i + 1 < r ? 1 : 17);
    }
    if (kind == 4) {
        f.interleaved = true;
        f.buffer = "dram";
        f.banks = "3";
        f.grid = "2x1";
    } else {
        f.shard = shard;
        f.grid = kind == 0 || kind == 2 ? "1x1" : kind == 3 ? "2x2" : "2x1";
    }
    if (kind == 2)
        f.page = page;
    if (kind == 3 && r < 2)
        f.tile = NULL;
    snprintf(desc + strlen(desc), 1024 - strlen(desc), " %s[%s]%s", ix, shape,
             (const char *[]){"one core", "rows on 2", "17-wide pages", "tiles on 2x2", "DRAM", "last axis on 2"}[kind]);
    return nd_dist_from_flags(&f, d, err);
}

/* The exact contraction, and per element the bound sum |a_k b_k| the f32 sum may stray by. */
static void reference(const op_def *op, const int64_t *size, const float *a, const float *b, double *want,
                      double *mag)
{
    const char *out = op->ix[2];
    char red[8];
    int nred = 0;
    for (int t = 0; t < 2; ++t)
        for (const char *p = op->ix[t]; *p; ++p)
            if (!strchr(out, *p) && !memchr(red, *p, (size_t)nred))
                red[nred++] = *p;
    int64_t nout = 1, nk = 1, val[128] = {0};
    for (const char *p = out; *p; ++p)
        nout *= size[(unsigned char)*p];
    for (int i = 0; i < nred; ++i)
        nk *= size[(unsigned char)red[i]];
    for (int64_t o = 0; o < nout; ++o) {
        int64_t rest = o;
        for (int i = (int)strlen(out) - 1; i >= 0; --i) {
            val[(unsigned char)out[i]] = rest % size[(unsigned char)out[i]];
            rest /= size[(unsigned char)out[i]];
        }
        double s = 0, m = 0;
        for (int64_t k = 0; k < nk; ++k) {
            int64_t left = k, xa = 0, xb = 0;
            for (int i = nred - 1; i >= 0; --i) {
                val[(unsigned char)red[i]] = left % size[(unsigned char)red[i]];
                left /= size[(unsigned char)red[i]];
            }
            for (const char *p = op->ix[0]; *p; ++p)
                xa = xa * size[(unsigned char)*p] + val[(unsigned char)*p];
            for (const char *p = op->ix[1]; *p; ++p)
                xb = xb * size[(unsigned char)*p] + val[(unsigned char)*p];
            double pr = (double)a[xa] * b[xb];
            s += pr;
            m += fabs(pr);
        }
        want[o] = s;
        mag[o] = m * (double)nk;
    }
}

static int64_t elems(const char *ix, const int64_t *size)
{
    int64_t n = 1;
    for (const char *p = ix; *p; ++p)
        n *= size[(unsigned char)*p];
    return n;
}

/* One contraction of the given sizes on random distributions, its generic kernel against the reference. */
static void check_case(uint64_t *rng, char *desc, const op_def *op, const int64_t *size)
{
    nd_device_config cfg;
    nd_device *dev = NULL;
    nd_tensor *t[3] = {0};
    nd_dist d[3];
    nd_error err;
    snprintf(desc, 1024, "%s", op->name);
    nd_device_config_init(&cfg);
    cfg.grid_x = cfg.grid_y = 2;
    cfg.l1_bytes = 512 << 20;
    cfg.threads = 2;
    int rc = nd_device_open(&cfg, &dev, &err);
    for (int i = 0; i < 3 && !rc; ++i)
        rc = make_dist((int)rng_range(rng, 0, 5), op->ix[i], size, &d[i], desc, &err) ||
             nd_tensor_alloc(dev, &d[i], &t[i], &err);
    int64_t na = elems(op->ix[0], size), nb = elems(op->ix[1], size), no = elems(op->ix[2], size);
    float *a = malloc((size_t)na * 4), *b = malloc((size_t)nb * 4), *got = malloc((size_t)no * 4);
    double *want = malloc((size_t)no * 8), *mag = malloc((size_t)no * 8);
    CHECK(rc == 0 && a && b && got && want && mag, "set-up: %s", rc ? err.msg : "out of memory");
    if (rc == 0 && a && b && got && want && mag) {
        for (int64_t i = 0; i < na; ++i)
            a[i] = (float)(rng_range(rng, -(1 << 20), 1 << 20) / (double)(1 << 20));
        for (int64_t i = 0; i < nb; ++i)
            b[i] = (float)(rng_range(rng, -(1 << 20), 1 << 20) / (double)(1 << 20));
        rc = nd_tensor_write(t[0], a, na * 4, &err) || nd_tensor_write(t[1], b, nb * 4, &err) ||
             nd_run(&(nd_launch_desc){.device = dev, .kernels = lib, .op = op->name, .tensors = t, .ntensors = 3,
                                      .variant = ND_VARIANT_GENERIC}, &err) ||
             nd_tensor_read(t[2], got, no * 4, &err);
        CHECK(rc == 0, "%s", err.msg);
        reference(op, size, a, b, want, mag);
        int64_t bad = 0;
        while (rc == 0 && bad < no &&
               fabs(got[bad] - want[bad]) <= 2 * ldexp(mag[bad], -24) + fabs(want[bad]) * FLT_EPSILON)
            ++bad;
        CHECK(rc != 0 || bad == no, "element %lld is %.9g, the exact sum %.9g (bound %.3g)", (long long)bad,
              rc ? 0.0 : (double)got[bad], rc ? 0.0 : want[bad], rc ? 0.0 : 2 * ldexp(mag[bad], -24));
    }
    for (int i = 0; i < 3; ++i)
        nd_tensor_free(t[i]);
    nd_device_close(dev);
    free(a), free(b), free(got), free(want), free(mag);
}

static void one_case(uint64_t *rng, char *desc)
{
    /* the ops in turn, from the case's seed (consecutive cases take the next op; a case rerun alone by its
       seed takes the same): 8 cases run every op, where a random pick missed one op in ten runs */
    const op_def *op = &ops[test_seed % (sizeof ops / sizeof *ops)];
    int64_t size[128];
    draw_sizes(rng, op, size);
    check_case(rng, desc, op, size);
}

/* A matmul or scores whose output is past the last-level cache, so that its kernel streams the output
 * (rows_streaming_output, the rule the kernels apply): the tiles then store it non-temporally where a row is
 * aligned for it, the rest through the caches. One step of k, at most 8 long, keeps the reference and a
 * sanitized kernel cheap (ASan: 1 to 2 s). Unless that threshold is past 64 MiB (a large machine's L3),
 * where the case says it is skipped. */
static void streamed_case(uint64_t *rng, char *desc)
{
    const op_def *op = &ops[test_seed % 2 ? 0 : 2]; /* matmul or scores */
    const int64_t llc = rows_llc_bytes();
    int64_t size[128] = {0};
    if (llc > (int64_t)64 << 20) {
        printf("test_contract: the streamed case skipped: outputs stream past %lld MiB here\n", (long long)(llc >> 20));
        return;
    }
    const int64_t n = past(rng, blocks.nc, 2 * CT_NR + 5), m = llc / 4 / n + rng_range(rng, 1, 2 * CT_MR + 3);
    if (op == &ops[0])
        size['i'] = m, size['j'] = n, size['k'] = rng_range(rng, 1, 8);
    else
        size['b'] = 1, size['h'] = 2, size['q'] = (m + 1) / 2, size['k'] = n, size['d'] = rng_range(rng, 1, 8);
    check_case(rng, desc, op, size);
}

int main(int argc, char **argv)
{
    nd_error err;
    if (argc < 2) {
        fprintf(stderr, "usage: test_contract LIBRARY [cases [seed]]\n");
        return 2;
    }
    if (nd_kernels_open(&lib, &err) || nd_kernels_load(lib, argv[1], &err)) {
        fprintf(stderr, "test_contract: %s\n", err.msg);
        return 1;
    }
    blocks = ct_blocks_here();
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)time(NULL);
    int cases = argc > 2 ? atoi(argv[2]) : 8;
    printf("test_contract: seed %llu, %d cases; blocks kc %lld, mc %lld, nc %lld, tile %dx%d\n",
           (unsigned long long)seed, cases, (long long)blocks.kc, (long long)blocks.mc, (long long)blocks.nc, CT_MR,
           CT_NR);
    char *args[] = {argv[0], argc > 2 ? argv[2] : "8", NULL};
    char seed_text[32];
    snprintf(seed_text, sizeof seed_text, "%llu", (unsigned long long)seed);
    args[2] = seed_text;
    test_run_cases(3, args, cases, seed, one_case);
    test_run_cases(1, args, 1, seed + (uint64_t)cases, streamed_case); /* rerun alone: cases 0, its seed */
    nd_kernels_close(lib);
    return test_finish(cases + 1);
}
