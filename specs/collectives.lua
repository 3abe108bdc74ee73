-- Collectives: the kernels that move data between the copies of a mesh-sharded tensor.
--   all_reduce      a Partial tensor (parts pending sum, avg, max, min or product) -> its value, replicated
--   reduce_scatter  a Partial tensor -> its value, split over the cores that held the parts
--   all_gather      a split tensor -> whole on every core of each copy
-- The first two share the summing template (which reads each part at the output's coordinates, so over
-- nodes only those pages are fetched); all_gather is a copy into every copy, which the elementwise
-- template does because each core writes its own group's copy and reads wherever the input lives (its
-- reference, derived from EXPR, is the identity, and says the same). Targets are stated as meshes, over 8 cores in a row.
include "common.lua"

local function on8(shape, notation, text, mesh)
  return { shape = shape, grid = "8x1", [notation] = text, mesh = mesh }
end

local partial = on8({ 8, 64 }, "placements", "[Partial(sum)]", "8")
local replicated = on8({ 8, 64 }, "einshard", "... -> * ...")
local by_column = on8({ 8, 64 }, "einshard", "b z -> b z*")
-- hybrid: rows split over 2, partial over 4
local hybrid = on8({ 8, 64 }, "placements", "[Shard(0), Partial(sum)]", "dp=2,tp=4")
local rows_replicated = on8({ 8, 64 }, "placements", "[Shard(0), Replicate()]", "dp=2,tp=4")

-- every other reduce op DTensor's Partial has: avg sums and divides once, at the end
local all_reduce_targets = { { ["in"] = partial, out = replicated }, { ["in"] = hybrid, out = rows_replicated } }
for _, r in ipairs({ "avg", "max", "min", "product" }) do
  all_reduce_targets[#all_reduce_targets + 1] = { ["in"] = on8({ 8, 64 }, "placements", "[Partial(" .. r .. ")]", "8"),
                                                 out = replicated }
end
all_reduce_targets[#all_reduce_targets + 1] = { ["in"] = on8({ 8, 64 }, "placements", "[Shard(0), Partial(max)]",
                                                             "dp=2,tp=4"), out = rows_replicated }

for _, dtype in ipairs(floating_dtypes) do
  local params = {}
  for _, c in ipairs({
    { "all_reduce", all_reduce_targets },
    { "reduce_scatter", { { ["in"] = partial, out = by_column } } },
  }) do
    op {
      name = c[1], template = "all_reduce.c", params = params,
      inputs = { { name = "in", dtype = dtype, partial = { "sum", "avg", "max", "min", "product" } } },
      outputs = { { name = "out", dtype = dtype } },
      targets = targets_for(dtype, c[2]),
    }
  end
  op {
    name = "all_gather", template = "eltwise_unary.c", params = { EXPR = "(x)" }, reference = "elementwise",
    inputs = { { name = "in", dtype = dtype } },
    outputs = { { name = "out", dtype = dtype } },
    targets = typed({ { ["in"] = by_column, out = replicated } }, dtype),
  }
end
