/*
 * test_enums.c - the distribution's enumeration tables (ND_ORIENTATIONS, ND_STRATEGIES, ND_BUFFERS and
 * ND_REDUCE_OPS in nd_dist/model.h) against facts written out here independently: every row's names
 * print and parse back (case-insensitive, shorter names too), a bad name is refused with the accepted
 * ones listed, and a table with a row this test lacks fails the count. The reduce ops' columns are
 * checked by combining random parts with the ops as DTensor defines them (written out below), and
 * the JAX subset against JAX's UnreducedKind (sum, max, min).
 */
#include <math.h>
#include <string.h>

#include "nd_dist.h"
#include "testutil.h"

static int64_t passed;

typedef struct named {
    const char *name, *shorter;
} named;

static const named orientations[] = {{"row_major", "row"}, {"col_major", "col"}};
static const named strategies[] = {{"round_robin", ""}, {"contiguous", ""}};
static const named buffers[] = {{"l1", ""}, {"dram", ""}};

typedef int parse_fn(const char *what, const char *text, int *out, nd_error *err);

static int parse_orientation(const char *what, const char *text, int *out, nd_error *err)
{
    nd_orientation v;
    int rc = nd_parse_orientation(what, text, &v, err);
    *out = (int)v;
    return rc;
}

static int parse_strategy(const char *what, const char *text, int *out, nd_error *err)
{
    nd_strategy v;
    int rc = nd_parse_strategy(what, text, &v, err);
    *out = (int)v;
    return rc;
}

static int parse_buffer(const char *what, const char *text, int *out, nd_error *err)
{
    nd_buffer v;
    int rc = nd_parse_buffer(what, text, &v, err);
    *out = (int)v;
    return rc;
}

static const char *orientation_name(int v) { return nd_orientation_name((nd_orientation)v); }
static const char *strategy_name(int v) { return nd_strategy_name((nd_strategy)v); }
static const char *buffer_name(int v) { return nd_buffer_name((nd_buffer)v); }

/* One table: count, names printed, every spelling parsed back, a bad one refused listing them all. */
static void check_table(const char *what, int count, const named *facts, int nfacts, parse_fn *parse,
                        const char *(*name)(int))
{
    CHECK(count == nfacts, "%s: the table has %d rows, this test %d: add a line", what, count, nfacts);
    for (int i = 0; i < count && i < nfacts; ++i) {
        const named *f = &facts[i];
        CHECK(strcmp(name(i), f->name) == 0, "%s %d prints as %s, want %s", what, i, name(i), f->name);
        char upper[32];
        size_t k = 0;
        for (; f->name[k] && k + 1 < sizeof upper; ++k)
            upper[k] = (char)(f->name[k] >= 'a' && f->name[k] <= 'z' ? f->name[k] - 32 : f->name[k]);
        upper[k] = '\0';
        const char *spellings[] = {f->name, upper, f->shorter};
        for (int s = 0; s < 3; ++s) {
            if (!spellings[s][0])
                continue;
            int v = -1;
            nd_error err;
            CHECK(parse(what, spellings[s], &v, &err) == 0 && v == i, "%s '%s' parses to %d, want %d", what,
                  spellings[s], v, i);
        }
        passed++;
    }
    int v;
    nd_error err;
    int rc = parse(what, "diagonal", &v, &err);
    CHECK(rc == -1 && err.code == ND_EINVAL, "%s 'diagonal' is accepted", what);
    for (int i = 0; i < nfacts && rc; ++i)
        CHECK(strstr(err.msg, facts[i].shorter[0] ? facts[i].shorter : facts[i].name) != NULL,
              "%s: the refusal '%s' does not list %s", what, err.msg, facts[i].name);
    passed++;
}

/* ---------------------------------------------------------------- reduce ops */

