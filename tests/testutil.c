#include "testutil.h"

uint64_t test_seed;
const char *test_case;
int test_failures;

int test_finish(int64_t passed)
{
    printf("%" PRId64 " checks passed, %d failed\n", passed, test_failures);
    return test_failures ? 1 : 0;
}
