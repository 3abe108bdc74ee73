/*
 * test_op_errors.c LIBRARY - launches the op library must refuse before any kernel runs, each with a
 * message naming the op, the operand and what is wrong.
 */
#include <string.h>

#include "nd_runtime.h"
#include "testutil.h"

static int64_t passed;
static nd_device *dev;
static nd_kernels *kernels;

/* A tensor on the 2x2 grid (12 banks in DRAM); with parts > 1 a Partial tensor pending reduce, each of
 * its parts a copy over two of the four cores. */
static nd_tensor *tensor_parts(const char *shape, const char *shard, nd_dtype dtype, nd_buffer buffer, int parts,
                               nd_reduce reduce)
{
    nd_dist_spec s;
    nd_dist d;
    nd_tensor *t;
    nd_error err;
    nd_dist_spec_init(&s);
    s.dtype = dtype;
    s.buffer = buffer;
    s.interleaved = shard == NULL;
    s.replicas = s.parts = parts;
    s.reduce = reduce;
    if (nd_parse_dims("shape", shape, s.shape, &s.rank, &err) ||
        (shard && nd_parse_dims("shard", shard, s.shard, &s.shard_rank, &err)) ||
        nd_dist_make(&s, buffer == ND_DRAM ? 12 : 2, buffer == ND_DRAM ? 1 : 2, &d, &err) ||
        nd_tensor_alloc(dev, &d, &t, &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        exit(1);
    }
    return t;
}

static nd_tensor *tensor(const char *shape, const char *shard, nd_dtype dtype, nd_buffer buffer)
{
    return tensor_parts(shape, shard, dtype, buffer, 1, ND_REDUCE_SUM);
}

static nd_tensor *partial(const char *shape, const char *shard, nd_dtype dtype, nd_reduce reduce)
{
    return tensor_parts(shape, shard, dtype, ND_L1, 2, reduce);
}

static int run(const char *op, nd_tensor **t, int n, const double *scalars, int nscalars, nd_error *err)
{
    return nd_run(&(nd_launch_desc){.device = dev, .kernels = kernels, .op = op, .tensors = t, .ntensors = n,
                                    .scalars = scalars, .nscalars = nscalars}, err);
}

static void expect_with(const char *op, nd_tensor **t, int n, const double *scalars, int nscalars, nd_errcode code,
                        const char *want)
{
    nd_error err;
    int rc = run(op, t, n, scalars, nscalars, &err);
    CHECK_ERROR(rc, err, code, want);
    ++passed;
}

static void expect(const char *op, nd_tensor **t, int n, nd_errcode code, const char *want)
{
    expect_with(op, t, n, NULL, 0, code, want);
}

int main(int argc, char **argv)
{
    nd_device_config cfg;
    nd_error err;
    nd_device_config_init(&cfg);
    cfg.grid_x = cfg.grid_y = 2;
    cfg.threads = 1;
    if (argc < 2 || nd_device_open(&cfg, &dev, &err) || nd_kernels_open(&kernels, &err) ||
        nd_kernels_load(kernels, argv[1], &err)) {
        fprintf(stderr, "usage: test_op_errors LIBRARY\n");
        return 1;
    }
    nd_tensor *a = tensor("4,6", "2,6", ND_F32, ND_L1), *b = tensor("4,5", "2,5", ND_F32, ND_L1);
    nd_tensor *out = tensor("4,6", "2,6", ND_F32, ND_L1), *wide = tensor("4,7", "2,7", ND_F32, ND_L1);
    nd_tensor *ints = tensor("4,6", "2,6", ND_I32, ND_L1), *col = tensor("4,1", "2,1", ND_F32, ND_L1);
    nd_tensor *dram = tensor("4,6", NULL, ND_F32, ND_DRAM);

    expect("add", (nd_tensor *[]){a, b, out}, 3,
           ND_EINVAL, "op 'add': operand 'b' has '...' dims [4,5], which do not broadcast with [4,6]");
    expect("add", (nd_tensor *[]){a, col, wide}, 3,
           ND_EINVAL, "op 'add': output 'out' has '...' dims [4,7], but the result's are [4,6]");
    expect("relu", (nd_tensor *[]){ints, out}, 2,
           ND_ENOENT, "op 'relu': operand 'a' is i32, but the op takes f32 or bf16 there");
    expect("relu", (nd_tensor *[]){a}, 1, ND_EINVAL, "op 'relu' takes 2 operands, but the launch gives 1");
    expect_with("relu", (nd_tensor *[]){a, out}, 2, (double[]){0.5}, 1,
                ND_EINVAL, "op 'relu' takes no scalars, but the launch gives 1");
    expect("softmax_of_nothing", (nd_tensor *[]){a, out}, 2,
           ND_ENOENT, "op 'softmax_of_nothing': no loaded kernel library provides it");
    expect("reshard", (nd_tensor *[]){a, dram}, 2,
           ND_EREFUSED, "op 'reshard': output 'out' spans 12 DRAM banks, but the device has 4 cores");
    nd_tensor *tr = tensor("6,4", "3,4", ND_F32, ND_L1);
    expect_with("permute", (nd_tensor *[]){a, tr}, 2, (double[]){0, 0}, 2, ND_EINVAL,
                "op 'permute': scalars [0,0] are not a permutation of the 2 axes of 'a'");
    expect_with("permute", (nd_tensor *[]){a, tr}, 2, (double[]){1, 0, 2}, 3,
                ND_EINVAL, "scalars [1,0,2] are not a permutation");
    expect_with("permute", (nd_tensor *[]){a, tr}, 2, (double[]){0.5, 1}, 2,
                ND_EINVAL, "scalars [0.5,1] are not a permutation");
    expect_with("permute", (nd_tensor *[]){a, out}, 2, (double[]){1, 0}, 2, ND_EINVAL,
                "op 'permute': output 'out' has shape [4,6], but permuting 'a' by [1,0] gives [6,4]");
    nd_tensor *k5 = tensor("5,8", "5,8", ND_F32, ND_L1), *mm = tensor("4,8", "2,8", ND_F32, ND_L1);
    expect("matmul", (nd_tensor *[]){a, k5, mm}, 3,
           ND_EINVAL, "op 'matmul': axis 'k' is 6 in operand 'a' but 5 in operand 'b'");
    nd_tensor *k6 = tensor("6,8", "6,8", ND_F32, ND_L1), *mm_bad = tensor("4,7", "2,7", ND_F32, ND_L1);
    expect("matmul", (nd_tensor *[]){a, k6, mm_bad}, 3,
           ND_EINVAL, "op 'matmul': axis 'j' is 8 in operand 'b' but 7 in operand 'out'");
    nd_tensor *vec = tensor("6", "6", ND_F32, ND_L1); /* a vector where a matrix belongs */
    expect("matmul", (nd_tensor *[]){a, vec, mm}, 3,
           ND_EINVAL, "op 'matmul': operand 'b' has rank 1, but its index 'kj' needs 2 axes");
    CHECK(run("matmul", (nd_tensor *[]){a, k6, mm}, 3, NULL, 0, &err) == 0, "matmul: %s", err.msg);
    /* A Partial(sum) output: in bf16 each part would be rounded before the parts are added; in f32 it runs. */
    nd_tensor *a16 = tensor("4,6", "2,6", ND_BF16, ND_L1), *b16 = tensor("6,8", "6,8", ND_BF16, ND_L1);
    nd_tensor *p16 = partial("4,8", "2,8", ND_BF16, ND_REDUCE_SUM), *p32 = partial("4,8", "2,8", ND_F32, ND_REDUCE_SUM);
    expect("matmul", (nd_tensor *[]){a16, b16, p16}, 3, ND_EREFUSED,
           "op 'matmul': output 'out' is bf16 Partial(sum): each of its 2 parts would be rounded to bf16 before they "
           "are combined");
    CHECK(run("matmul", (nd_tensor *[]){a, k6, p32}, 3, NULL, 0, &err) == 0, "matmul into f32 Partial(sum): %s",
          err.msg);
    ++passed;
    nd_tensor_free(a16);
    nd_tensor_free(b16);
    nd_tensor_free(p16);
    nd_tensor_free(p32);
    nd_tensor *rows = tensor("4", "2", ND_F32, ND_L1);
    expect_with("reduce_sum", (nd_tensor *[]){a, rows}, 2, (double[]){2}, 1, ND_EINVAL,
                "op 'reduce_sum': scalars [2] are not distinct axes of the 2 axes of 'a'");
    expect_with("reduce_sum", (nd_tensor *[]){a, rows}, 2, (double[]){1, 1}, 2,
                ND_EINVAL, "scalars [1,1] are not distinct axes");
    expect_with("reduce_sum", (nd_tensor *[]){a, rows}, 2, (double[]){0}, 1, ND_EINVAL,
                "op 'reduce_sum': output 'out' has shape [4], but reducing 'a' by [0] gives [6], or with keepdims [1,6]");
    CHECK(run("reduce_mean", (nd_tensor *[]){a, rows}, 2, (double[]){1}, 1, &err) == 0, "mean over axis 1: %s",
          err.msg);
    nd_tensor_free(rows);
    /* page_copy requires the same shape and page box: a tiled input into row pages is refused */
    nd_dist_spec ts;
    nd_dist td;
    nd_tensor *tiles = NULL, *rowpages = tensor("64,64", "64,64", ND_F32, ND_L1);
    nd_dist_spec_init(&ts);
    CHECK(nd_parse_dims("shape", "64,64", ts.shape, &ts.rank, &err) == 0 &&
          nd_parse_dims("shard", "64,64", ts.shard, &ts.shard_rank, &err) == 0 &&
          nd_parse_dims("page", "32,32", ts.page, &ts.page_rank, &err) == 0 &&
          (ts.page_kind = ND_PAGE_BOX, nd_dist_make(&ts, 1, 1, &td, &err) == 0) &&
          nd_tensor_alloc(dev, &td, &tiles, &err) == 0, "tiled tensor: %s", err.msg);
    expect("page_copy", (nd_tensor *[]){tiles, rowpages}, 2, ND_EINVAL,
           "op 'page_copy': operands 'in' and 'out' must have the same shape and page box (the op requires "
           "same_paging(in,out))");
    nd_tensor_free(tiles);
    nd_tensor_free(rowpages);
    /* and launches that are fine: broadcasting a column, a transpose */
    CHECK(run("permute", (nd_tensor *[]){a, tr}, 2, (double[]){1, 0}, 2, &err) == 0, "transpose: %s", err.msg);
    nd_tensor_free(tr);
    int rc = run("add", (nd_tensor *[]){a, col, out}, 3, NULL, 0, &err);
    CHECK(rc == 0, "add with a broadcast column: %s", err.msg);
    ++passed;
    /* a launch description without an op, or counts without arrays */
    rc = nd_run(&(nd_launch_desc){.device = dev, .kernels = kernels, .tensors = (nd_tensor *[]){a, out}, .ntensors = 2},
                &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "run: the launch needs a device, kernels and an op");
    rc = nd_run(NULL, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "run: the launch needs a device, kernels and an op");
    rc = nd_run(&(nd_launch_desc){.device = dev, .kernels = kernels, .op = "relu", .ntensors = 2}, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "op 'relu': 2 tensors and 0 scalars, but no array holds them");
    /* a NULL tensor, or more tensors than the op takes: refused before any tensor is read */
    rc = run("relu", (nd_tensor *[]){a, NULL}, 2, NULL, 0, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "op 'relu': operand 1 is NULL");
    rc = run("relu", (nd_tensor *[]){a, out, NULL}, 3, NULL, 0, &err);
    CHECK_ERROR(rc, err, ND_EINVAL, "op 'relu' takes 2 operands, but the launch gives 3");
    rc = run("no_such_op", (nd_tensor *[]){NULL}, 1, NULL, 0, &err);
    CHECK_ERROR(rc, err, ND_ENOENT, "op 'no_such_op': no loaded kernel library provides it");
    passed += 6;

    nd_tensor *all[] = {a, b, out, wide, ints, col, dram, k5, mm, k6, mm_bad, vec};
    for (size_t i = 0; i < sizeof all / sizeof *all; ++i)
        nd_tensor_free(all[i]);
    nd_kernels_close(kernels);
    nd_device_close(dev);
    return test_finish(passed);
}
