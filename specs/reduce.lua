-- reduce_sum, reduce_max and reduce_mean over any set of axes, with or without keepdims: the axes come with each launch
-- (scalars = axes(a)); accumulation is in f32, for every floating dtype (f32, bf16, f16).
-- A maximum is NaN when any reduced element is NaN (as numpy.max, torch.amax and IEEE 754-2019 maximum),
-- written as a comparison and a select rather than fmaxf (which passes NaN over), so that it vectorizes.
include "common.lua"

-- partial: the output may be a pending sum (or max) over its copies, each copy folding its chunk of the
-- first reduced axis (templates/reduce.c). A mean stays whole: its parts, each its chunk's sum over the
-- whole count, would add up to the mean only within the divisions' rounding (1 to 2 ULP off the whole
-- mean's bits in test_kernels, checked once).
local reductions = {
  sum  = { INIT = "0.0f", ACC = "((acc) + (x))", FINISH = "(acc)", partial = { "sum" } },
  max  = { INIT = "(-INFINITY)", ACC = "((x) > (acc) || (x) != (x) ? (x) : (acc))", FINISH = "(acc)", partial = { "max" } },
  mean = { INIT = "0.0f", ACC = "((acc) + (x))", FINISH = "((acc) / (float)(n))" },
}

local targets = {
  -- down the columns: [64,96] -> [96]
  { a = d({ 64, 96 }, { shard = { 16, 96 }, grid = "2x2" }), out = d({ 96 }, { shard = { 48 }, grid = "2x1" }) },
  -- along the rows: [64,96] -> [64]
  { a = d({ 64, 96 }, { shard = { 64, 32 }, grid = "3x1" }), out = d({ 64 }, { shard = { 16 }, grid = "2x2" }) },
  -- keepdims: [64,96] -> [64,1]
  { a = d({ 64, 96 }, { shard = { 16, 96 }, grid = "2x2" }), out = d({ 64, 1 }, { shard = { 16, 1 }, grid = "2x2" }) },
  -- tiles, two axes: [4,64,64] over {0,2} -> [64]
  { a = d({ 4, 64, 64 }, { shard = { 2, 32, 32 }, tile = "32x32", grid = "2x2" }), out = d({ 64 }, { shard = { 32 }, grid = "2x1" }) },
  -- DRAM interleaved, uneven: [5,7,9] over {1} -> [5,9]
  { a = d({ 5, 7, 9 }, { interleaved = true, buffer = "dram", banks = 3 }), out = d({ 5, 9 }, { shard = { 2, 9 }, grid = "2x2" }) },
  -- output rows longer than one accumulation chunk (256), the last axis kept: [8,600] over {0} -> [600]
  { a = d({ 8, 600 }, { shard = { 4, 600 }, grid = "2x1" }), out = d({ 600 }, { shard = { 300 }, grid = "2x1" }) },
  -- everything, keepdims: [8,16] -> [1,1]
  { a = d({ 8, 16 }, { shard = { 4, 16 }, grid = "2x1" }), out = d({ 1, 1 }, { shard = { 1, 1 }, grid = "1x1" }) },
}

-- Partial outputs, in f32 only (a bf16 or f16 part is rounded before the parts combine, so a sum of
-- them is not the rounded sum).
local function partial_targets(kind)
  local function p(shape, placements, mesh, grid)
    local text = "[" .. placements:gsub("P", "Partial(" .. kind .. ")") .. "]"
    return d(shape, { placements = text, mesh = mesh, grid = grid })
  end
  return {
    -- everything to one element: 2 copies fold half the rows each, the halves their cores hold
    { a = d({ 64, 96 }, { shard = { 32, 96 }, grid = "2x1" }), out = p({ 1, 1 }, "P", "2", "2x1") },
    -- the last axis alone, 3 parts of it; rows split 2 ways beside them
    { a = d({ 8, 600 }, { shard = { 4, 600 }, grid = "2x1" }), out = p({ 8 }, "Shard(0), P", "dp=2,tp=3", "6x1") },
    -- more parts than the first reduced axis has indices: 8 parts of 5, three of them empty
    { a = d({ 5, 7, 9 }, { shard = { 2, 7, 9 }, grid = "3x1" }), out = p({ 7 }, "P", "8", "8x1") },
  }
end

for name, r in pairs(reductions) do
  local params = { INIT = r.INIT, ACC = r.ACC, FINISH = r.FINISH }
  for _, dtype in ipairs(floating_dtypes) do
    local ts = targets_for(dtype, targets)
    if r.partial and dtype == "f32" then
      for _, t in ipairs(typed(partial_targets(r.partial[1]), dtype)) do ts[#ts + 1] = t end
    end
    op {
      name = "reduce_" .. name, template = "reduce.c", params = params, scalars = "axes(a)",
      reference = { source = "reference/reduce.c", name = "ref_reduce_" .. name },
      inputs = { { name = "a", dtype = dtype, index = "..." } },
      outputs = { { name = "out", dtype = dtype, index = "...", partial = r.partial } },
      targets = ts,
    }
  end
end
