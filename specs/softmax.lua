-- softmax over the last axis, numerically stable, computed in f32 for f32 and bf16 data.
local math_types = {
  f32  = { T = "float" },
  bf16 = { T = "uint16_t", LOAD = "nda_bf16_to_f32(v)", STORE = "nda_f32_to_bf16(v)" },
}
local function d(shape, extra)
  local t = { shape = shape }
  for k, v in pairs(extra) do t[k] = v end
  return t
end
local targets = {
  { all = d({ 64, 96 }, { shard = { 16, 96 }, grid = "2x2" }) },                        -- rows inside pages
  { a = d({ 64, 96 }, { shard = { 64, 32 }, grid = "3x1" }),                             -- rows across cores
    out = d({ 64, 96 }, { shard = { 16, 96 }, grid = "2x2" }) },
  { all = d({ 2, 64, 64 }, { shard = { 1, 32, 64 }, tile = "32x32", grid = "2x2" }) },  -- tiles
  { a = d({ 3, 5, 33 }, { interleaved = true, buffer = "dram", banks = 2 }),              -- DRAM, uneven
    out = d({ 3, 5, 33 }, { shard = { 2, 2, 33 }, grid = "2x2", strategy = "contiguous" }) },
}
for dtype, types in pairs(math_types) do
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
    name = "softmax", template = "softmax.c", params = types,
    inputs = { { name = "a", dtype = dtype, index = "..." } },
    outputs = { { name = "out", dtype = dtype, index = "..." } },
    targets = typed,
  }
end
