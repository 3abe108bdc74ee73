/* test_kernel_load WRONG_ABI NO_REGISTRY BAD_SCALARS OPS LIE1..LIE11 - libraries the runtime must refuse,
 * each with a clear message: at load, or (BAD_SCALARS, whose op's axis list names no operand) at every
 * launch. LIE1..LIE11 (fake_registry.c) lie in their registries, one way each; LIE7 defines the op 'add'
 * of the bundled library OPS in a spec of its own, refused once OPS is loaded, and kept out or put in
 * place of OPS's when the caller says which wins (nd_kernels_load_with). */
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

/* A launch of BAD_SCALARS's op with an axis list: refused, not a read of an operand that is not there. */
static void expect_launch_refused(nd_kernels *k, const char *path)
{
    nd_error err;
    nd_device_config cfg;
    nd_device *dev = NULL;
    nd_tensor *t[2] = {NULL, NULL};
    nd_dist d;
    test_case = path;
    nd_device_config_init(&cfg);
    int rc = nd_kernels_load(k, path, &err) || nd_device_open(&cfg, &dev, &err) ||
             nd_dist_from_flags(&(nd_dist_flags){.shape = "4,8", .shard = "4,8", .grid = "1x1"}, &d, &err) ||
             nd_tensor_alloc(dev, &d, &t[0], &err) || nd_tensor_alloc(dev, &d, &t[1], &err);
    CHECK(rc == 0, "setting up: %s", err.msg);
    if (rc == 0) {
        rc = nd_run(&(nd_launch_desc){.device = dev, .kernels = k, .op = "fake_list", .tensors = t, .ntensors = 2,
                                      .scalars = (const double[]){0}, .nscalars = 1},
                    &err);
        CHECK_ERROR(rc, err, ND_EINVAL, "the scalar list 'axes' is of 'y', which is not one of the op's operands");
    }
    for (int i = 0; i < 2; ++i)
        if (t[i])
            nd_tensor_free(t[i]);
    if (dev)
        nd_device_close(dev);
    ++passed;
}

/* Entries of op 'add' registered, and how many of them are the fake library's (symbol fake_lie_generic). */
static int count_add(const nd_kernels *k, int *fake)
{
    int n = 0;
    *fake = 0;
    for (int i = 0; i < nd_kernels_count(k); ++i) {
        const nda_kernel_entry *e = nd_kernels_entry(k, i);
        if (strcmp(e->op, "add") == 0) {
            ++n;
            *fake += strcmp(e->symbol, "fake_lie_generic") == 0;
        }
    }
    return n;
}

/* The caller says which spec's 'add' wins: kept, the fake library registers nothing; replaced, its one
 * kernel is every 'add' there is. An unknown rule is refused. */
static void check_conflict_rules(nd_kernels *k, const char *fake_path)
{
    nd_error err;
    int fake, total = nd_kernels_count(k), adds = count_add(k, &fake);
    test_case = "conflict rules";
    CHECK(adds > 1 && fake == 0, "the bundled library has %d 'add' kernels, %d fake", adds, fake);
    CHECK_ERROR(nd_kernels_load_with(k, fake_path, (nd_load_conflicts)7, &err), err, ND_EINVAL,
                "conflict rule 7: expected ND_LOAD_REFUSE_CONFLICTS");
    CHECK(nd_kernels_load_with(k, fake_path, ND_LOAD_KEEP_OPS, &err) == 0, "keep: %s", err.msg);
    CHECK(nd_kernels_count(k) == total && count_add(k, &fake) == adds && fake == 0,
          "keep: %d kernels (was %d), %d of 'add', %d fake", nd_kernels_count(k), total, count_add(k, &fake), fake);
    CHECK(nd_kernels_load_with(k, fake_path, ND_LOAD_REPLACE_OPS, &err) == 0, "replace: %s", err.msg);
    CHECK(count_add(k, &fake) == 1 && fake == 1 && nd_kernels_count(k) == total - adds + 1,
          "replace: %d of 'add', %d fake, %d kernels (was %d)", count_add(k, &fake), fake, nd_kernels_count(k), total);
    ++passed;
}

int main(int argc, char **argv)
{
    nd_kernels *k;
    nd_error err;
    if (argc < 16 || nd_kernels_open(&k, &err))
        return 1;
    char want[128];
    snprintf(want, sizeof want, "kernel ABI version %u, but this runtime reads version %u", NDA_ABI_VERSION + 1,
             NDA_ABI_VERSION);
    expect(k, argv[1], ND_ESTALE, want);
    expect(k, argv[2], ND_EINVAL, "not a kernel library: it has no nda_kernel_registry symbol");
    expect(k, "/nonexistent/libnope.so", ND_ENOENT, "cannot load the kernel library");
    expect(k, "/dev/null", ND_ESYS, "cannot load the kernel library"); /* there, but not a shared object */
    expect_launch_refused(k, argv[3]);
    static const char *const lies[] = {
        "registry group 0: its entry count is out of range or its entries lie outside the library",
        "entry 0: its operand or output count is out of range",
        "entry 0: a dtype is not one the runtime knows",
        "entry 0: a shape class names no operand",
        "entry 0: its op, variant, symbol or function is missing or outside the library",
        "entry 0: its signatures do not match its variant",
    };
    for (int i = 0; i < 6; ++i)
        expect(k, argv[5 + i], ND_EINVAL, lies[i]);
    int rc = nd_kernels_load(k, argv[4], &err);
    CHECK(rc == 0, "loading the bundled library: %s", err.msg);
    expect(k, argv[11], ND_EREFUSED, "op 'add' of spec 'fake' is also an op of spec 'eltwise', loaded before");
    check_conflict_rules(k, argv[11]);
    expect(k, argv[12], ND_EINVAL, "entry fake_lie_generic: operand 'x': signature 'f32 shape=4 page=4 shard=4 "
                                   "cores=(0,0)-(0,0) row round_robin l1': not as ndgen writes it");
    expect(k, argv[13], ND_EINVAL, "entry fake_lie_generic: operand 'x': its pattern 'f32 shape=* page=4 shard=2");
    expect(k, argv[14], ND_EINVAL, "entry 0: a dtype is not one the runtime knows");
    expect(k, argv[15], ND_EINVAL, "entry 0: its read kind, moves_data or parts_chunked is out of range");
    nd_kernels_close(k);
    return test_finish(passed);
}
