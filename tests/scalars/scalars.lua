-- Typed launch scalars (issue 15): a user op reading them by name, targets that fix some or all of
-- them, and a reduction whose axes a target fixes. tests/test_scalars_launch.c runs them.
local d = { shape = { 300, 200 }, shard = { 64, 64 }, grid = "2x2" }
local function axpb(name, targets)
  op {
    name = name,
    template = "axpb.c",
    requires = "same_paging(a, out)",
    inputs = { { name = "a", dtype = "f32", index = "ij" } },
    outputs = { { name = "out", dtype = "f32", index = "ij" } },
    scalars = "alpha: f32, beta: f32 in [-10, 10], times: i32 in [1, 4]",
    targets = targets,
  }
end

axpb("axpb", {
    { all = d, scalars = { alpha = 2, times = 3 } },             -- t0: two of three fixed
    { all = d },                                                  -- t1: none fixed
    { all = d, scalars = { alpha = 0.5, beta = -1, times = 1 } }, -- t2: all fixed
})

axpb("axpb_fixed_only", { { all = d, scalars = { alpha = 2, beta = 1, times = 2 } } })
axpb("axpb_fixes_none", { { all = d, scalars = {} } }) -- as no scalars table: nd_kernels_pick takes it
axpb("axpb_negative_zero", { { all = d, scalars = { alpha = 1, beta = -0.0, times = 1 } } }) -- not 0.0

local rows = { shape = { 300, 520 }, shard = { 64, 520 }, grid = "2x2" }
op {
  name = "reduce_sum",
  template = "reduce.c",
  scalars = "axes(a)",
  inputs = { { name = "a", dtype = "f32", index = "..." } },
  outputs = { { name = "out", dtype = "f32", index = "..." } },
  targets = {
    { a = rows, out = { shape = { 300 }, shard = { 64 }, grid = "2x2" } },                     -- t0
    { a = rows, out = { shape = { 300 }, shard = { 64 }, grid = "2x2" }, scalars = { axes = { 1 } } }, -- t1
    { a = rows, out = { shape = { 520 }, shard = { 128 }, grid = "2x2" }, scalars = { axes = { 0 } } }, -- t2
  },
}
