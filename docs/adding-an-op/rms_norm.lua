-- rms_norm(x) = x / sqrt(mean(x * x) + eps) over the last axis: a template of our own
-- (templates/rms_norm.c, which includes eltwise_rows.h from ndgen's templates), a launch scalar named
-- eps (an f32 in (0, 1]), and a plain reference in C that ndrun compare checks the kernels against.
op {
  name = "rms_norm",
  template = "rms_norm.c",
  scalars = "eps: f32 in (0, 1]",
  reference = { source = "rms_norm_ref.c", name = "rms_norm_ref" },
  inputs = { { name = "x", dtype = "f32", index = "..." } },
  outputs = { { name = "y", dtype = "f32", index = "..." } },
  targets = { { all = { shape = { 64, 64 }, shard = { 16, 64 }, grid = "2x2" } } },
}
