#include <math.h>

#include "testutil.h"

uint64_t test_seed;
const char *test_case;
int test_failures;

int test_finish(int64_t passed)
{
    printf("%" PRId64 " checks passed, %d failed\n", passed, test_failures);
    return test_failures ? 1 : 0;
}

void test_run_cases(int argc, char **argv, int cases, uint64_t seed, void (*one_case)(uint64_t *rng, char *desc))
{
    static char desc[1024];
    cases = argc > 1 ? atoi(argv[1]) : cases;
    seed = argc > 2 ? strtoull(argv[2], NULL, 0) : seed;
    test_case = desc;
    for (int k = 0; k < cases; ++k) {
        uint64_t rng = test_seed = seed + (uint64_t)k;
        desc[0] = '\0';
        one_case(&rng, desc);
    }
}

/* Finite bits h below 0x7c00 as a number: (1024 + m) 2^(e - 25) for e > 0, m 2^-24 for e = 0. At
 * 0x7c00 this gives 65536, the step after the largest finite value, which the bisection needs. */
static double f16_finite(uint16_t h)
{
    const int e = h >> 10 & 0x1f, m = h & 0x3ff;
    return e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
}

double test_f16_value(uint16_t h)
{
    const double sign = h & 0x8000 ? -1 : 1;
    if ((h & 0x7c00) == 0x7c00)
        return h & 0x3ff ? NAN : sign * INFINITY;
    return sign * f16_finite(h & 0x7fff);
}

uint16_t test_f16_nearest(double v)
{
    const uint16_t sign = signbit(v) ? 0x8000 : 0;
    const double a = fabs(v);
    if (isnan(v))
        return (uint16_t)(sign | 0x7e00);
    if (a >= 65520)
        return (uint16_t)(sign | 0x7c00);
    unsigned lo = 0, hi = 0x7bff; /* the largest finite bits whose value is at most a */
    while (lo < hi) {
        const unsigned mid = (lo + hi + 1) / 2;
        if (f16_finite((uint16_t)mid) <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    const double below = a - f16_finite((uint16_t)lo), above = f16_finite((uint16_t)(lo + 1)) - a;
    const unsigned h = below < above || (below == above && lo % 2 == 0) ? lo : lo + 1;
    return (uint16_t)(sign | h);
}