/* DTensor's Partial(reduce_op) combinations, written out: avg is the sum over the number of parts. */
static double combine(const char *op, const double *v, int n)
{
    double r = v[0];
    for (int i = 1; i < n; ++i)
        r = !strcmp(op, "max") ? fmax(r, v[i]) : !strcmp(op, "min") ? fmin(r, v[i])
          : !strcmp(op, "product") ? r * v[i] : r + v[i];
    return !strcmp(op, "avg") ? r / n : r;
}

static const char *const reduce_ops[] = {"sum", "avg", "max", "min", "product"};
static const char *const jax_kinds[] = {"sum", "max", "min"}; /* jax.sharding UnreducedKind */

/* Whether a column's claim holds of the op on random small integers (exact in double). */
static void check_reduce(nd_reduce r, uint64_t *rng)
{
    const char *op = nd_reduce_name(r);
    bool identity_ok = true, idempotent = true, selects = true, linear = true;
    for (int t = 0; t < 200; ++t) {
        double v[3], c = (double)rng_range(rng, -4, 4);
        for (int i = 0; i < 3; ++i)
            v[i] = (double)rng_range(rng, -9, 9);
        const double same[3] = {v[0], v[0], v[0]}, with_id[2] = {v[0], nd_reduce_identity(r)},
                     scaled[3] = {c * v[0], c * v[1], c * v[2]};
        const double whole = combine(op, v, 3);
        identity_ok = identity_ok && combine(op, with_id, 2) == v[0];
        idempotent = idempotent && combine(op, same, 3) == v[0];
        selects = selects && (whole == v[0] || whole == v[1] || whole == v[2]);
        linear = linear && combine(op, scaled, 3) == c * whole;
    }
    bool jax = false;
    for (size_t i = 0; i < sizeof jax_kinds / sizeof *jax_kinds; ++i)
        jax = jax || !strcmp(op, jax_kinds[i]);
    CHECK(nd_reduce_idempotent(r) || identity_ok, "%s: identity %g does not leave a part as it is", op,
          nd_reduce_identity(r));
    CHECK(nd_reduce_idempotent(r) == idempotent, "%s: idempotent %d, the op says %d", op, nd_reduce_idempotent(r),
          idempotent);
    CHECK(nd_reduce_selects(r) == selects, "%s: selects %d, the op says %d", op, nd_reduce_selects(r), selects);
    CHECK(nd_reduce_linear(r) == linear, "%s: linear %d, the op says %d", op, nd_reduce_linear(r), linear);
    CHECK(nd_reduce_jax(r) == jax, "%s: jax %d, JAX's UnreducedKind says %d", op, nd_reduce_jax(r), jax);
    passed++;
}

int main(void)
{
    check_table("orientation", ND_ORIENTATION_COUNT, orientations, 2, parse_orientation, orientation_name);
    check_table("strategy", ND_STRATEGY_COUNT, strategies, 2, parse_strategy, strategy_name);
    check_table("buffer", ND_BUFFER_COUNT, buffers, 2, parse_buffer, buffer_name);
    const int nops = (int)(sizeof reduce_ops / sizeof *reduce_ops);
    CHECK(ND_REDUCES == nops, "ND_REDUCE_OPS has %d rows, this test %d: add a line", ND_REDUCES, nops);
    test_seed = 20261127;
    uint64_t rng = test_seed;
    for (int i = 0; i < ND_REDUCES && i < nops; ++i) {
        CHECK(strcmp(nd_reduce_name((nd_reduce)i), reduce_ops[i]) == 0 && nd_reduce_parse(reduce_ops[i]) == i,
              "reduce op %d: %s, want %s", i, nd_reduce_name((nd_reduce)i), reduce_ops[i]);
        check_reduce((nd_reduce)i, &rng);
    }
    CHECK(nd_reduce_parse("mean") == -1, "'mean' parses as a reduce op");
    char list[64];
    CHECK(strcmp(nd_reduce_list(list, sizeof list, true), "sum, max or min") == 0, "JAX's list: %s", list);
    CHECK(strcmp(nd_reduce_list(list, sizeof list, false), "sum, avg, max, min or product") == 0, "the list: %s", list);
    passed++;
    return test_finish(passed);
}
