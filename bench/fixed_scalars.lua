-- What fixing launch scalars at generation buys (issue 15, item 3): each op twice on one distribution,
-- a kernel taking its axes at launch and one whose target fixes them (scalars = {...}), timed side by
-- side by nd_fixed_scalars_bench. Working sets of 128 MiB, four times a 32 MiB last-level cache, in DRAM
-- (a 64 MiB shard is larger than a core's L1).
local rows = { shape = { 8192, 4096 }, shard = { 4096, 4096 }, grid = "2x1", buffer = "dram" }
local square = { shape = { 4096, 4096 }, shard = { 2048, 4096 }, grid = "2x1", buffer = "dram" }
local cube = { shape = { 256, 256, 256 }, shard = { 128, 256, 256 }, grid = "2x1", buffer = "dram" }

local function both(op, a, out, fixed)
  op.targets = { { a = a, out = out }, { a = a, out = out, scalars = fixed } }
  return op
end

local sum = { INIT = "0.0f", ACC = "((acc) + (x))", FINISH = "(acc)" }
local max = { INIT = "(-INFINITY)", ACC = "fmaxf(acc, x)", FINISH = "(acc)" }
local function reduce(name, params, out, axis)
  op(both({ name = name, template = "reduce.c", scalars = "axes(a)", params = params,
            inputs = { { name = "a", dtype = "f32", index = "..." } },
            outputs = { { name = "out", dtype = "f32", index = "..." } } },
          rows, out, { axes = { axis } }))
end
reduce("sum_rows", sum, { shape = { 8192 }, shard = { 4096 }, grid = "2x1", buffer = "dram" }, 1)
reduce("sum_cols", sum, { shape = { 4096 }, shard = { 2048 }, grid = "2x1", buffer = "dram" }, 0)
reduce("max_cols", max, { shape = { 4096 }, shard = { 2048 }, grid = "2x1", buffer = "dram" }, 0)

local function permute(name, a, out, perm)
  op(both({ name = name, template = "permute.c", scalars = "perm(a)",
            inputs = { { name = "a", dtype = "f32", index = "..." } },
            outputs = { { name = "out", dtype = "f32", index = "..." } } },
          a, out, { perm = perm }))
end
permute("transpose", square, square, { 1, 0 })
permute("permute201", cube, cube, { 2, 0, 1 })
