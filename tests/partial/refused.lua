-- A set of fixed parameters ndgen does not support: refused with the reason (test_partial_refused).
local d = { shape = { 64, 64 }, shard = { 32, 64 }, grid = "2x1" }
op {
  name = "relu",
  template = "eltwise_unary.c",
  inputs = { { name = "a", dtype = "f32", index = "ij" } },
  outputs = { { name = "out", dtype = "f32", index = "ij" } },
  targets = { { all = d, fixed = "shape,grid" } },
}
