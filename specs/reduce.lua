-- reduce_sum, reduce_max and reduce_mean over any set of axes, with or without keepdims: the axes come with each launch
-- (scalars = axes(a)); accumulation is in f32, for f32 and bf16 data.
local math_types = {
  f32  = { T = "float" },
  bf16 = { T = "uint16_t", LOAD = "nda_bf16_to_f32(v)", STORE = "nda_f32_to_bf16(v)" },
}
local reductions = {
  sum  = { INIT = "0.0f", ACC = "((acc) + (x))", FINISH = "(acc)" },
  max  = { INIT = "(-INFINITY)", ACC = "fmaxf(acc, x)", FINISH = "(acc)" },
  mean = { INIT = "0.0f", ACC = "((acc) + (x))", FINISH = "((acc) / (float)(n))" },
}

local function d(shape, extra)
  local t = { shape = shape }
  for k, v in pairs(extra) do t[k] = v end
  return t
end

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
  -- everything, keepdims: [8,16] -> [1,1]
  { a = d({ 8, 16 }, { shard = { 4, 16 }, grid = "2x1" }), out = d({ 1, 1 }, { shard = { 1, 1 }, grid = "1x1" }) },
}

for name, r in pairs(reductions) do
  for dtype, types in pairs(math_types) do
    local params = {}
    for k, v in pairs(r) do params[k] = v end
    for k, v in pairs(types) do params[k] = v end
    local typed = {}
    for i, t in ipairs(targets) do
      typed[i] = {}
      for operand, dist in pairs(t) do
        local c = {}
        for k, v in pairs(dist) do c[k] = v end
        c.dtype = dtype
        typed[i][operand] = c
      end
    end
    op {
      name = "reduce_" .. name, template = "reduce.c", params = params, scalars = "axes(a)",
      inputs = { { name = "a", dtype = dtype, index = "..." } },
      outputs = { { name = "out", dtype = dtype, index = "..." } },
      targets = typed,
    }
  end
end
