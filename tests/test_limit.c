/*
 * test_limit.c - ndrun's limit logic (bench/limit.c) on synthetic timings, against rules written out
 * here: the limit is the largest positive finite rate of its candidates (probes, plain loop, peers),
 * so never below any of them; nothing measured is "not measured", not 0 shown as a rate; a rate above
 * the limit is refused with a message naming both; a median is believed only when its order-statistic
 * 95% interval is within 5%; and the verdict follows. Random sets of candidates, seed printed. Also
 * ndrun tune's pick of the fastest candidate within noise (nr_pick_fastest), case by case.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ndrun.h"

static int failures;
#define CHECK(cond, ...)                                                                                \
    do {                                                                                                \
        if (!(cond)) {                                                                                  \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                        \
            fprintf(stderr, __VA_ARGS__);                                                               \
            fputc('\n', stderr);                                                                        \
            ++failures;                                                                                 \
        }                                                                                               \
    } while (0)

static uint64_t rng_state;
static double uniform(void) /* xorshift64*, in [0, 1) */
{
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static void fixed_cases(void)
{
    nr_ceiling c = {0};
    nd_error err;
    CHECK(nr_ceiling_rate(&c) == 0 && strcmp(nr_ceiling_name(&c), "not measured") == 0, "empty ceiling");
    nr_ceiling_add(&c, "STREAM copy", 20.0);
    nr_ceiling_add(&c, "memcpy", 24.0);
    nr_ceiling_add(&c, "plain loop", 26.5); /* the plain loop beat both probes: it is the limit */
    nr_ceiling_add(&c, "oneDNN reorder", 25.0);
    nr_ceiling_add(&c, "broken probe", NAN);
    nr_ceiling_add(&c, "probes off", 0.0);
    nr_ceiling_add(&c, "overflow", INFINITY);
    CHECK(c.n == 4, "non-finite and zero rates are left out: %d kept", c.n);
    CHECK(nr_ceiling_rate(&c) == 26.5 && strcmp(nr_ceiling_name(&c), "plain loop") == 0, "limit %s %g",
          nr_ceiling_name(&c), nr_ceiling_rate(&c));
    CHECK(nr_ceiling_check(&c, "oneDNN reorder", 25.0, &err) == 0, "a peer below the limit");
    CHECK(nr_ceiling_check(&c, "the plain loop", 26.5, &err) == 0, "the plain loop at the limit");
    CHECK(nr_ceiling_check(&c, "a peer", 30.0, &err) != 0 && strstr(err.msg, "a peer") && strstr(err.msg, "plain loop"),
          "a peer above the limit is an error naming both: %s", err.msg);
    /* verdicts */
    CHECK(nr_judge(10, 0, true) == NR_NOT_MEASURED, "no limit: not measured");
    CHECK(nr_could_be_limit(9.0, 10) && nr_could_be_limit(10, 10) && !nr_could_be_limit(8.99, 10),
          "within 10%% of the best a candidate could be the limit, past it not");
    CHECK(nr_judge(10, 20, false) == NR_NOISY, "loose medians: noisy");
    CHECK(nr_judge(21.1, 20, true) == NR_FAULT, "past 105%%: fault");
    CHECK(nr_judge(21.0, 20, true) == NR_BELIEVED, "at 105%%: believed");
    CHECK(nr_judge(19, 20, true) == NR_BELIEVED, "below: believed");
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The order-statistic interval written out: ranks floor(n/2 - 0.98 sqrt n) and ceil(n/2 + 0.98 sqrt n). */
static double half_width(const double *t, int n)
{
    int lo = (int)floor(n / 2.0 - 0.98 * sqrt(n)), hi = (int)ceil(n / 2.0 + 0.98 * sqrt(n));
    lo = lo < 0 ? 0 : lo, hi = hi >= n ? n - 1 : hi;
    double m = t[n / 2];
    return fmax(m - t[lo], t[hi] - m) / m;
}

static void random_cases(int rounds)
{
    double t[400], h;
    for (int r = 0; r < rounds; ++r) {
        /* ceilings: the largest valid candidate, whatever the order and the invalid ones */
        nr_ceiling c = {0};
        int n = 1 + (int)(uniform() * NR_MAX_CANDIDATES);
        double best = 0, rates[NR_MAX_CANDIDATES];
        for (int i = 0; i < n; ++i) {
            double u = uniform();
            rates[i] = u < 0.1 ? NAN : u < 0.2 ? 0 : u < 0.25 ? -1 : 1 + 100 * uniform();
            char name[16];
            snprintf(name, sizeof name, "c%d", i);
            nr_ceiling_add(&c, name, rates[i]);
            best = rates[i] > best ? rates[i] : best;
        }
        CHECK(nr_ceiling_rate(&c) == best, "round %d: limit %g, largest candidate %g", r, nr_ceiling_rate(&c), best);
        for (int i = 0; i < n; ++i) {
            nd_error err;
            CHECK(!(rates[i] > 0) || nr_ceiling_check(&c, "x", rates[i], &err) == 0, "round %d: candidate %g refused", r,
                  rates[i]);
        }
        /* medians: timings around 1 with a random spread, sometimes a few outliers */
        int m = 2 + (int)(uniform() * 300);
        double spread = uniform() < 0.5 ? 0.02 * uniform() : 0.5 * uniform();
        for (int i = 0; i < m; ++i)
            t[i] = 1 + spread * (uniform() - 0.5) * 2 + (uniform() < 0.05 ? 3 * uniform() : 0);
        qsort(t, (size_t)m, sizeof *t, cmp);
        bool tight = nr_median_tight(t, m, &h);
        bool want = m >= 8 && half_width(t, m) <= 0.05;
        CHECK(tight == want, "round %d: %d timings, spread %.3f: tight %d, expected %d (half width %g)", r, m, spread,
              tight, want, m >= 8 ? half_width(t, m) : INFINITY);
    }
}

/* Picking the fastest of timed candidates (ndrun tune): rules written out case by case. */
static void pick_cases(void)
{
    bool tie;
    /* the scores search: the model's first candidate at 15.2 ms +-114% (its lower bound below zero), the
       fastest at 4.3 +-9%; neither tight. The loose one's median is far past the fastest's interval */
    CHECK(nr_pick_fastest((double[]){15.2, 4.3}, (double[]){1.14, 0.09}, (bool[]){false, false}, 2, &tie) == 1 && !tie,
          "a loose candidate 3.5 times slower must not tie with the fastest");
    /* the fastest's interval loose, nothing within it: no tie (ndrun tune 4096^2 reduce_sum over every
     * axis, pending at 2.48 ms +-6% against 3.94 +-5%, had called this a tie) */
    CHECK(nr_pick_fastest((double[]){2.48, 4.15, 3.94}, (double[]){0.06, 0.04, 0.05}, (bool[]){false, true, true}, 3,
                          &tie) == 0 && !tie,
          "a loose fastest that nothing reaches is not a tie");
    /* the fastest with no interval at all (infinite): everything ties with it, the model's first wins */
    CHECK(nr_pick_fastest((double[]){5.0, 4.0}, (double[]){0.03, INFINITY}, (bool[]){true, false}, 2, &tie) == 0 && tie,
          "a fastest with no interval ties with every candidate");
    /* tight intervals that touch: a tie, the model's first */
    CHECK(nr_pick_fastest((double[]){5.0, 4.9}, (double[]){0.03, 0.03}, (bool[]){true, true}, 2, &tie) == 0 && tie,
          "touching tight intervals tie, and the earlier wins");
    /* tight intervals apart: the fastest, no tie */
    CHECK(nr_pick_fastest((double[]){6.0, 4.9}, (double[]){0.03, 0.03}, (bool[]){true, true}, 2, &tie) == 1 && !tie,
          "tight intervals apart: the fastest, not a tie");
    /* a loose candidate whose median lies within the fastest's interval ties */
    CHECK(nr_pick_fastest((double[]){5.0, 4.9}, (double[]){0.5, 0.03}, (bool[]){false, true}, 2, &tie) == 0 && tie,
          "a loose candidate with its median inside the fastest's interval ties");
    /* three: the fastest last, the second ties with it, the first does not: the second */
    CHECK(nr_pick_fastest((double[]){9.0, 5.0, 4.9}, (double[]){0.02, 0.03, 0.03}, (bool[]){true, true, true}, 3,
                          &tie) == 1 && tie,
          "the first candidate that ties, not the first candidate");
}

/* A candidate of two parts timed apart (ndrun tune): the sum of medians, half widths added as times. */
static void sum_cases(void)
{
    double m, h;
    /* a pending sum of 2.90 ms +-3% and its reduce_scatter of 0.01 ms +-60% (one element): tight as a whole,
       2.91 +-(0.087 + 0.006) ms = +-3.2% */
    bool tight = nr_sum_intervals((double[]){2.90, 0.01}, (double[]){0.03, 0.60}, 2, &m, &h);
    CHECK(tight && fabs(m - 2.91) < 1e-12 && fabs(h - 0.093 / 2.91) < 1e-12,
          "a wide part of microseconds: tight %d, %g +-%g", tight, m, h);
    /* two parts of equal time, one at +-9%: +-(4.5% + 1.5%) = 6%, not tight */
    tight = nr_sum_intervals((double[]){1.0, 1.0}, (double[]){0.09, 0.03}, 2, &m, &h);
    CHECK(!tight && fabs(h - 0.06) < 1e-12, "equal parts, one loose: tight %d, +-%g", tight, h);
    /* a part with too few rounds for an interval (infinite): the candidate has none */
    tight = nr_sum_intervals((double[]){1.0, 0.001}, (double[]){0.01, INFINITY}, 2, &m, &h);
    CHECK(!tight && isinf(h), "a part without an interval: tight %d, +-%g", tight, h);
    /* the same with that part's median 0 (a launch below the clock's resolution): still none, not NaN */
    tight = nr_sum_intervals((double[]){1.0, 0.0}, (double[]){0.01, INFINITY}, 2, &m, &h);
    CHECK(!tight && isinf(h), "a part of 0 s without an interval: tight %d, +-%g", tight, h);
    /* one part: exactly its own */
    tight = nr_sum_intervals((double[]){4.2}, (double[]){0.05}, 1, &m, &h);
    CHECK(tight && m == 4.2 && fabs(h - 0.05) < 1e-15, "one part: tight %d, %g +-%g", tight, m, h);
}

int main(int argc, char **argv)
{
    rng_state = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x9e3779b97f4a7c15ull ^ (uint64_t)time(NULL);
    if (!rng_state)
        rng_state = 1;
    printf("test_limit: seed %llu (rerun with: test_limit %llu)\n", (unsigned long long)rng_state,
           (unsigned long long)rng_state);
    fixed_cases();
    pick_cases();
    sum_cases();
    random_cases(2000);
    printf("test_limit: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
