-- axpb of tests/scalars/scalars.lua with its scalars declared in another order, on a distribution that
-- library has no target for: what a JIT library built from an edited spec looks like. Loaded after
-- scalars.lua's library it is refused whole (test_scalars_launch), never read beta as alpha.
op {
  name = "axpb",
  template = "axpb.c",
  requires = "same_paging(a, out)",
  inputs = { { name = "a", dtype = "f32", index = "ij" } },
  outputs = { { name = "out", dtype = "f32", index = "ij" } },
  scalars = "beta: f32 in [-10, 10], alpha: f32, times: i32 in [1, 4]",
  targets = { { all = { shape = { 300, 200 }, shard = { 32, 64 }, grid = "2x2" } } },
}
