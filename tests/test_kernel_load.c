/* test_kernel_load WRONG_ABI NO_REGISTRY - libraries the runtime must refuse, each with a clear message. */
#include <string.h>

#include "nd_runtime.h"
#include "testutil.h"

static int64_t passed;

static void expect(nd_kernels *k, const char *path, const char *want)
{
    nd_error err;
    int before = nd_kernels_count(k);
    int rc = nd_kernels_load(k, path, &err);
    CHECK(rc == -1 && strstr(err.msg, want), "loading %s: want '%s', got rc %d '%s'", path, want, rc, rc ? err.msg : "");
    CHECK(nd_kernels_count(k) == before, "a refused library registered kernels");
    ++passed;
}

int main(int argc, char **argv)
{
    nd_kernels *k;
    nd_error err;
    if (argc < 3 || nd_kernels_open(&k, &err))
        return 1;
    char want[128];
    snprintf(want, sizeof want, "kernel ABI version %u, but this runtime reads version %u", NDA_ABI_VERSION + 1,
             NDA_ABI_VERSION);
    expect(k, argv[1], want);
    expect(k, argv[2], "not a kernel library: it has no nda_kernel_registry symbol");
    expect(k, "/nonexistent/libnope.so", "cannot load the kernel library");
    nd_kernels_close(k);
    return test_finish(passed);
}
