/*
 * differential.c - the random differential driver of test_kernels (--random SECONDS): draws ops of a
 * kernel library at random, each operand with its own random distribution (shape, page kind, shard,
 * grid or DRAM banks, strategy, orientation), dtype and launch scalars, has the JIT specialize a
 * kernel for exactly those distributions, and checks it against the generic kernel and the plain
 * reference as every prebuilt target is checked (check_case). It runs until the time is spent, so
 * CTest runs it briefly and a person for hours; it prints its seed, and a failure names the case.
 *
 * Not drawn: the collectives (all_reduce, reduce_scatter, all_gather), whose operands are Partial or
 * replicated; their own targets cover them.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kernels_check.h"
#include "testutil.h"

static uint64_t rng;

static int64_t R(int64_t lo, int64_t hi) { return rng_range(&rng, lo, hi); }

/* Appends "a,b,c" of n dims to buf. */
static void dims_text(char *buf, size_t len, const int64_t *d, int n)
{
    buf[0] = '\0';
    for (int i = 0; i < n; ++i)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%lld", i ? "," : "", (long long)d[i]);
}

typedef struct operand_text {
    char shape[96], shard[96], page[96], grid[16], cores[48], banks[8], tile[8];
} operand_text;

/* A random distribution of shape (rank r) in f; page_box, when given, is forced as the page. */
static void random_flags(const int64_t *shape, int r, const char *dtype, const int64_t *page_box,
                         nd_dist_flags *f, operand_text *t)
{
    memset(f, 0, sizeof *f);
    int64_t page[ND_MAX_RANK], shard[ND_MAX_RANK];
    dims_text(t->shape, sizeof t->shape, shape, r);
    f->shape = t->shape;
    f->dtype = dtype;
    f->l1_size = f->dram_bank_size = "1G";
    int kind = page_box ? 1 : (int)R(0, r >= 2 ? 3 : 2); /* 0 rows, 1 box, 2 interleaved rows, 3 tiles */
    for (int i = 0; i < r; ++i)
        page[i] = page_box ? page_box[i] : 1;
    if (kind == 1 && !page_box) {
        for (int i = 0; i < r; ++i)
            page[i] = R(1, 3);
        if (R(0, 1)) /* a wide page: past the templates' 256-element chunks where the shape allows */
            page[r - 1] = shape[r - 1] > 256 ? R(257, shape[r - 1]) : shape[r - 1];
    }
    if (kind == 3) {
        static const char *const tiles[] = {"32x32", "16x16", "16x32", "32x16"};
        int which = (int)R(0, 3);
        snprintf(t->tile, sizeof t->tile, "%s", tiles[which]);
        f->tile = t->tile;
        page[r - 2] = which == 0 || which == 3 ? 32 : 16;
        page[r - 1] = which == 0 || which == 2 ? 32 : 16;
    } else if (kind == 1) {
        dims_text(t->page, sizeof t->page, page, r);
        f->page = t->page;
    }
    if (kind == 2) {
        f->interleaved = "1";
    } else {
        for (int i = 0; i < r; ++i)
            shard[i] = page[i] * R(1, 3);
        if (kind == 0) /* rows: the shard's width is the page's */
            shard[r - 1] = R(0, 1) ? R(1, 8) : shape[r - 1] > 256 ? R(257, shape[r - 1]) : shape[r - 1];
        dims_text(t->shard, sizeof t->shard, shard, r);
        f->shard = t->shard;
    }
    if (R(1, 5) == 1) {
        f->buffer = "dram";
        snprintf(t->banks, sizeof t->banks, "%d", (int)R(1, 6));
        f->banks = t->banks;
    } else {
        int gx = (int)R(1, 6), gy = (int)R(1, 6);
        snprintf(t->grid, sizeof t->grid, "%dx%d", gx, gy);
        f->grid = t->grid;
        if (R(0, 1)) {
            int x0 = (int)R(0, gx - 1), y0 = (int)R(0, gy - 1);
            snprintf(t->cores, sizeof t->cores, "(%d,%d)-(%d,%d)", x0, y0, (int)R(x0, gx - 1), (int)R(y0, gy - 1));
            f->cores = t->cores;
        }
    }
    f->strategy = R(0, 1) ? "round_robin" : "contiguous";
    f->orientation = R(0, 1) ? "row" : "col";
}

/* A random shape: rank lo..hi, the last dim sometimes past 256, at most max elements. */
static int random_shape(int64_t *s, int lo, int hi, int64_t max)
{
    int r = (int)R(lo, hi);
    int64_t n = 1;
    for (int i = 0; i < r; ++i)
        s[i] = R(1, 24);
    if (R(0, 2) == 0)
        s[r - 1] = R(257, 700);
    for (int i = 0; i < r; ++i)
        n *= s[i];
    for (int i = 0; n > max; i = (i + 1) % r) {
        n /= s[i];
        s[i] = (s[i] + 1) / 2;
        n *= s[i];
    }
    return r;
}

static bool skipped(const char *op)
{
    return !strcmp(op, "all_reduce") || !strcmp(op, "reduce_scatter") || !strcmp(op, "all_gather");
}

