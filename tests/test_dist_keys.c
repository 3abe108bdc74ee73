/*
 * test_dist_keys.c - typed distribution keys (nd_dist_key in nd_dist/model.h) against the text they
 * replace. On random pairs of distributions (a kernel's target and a launch, the launch often the
 * target with one field changed: shape, core list, orientation, strategy, dtype, memory), for every
 * free-field mask a partial set uses: the key match must agree with comparing the signatures with the
 * free fields starred (ndreg_split_signature, kept here as the independent reference), and "the free
 * fields agree" with comparing the starred-out text. Every key prints as the distribution's signature
 * byte for byte and parses back to itself; text ndgen would not write is refused.
 * Usage: test_dist_keys [cases [seed]].
 */
#include <string.h>

#include "nd_accessor.h"
#include "nd_dist.h"
#include "oracle.h"
#include "testutil.h"

static int64_t passed;
static int64_t matched[3]; /* per mask: pairs that matched, so the test sees both answers */

/* A launch near the target: its spec with one field changed, or a fresh random one. */
static void mutate(uint64_t *rng, const nd_dist_spec *target, int tgx, int tgy, nd_dist_spec *out, int *gx, int *gy,
                   char *desc)
{
    *out = *target;
    *gx = tgx;
    *gy = tgy;
    const int r = out->rank - 1;
    switch (rng_range(rng, 0, 7)) {
    case 0: out->shape[r] += out->page[r] * rng_range(rng, 1, 3); break; /* a new size of the pattern */
    case 1: /* another grid: the whole of a wider one */
        *gx = tgx + (int)rng_range(rng, 1, 2);
        out->cores.nranges = 1;
        out->cores.ranges[0] = (nd_core_range){{0, 0}, {*gx - 1, *gy - 1}};
        if (out->buffer == ND_DRAM)
            out->cores.ranges[0].hi.y = 0;
        break;
    case 2: out->cores.orientation = out->cores.orientation == ND_ROW_MAJOR ? ND_COL_MAJOR : ND_ROW_MAJOR; break;
    case 3: out->strategy = out->strategy == ND_ROUND_ROBIN ? ND_CONTIGUOUS : ND_ROUND_ROBIN; break;
    case 4: out->dtype = (nd_dtype)((out->dtype + 1) % ND_DTYPE_COUNT); break;
    case 5: /* new size and new grid at once */
        out->shape[0] += out->page[0];
        *gx = tgx + 1;
        out->cores.nranges = 1;
        out->cores.ranges[0] = (nd_core_range){{0, 0}, {*gx - 1, out->buffer == ND_DRAM ? 0 : *gy - 1}};
        break;
    case 6: oracle_random_spec(rng, 4, 4000, out, gx, gy, desc, 512); break;
    default: break; /* the target itself */
    }
}

static void check_key(const nd_dist *d, nd_dist_key *key)
{
    char sig[ND_SIGNATURE_LEN], printed[ND_SIGNATURE_LEN];
    nd_dist_signature(d, sig, sizeof sig);
    nd_dist_key_of(d, key);
    nd_dist_key_print(key, printed, sizeof printed);
    CHECK(strcmp(sig, printed) == 0, "the key prints '%s', the signature is '%s'", printed, sig);
    nd_dist_key back;
    nd_error err;
    int rc = nd_dist_key_parse(sig, &back, &err);
    CHECK(rc == 0 && nd_dist_key_match(&back, key, 0) && nd_dist_key_same_free(&back, key, 3),
          "'%s' does not parse back to its key: %s", sig, rc ? err.msg : "a field differs");
    ++passed;
}

static void one_case(uint64_t *rng, char *desc)
{
    nd_dist_spec ts, ls;
    nd_dist t, l;
    nd_error err;
    int tgx, tgy, lgx, lgy;
    char ldesc[512] = "";
    oracle_random_spec(rng, 4, 4000, &ts, &tgx, &tgy, desc, 512);
    mutate(rng, &ts, tgx, tgy, &ls, &lgx, &lgy, ldesc);
    if (nd_dist_make(&ts, tgx, tgy, &t, &err) || nd_dist_make(&ls, lgx, lgy, &l, &err))
        return; /* a mutation the model refuses (a shape past the memory): no pair */
    nd_dist_key tk, lk;
    check_key(&t, &tk);
    check_key(&l, &lk);
    char tsig[ND_SIGNATURE_LEN], lsig[ND_SIGNATURE_LEN];
    nd_dist_signature(&t, tsig, sizeof tsig);
    nd_dist_signature(&l, lsig, sizeof lsig);
    static const unsigned masks[] = {0, NDA_FREE_SHAPE, NDA_FREE_SHAPE | NDA_FREE_GRID};
    for (int m = 0; m < 3; ++m) {
        char tfix[ND_SIGNATURE_LEN], lfix[ND_SIGNATURE_LEN], tvar[ND_SIGNATURE_LEN], lvar[ND_SIGNATURE_LEN];
        ndreg_split_signature(tsig, masks[m], tfix, sizeof tfix, tvar, sizeof tvar);
        ndreg_split_signature(lsig, masks[m], lfix, sizeof lfix, lvar, sizeof lvar);
        const bool want = strcmp(tfix, lfix) == 0, got = nd_dist_key_match(&tk, &lk, masks[m]);
        CHECK(got == want, "mask %u: keys %s, text %s:\n  target %s\n  launch %s", masks[m], got ? "match" : "differ",
              want ? "matches" : "differs", tsig, lsig);
        const bool want_free = strcmp(tvar, lvar) == 0, got_free = nd_dist_key_same_free(&tk, &lk, masks[m]);
        CHECK(got_free == want_free, "mask %u: free fields %s by key, %s by text:\n  target %s\n  launch %s", masks[m],
              got_free ? "agree" : "differ", want_free ? "agree" : "differ", tsig, lsig);
        matched[m] += want;
        ++passed;
    }
}

int main(int argc, char **argv)
{
    test_run_cases(argc, argv, 3000, 0x6b657973, one_case);
    test_case = NULL;
    for (int m = 0; m < 3; ++m) /* the drawing must give the test both answers to check */
        CHECK(matched[m] > 50, "mask %d: only %lld matching pairs drawn", m, (long long)matched[m]);
    nd_dist_key k;
    nd_error err;
    static const char *const bad[] = {
        "f32 shape=4,4 page=1,4 shard=2,4 cores=(0,0)-(1,0) row_major round_robin l1 ", /* trailing blank */
        "f32 shape=04,4 page=1,4 shard=2,4 cores=(0,0)-(1,0) row_major round_robin l1",  /* a leading zero */
        "f32 shape=4,4 page=1,4 shard=2,4 cores=(0,0)-(1,0) row round_robin l1",         /* a short name */
        "f32 shape=4,4 page=1,4 shard=2 cores=(0,0)-(1,0) row_major round_robin l1",     /* ranks differ */
        "f64 shape=4,4 page=1,4 shard=2,4 cores=(0,0)-(1,0) row_major round_robin l1",   /* no such dtype */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i) {
        int rc = nd_dist_key_parse(bad[i], &k, &err);
        CHECK(rc == -1 && err.code == ND_EINVAL, "'%s' parses as a key", bad[i]);
        ++passed;
    }
    CHECK(nd_dist_key_parse("f32 shape=4,4 page=1,4 shard=2,4 cores=(0,0)-(1,0) row_major round_robin l1", &k, &err) == 0,
          "a signature ndgen writes is refused: %s", err.msg);
    ++passed;
    return test_finish(passed);
}
