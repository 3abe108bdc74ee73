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