/* The operands' shapes for entry e, drawn at random; false when the op is not drawn. */
static bool random_shapes(const nda_kernel_entry *e, int64_t shape[][ND_MAX_RANK], int *rank)
{
    int n = e->noperands, o = n - 1;
    if (n == 3 && !strstr(e->indices[0], "...")) { /* a contraction: one size per letter */
        int64_t size[128] = {0}, work = 1;
        for (int k = 0; k < n; ++k)
            for (const char *p = e->indices[k]; *p; ++p)
                if (!size[(unsigned char)*p]) {
                    size[(unsigned char)*p] = R(0, 3) == 0 ? R(200, 400) : R(1, 40);
                    work *= size[(unsigned char)*p];
                }
        if (work > 4000000)
            return false;
        for (int k = 0; k < n; ++k) {
            rank[k] = (int)strlen(e->indices[k]);
            for (int i = 0; i < rank[k]; ++i)
                shape[k][i] = size[(unsigned char)e->indices[k][i]];
        }
        return true;
    }
    rank[o] = random_shape(shape[o], 1, 4, 20000);
    for (int k = 0; k < o; ++k) { /* inputs: the output's shape, or a suffix with broadcast dims */
        int from = k == 0 || !strcmp(e->op, "page_copy") ? 0 : (int)R(0, rank[o] - 1);
        rank[k] = rank[o] - from;
        for (int i = 0; i < rank[k]; ++i)
            shape[k][i] = k > 0 && R(0, 3) == 0 ? 1 : shape[o][from + i];
    }
    return true;
}

int differential_main(nd_kernels *k, double seconds, uint64_t seed)
{
    rng = seed;
    printf("differential: seed %llu, %.0f s (rerun one with --seed %llu)\n", (unsigned long long)seed, seconds,
           (unsigned long long)seed);
    fflush(stdout);
    int entries = 0, drawn = 0;
    const nda_kernel_entry *generic[512];
    for (int i = 0; i < nd_kernels_count(k) && entries < 512; ++i) {
        const nda_kernel_entry *e = nd_kernels_entry(k, i);
        if (!e->signatures && !skipped(e->op))
            generic[entries++] = e;
    }
    CHECK(entries > 0, "the library has no generic kernels to draw from");
    struct timespec t0, t;
    timespec_get(&t0, TIME_UTC);
    for (;;) {
        timespec_get(&t, TIME_UTC);
        if (entries == 0 || (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) >= seconds)
            break;
        uint64_t case_seed = rng;
        const nda_kernel_entry *e = generic[R(0, entries - 1)];
        int64_t shape[NR_OPERANDS][ND_MAX_RANK];
        int rank[NR_OPERANDS], n = e->noperands;
        if (n > NR_OPERANDS || !random_shapes(e, shape, rank))
            continue;
        if (e->scalars && !strncmp(e->scalars, "perm", 4)) { /* a random permutation, out = its shape */
            int p[ND_MAX_RANK];
            for (int i = 0; i < rank[0]; ++i)
                p[i] = i;
            for (int i = rank[0] - 1; i > 0; --i) {
                int j = (int)R(0, i), x = p[i];
                p[i] = p[j];
                p[j] = x;
            }
            for (int i = 0; i < rank[0]; ++i)
                shape[1][i] = shape[0][p[i]];
        } else if (e->scalars) { /* random axes, every axis sometimes; keepdims or not (check_case finds
                                    the axes again from the shapes) */
            bool all = R(0, 4) == 0, keep = R(0, 1), any = false, red[ND_MAX_RANK];
            for (int i = 0; i < rank[0]; ++i)
                any |= (red[i] = all || R(0, 1) || (i == rank[0] - 1 && !any));
            int ro = 0;
            for (int i = 0; i < rank[0]; ++i)
                if (!red[i] || keep)
                    shape[1][ro++] = red[i] ? 1 : shape[0][i];
            if (ro == 0) /* everything reduced: keepdims, as rank 0 does not exist */
                for (; ro < rank[0]; ++ro)
                    shape[1][ro] = 1;
            rank[1] = ro;
        }
        nd_dist_flags f[NR_OPERANDS];
        operand_text txt[NR_OPERANDS];
        char sigs[NR_OPERANDS][1024], desc[NR_OPERANDS * 1024 + 64];
        const char *sig[NR_OPERANDS];
        int64_t box[ND_MAX_RANK];
        bool ok = true;
        for (int i = 0; i < rank[0]; ++i)
            box[i] = i == rank[0] - 1 ? R(1, shape[0][i]) : R(1, 2);
        snprintf(desc, sizeof desc, "differential case seed %llu: %s", (unsigned long long)case_seed, e->symbol);
        for (int q = 0; q < n && ok; ++q) {
            nd_dist d;
            nd_error err;
            random_flags(shape[q], rank[q], e->dtypes[q], !strcmp(e->op, "page_copy") ? box : NULL, &f[q], &txt[q]);
            ok = nd_dist_from_flags(&f[q], &d, &err) == 0 &&
                 nd_dist_signature(&d, sigs[q], sizeof sigs[q]) < (int)sizeof sigs[q];
            sig[q] = sigs[q];
            snprintf(desc + strlen(desc), sizeof desc - strlen(desc), " %s=%s", e->operands[q], sigs[q]);
        }
        if (!ok) /* a draw the model refuses (a tile wider than the shard allows, ...): draw again */
            continue;
        test_case = desc;
        check_case(k, e, sig);
        ++drawn;
    }
    test_case = NULL;
    printf("differential: %d random cases over %d generic kernels, seed %llu\n", drawn, entries,
           (unsigned long long)seed);
    return drawn;
}
