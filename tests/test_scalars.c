/*
 * test_scalars: launch scalar declarations (nd_scalars_parse) and the check of values against them,
 * on a table written out here: what each declaration means (its canonical text, which must parse back
 * to itself), what each malformed one is refused with, and which values each rule takes or refuses.
 */
#include <float.h>
#include <math.h>

#include "testutil.h"

static int64_t passed;

static void parses(const char *text, const char *canonical, const char *names, int list)
{
    nd_scalars s, again;
    nd_error err;
    char out[512], back[512], nm[256];
    int rc = nd_scalars_parse(text, &s, &err);
    CHECK(rc == 0, "'%s': %s", text, err.msg);
    if (rc)
        return;
    nd_scalars_text(&s, out, sizeof out);
    nd_scalars_names(&s, nm, sizeof nm);
    CHECK(strcmp(out, canonical) == 0, "'%s': canonical '%s', want '%s'", text, out, canonical);
    CHECK(strcmp(nm, names) == 0, "'%s': names '%s', want '%s'", text, nm, names);
    CHECK(nd_scalars_list(&s) == list, "'%s': list at %d, want %d", text, nd_scalars_list(&s), list);
    rc = nd_scalars_parse(out, &again, &err);
    nd_scalars_text(&again, back, sizeof back);
    CHECK(rc == 0 && strcmp(back, out) == 0, "'%s' does not read back: '%s'", out, rc ? err.msg : back);
    passed += 4;
}

static void refused(const char *text, const char *why)
{
    nd_scalars s;
    nd_error err;
    int rc = nd_scalars_parse(text, &s, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, why);
    ++passed;
}

/* values v against declaration decl: ok, or refused with a message containing why */
static void values(const char *decl, const double *v, int n, const char *why)
{
    nd_scalars s;
    nd_error err;
    CHECK(nd_scalars_parse(decl, &s, &err) == 0, "'%s': %s", decl, err.msg);
    int rc = nd_scalars_check(&s, "op", v, n, &err);
    if (!why)
        CHECK(rc == 0, "'%s': refused %g...: %s", decl, n ? v[0] : 0.0, err.msg);
    else
        CHECK_ERROR(rc, err, ND_EINVAL, why);
    ++passed;
}

#define V(...) (const double[]){__VA_ARGS__}, (int)(sizeof((const double[]){__VA_ARGS__}) / sizeof(double))

