/* test_kernel_load WRONG_ABI NO_REGISTRY - libraries the runtime must refuse, each with a clear message. */
#include <string.h>

#include "nd_runtime.h"
#include "testutil.h"

static int64_t passed;

static void expect(nd_kernels *k, const char *path, nd_errcode code, const char *want)
{
    nd_error err;
    int before = nd_kernels_count(k);
    int rc = nd_kernels_load(k, path, &err);
    test_case = path;
    CHECK_ERROR(rc, err, code, want);
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
    expect(k, argv[1], ND_ESTALE, want);
    expect(k, argv[2], ND_EINVAL, "not a kernel library: it has no nda_kernel_registry symbol");
    expect(k, "/nonexistent/libnope.so", ND_ENOENT, "cannot load the kernel library");
    expect(k, "/dev/null", ND_ESYS, "cannot load the kernel library"); /* there, but not a shared object */
    nd_kernels_close(k);
    return test_finish(passed);
}