int main(void)
{
    parses("eps: f32", "eps: f32", "eps", -1);
    parses("  eps :f32 in ( 0 , 1 ] ", "eps: f32 in (0, 1]", "eps", -1);
    parses("eps: f32 > 0", "eps: f32 in (0, inf)", "eps", -1);
    parses("n: i32 >= 1, m: i64 <= 7", "n: i32 in [1, inf), m: i64 in (-inf, 7]", "n,m", -1);
    parses("p: f64 < 0.1", "p: f64 in (-inf, 0.1)", "p", -1);
    parses("flag: bool", "flag: bool", "flag", -1);
    parses("eps, alpha", "eps: f64, alpha: f64", "eps,alpha", -1);           /* names alone: f64 */
    parses("perm(x)", "perm: perm(x)", "perm", 0);                          /* the shorthands */
    parses("axes(a)", "axes: axes(a)", "axes", 0);
    parses("eps: f32 in [1e-12, 0.5], dims: axes(a)", "eps: f32 in [1e-12, 0.5], dims: axes(a)",
           "eps,dims", 1);
    parses("", "", "", -1);
    parses(NULL, "", "", -1);

    refused("eps: f16", "unknown type");
    refused("eps: f32 in [1, 0]", "the range of 'eps' holds no value");
    refused("eps: f32 in (1, 1]", "the range of 'eps' holds no value");
    refused("eps: f32 in [inf, inf]", "the range of 'eps' holds no value"); /* no finite value: its text */
    refused("eps: f64 in [-inf, -inf]", "the range of 'eps' holds no value"); /* without a range took all */
    refused("eps: f64 in [1e400, 1e500]", "the range of 'eps' holds no value");
    refused("eps: f32 in [0 1]", "expected , between the range's bounds");
    refused("eps: f32 in [0, nan]", "expected a number");
    refused("eps: f32 in 0, 1", "expected [ or ( after in");
    refused("eps: f32, eps: f64", "'eps' is declared twice");
    refused("a: axes(x), b: f32", "must be the last scalar");
    refused("a: axes(x), b: perm(x)", "must be the last scalar");
    refused("a: axes", "expected (INPUT) after axes or perm");
    refused("1a: f32", "expected a scalar's name");
    refused("eps: f32,", "expected a scalar after ,");
    refused("eps: f32 alpha: f32", "expected , between scalars");
    refused("a_name_that_is_thirty_two_chars_: f32", "expected a scalar's name");

    values("eps: f32 in (0, 1]", V(1.0), NULL);
    values("eps: f32 in (0, 1]", V(1e-30), NULL);
    values("eps: f32 in (0, 1]", V(0.0), "scalar 'eps' = 0 is outside (0, 1]");
    values("eps: f32 in (0, 1]", V(1.5), "is outside (0, 1]");
    values("eps: f32 in (0, 1]", V(1e-50), "underflows to 0");
    /* an f32 is checked as the kernel sees it, and a refusal says so when rounding moved it past a bound */
    values("eps: f32 in (0, 0.1]", V(0.1), "scalar 'eps' = 0.1 (0.10000000149011612 as an f32) is outside (0, 0.1]");
    values("eps: f32 < 0.1", V(0.0999999999), "= 0.0999999999 (0.10000000149011612 as an f32) is outside (-inf, 0.1)");
    values("eps: f32 in [1, 2]", V(0.99999999), NULL); /* 1 as an f32 */
    values("eps: f32", V(4e38), "is not a finite float (f32)");
    values("eps: f32", V(NAN), "is not a finite float");
    values("eps: f64", V(1e300), NULL);
    values("eps: f64", V(INFINITY), "is not a finite double");
    values("n: i32", V(-2147483648.0), NULL);
    values("n: i32", V(2147483648.0), "is not an integer of int32_t");
    values("n: i32", V(0.5), "is not an integer of int32_t");
    values("n: i64", V(9007199254740992.0), NULL);
    values("n: i64", V(1e17), "exact in a double");
    values("b: bool", V(1.0), NULL);
    values("b: bool", V(2.0), "is not 0 or 1");
    values("eps: f32, n: i32", V(1.0), "takes 2 scalar values (eps: f32, n: i32), but the launch gives 1");
    values("eps: f32, n: i32", V(1.0, 2.0, 3.0), "but the launch gives 3");
    values("", V(1.0), "op 'op' takes no scalars, but the launch gives 1");
    values("eps: f32, axes: axes(a)", V(1.0), "takes at least 2 scalar values");
    values("eps: f32, axes: axes(a)", V(1.0, 0.0, 2.0), NULL);
    values("perm(x)", V(1.0, 0.0), NULL);

    /* lists against their input and output: distinct axes, all of them for a permutation, and shapes */
    nd_scalars s;
    nd_error err;
    nd_dist_spec in, out;
    nd_dist_spec_init(&in);
    nd_dist_spec_init(&out);
    in.rank = 3;
    memcpy(in.shape, (int64_t[]){4, 5, 6}, 3 * sizeof(int64_t));
    out.rank = 2;
    memcpy(out.shape, (int64_t[]){4, 6}, 2 * sizeof(int64_t));
    CHECK(nd_scalars_parse("axes(a)", &s, &err) == 0, "%s", err.msg);
    int rc = nd_scalars_check_list(&s.d[0], "op", "out", &in, &out, (double[]){1}, 1, &err);
    CHECK(rc == 0, "reduce [4,5,6] over 1 to [4,6]: %s", err.msg);
    rc = nd_scalars_check_list(&s.d[0], "op", "out", &in, &out, (double[]){2}, 1, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "output 'out' has shape [4,6], but reducing 'a' by [2] gives [4,5]");
    rc = nd_scalars_check_list(&s.d[0], "op", "out", &in, &out, (double[]){1, 1}, 2, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "scalars [1,1] are not distinct axes of the 3 axes of 'a'");
    rc = nd_scalars_check_list(&s.d[0], "op", "out", &in, &out, (double[]){3}, 1, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "are not distinct axes");
    out.rank = 3;
    memcpy(out.shape, (int64_t[]){4, 1, 6}, 3 * sizeof(int64_t));
    rc = nd_scalars_check_list(&s.d[0], "op", "out", &in, &out, (double[]){1}, 1, &err);
    CHECK(rc == 0, "keepdims [4,1,6]: %s", err.msg);
    CHECK(nd_scalars_parse("perm(a)", &s, &err) == 0, "%s", err.msg);
    memcpy(out.shape, (int64_t[]){6, 4, 5}, 3 * sizeof(int64_t));
    rc = nd_scalars_check_list(&s.d[0], "op", "out", &in, &out, (double[]){2, 0, 1}, 3, &err);
    CHECK(rc == 0, "permute [4,5,6] by 2,0,1 to [6,4,5]: %s", err.msg);
    rc = nd_scalars_check_list(&s.d[0], "op", "out", &in, &out, (double[]){2, 0}, 2, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "scalars [2,0] are not a permutation of the 3 axes of 'a'");
    passed += 8;
    return test_finish(passed);
}
