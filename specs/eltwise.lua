-- Elementwise ops on every floating dtype: unary, binary and ternary with numpy broadcasting. Each op gets a generic
-- kernel, plus kernels specialized for the targets below.

include "common.lua"

local function dist(shape, shard, grid, extra)
  local t = d(shape, extra)
  t.shard, t.grid = shard, grid
  return t
end

-- Every operand distributed alike: the page-by-page path with known-local reads.
local aligned = {
  dist({ 256, 256 }, { 64, 256 }, "2x2"),                               -- height sharded, row pages
  dist({ 256, 256 }, { 256, 64 }, "4x1"),                               -- width sharded
  dist({ 8, 96, 96 }, { 2, 32, 32 }, "4x2", { tile = "32x32" }),        -- block sharded tiles
  dist({ 5, 7, 33 }, { 2, 3, 16 }, "3x2", { strategy = "contiguous" }), -- uneven edges
  dist({ 64, 64 }, nil, "2x2", { interleaved = true }),                 -- interleaved rows
}
for _, n in ipairs({ 2, 4 }) do                                      -- computed in a loop
  aligned[#aligned + 1] = dist({ 4, 16, 64 }, { 1, 16 // n, 64 }, n .. "x1", { orientation = "col" })
end

local function all_alike(list)
  local t = {}
  for i, dist in ipairs(list) do t[i] = { all = dist } end
  return t
end

local function with(list, more)
  local t = all_alike(list)
  for _, x in ipairs(more) do t[#t + 1] = x end
  return t
end


local function op_family(template, ops, inputs, targets)
  for name, expr in pairs(ops) do
    for _, dtype in ipairs(floating_dtypes) do
      local ins = {}
      for i, n in ipairs(inputs) do ins[i] = { name = n, dtype = dtype, index = "..." } end
      op {
        name = name, template = template, params = { EXPR = expr }, reference = "elementwise",
        inputs = ins, outputs = { { name = "out", dtype = dtype, index = "..." } },
        targets = typed(dtype == "f32" and targets or { targets[1], targets[#targets] }, dtype),
      }
    end
  end
end

op_family("eltwise_unary.c", {
  relu    = "((x) > 0.0f ? (x) : 0.0f)",
  gelu    = "(0.5f * (x) * (1.0f + vmath_erff((x) * 0.70710678f)))",
  exp     = "expf(x)",
  log     = "logf(x)",
  sqrt    = "sqrtf(x)",
  neg     = "(-(x))",
  abs     = "fabsf(x)",
  sigmoid = "(1.0f / (1.0f + expf(-(x))))",
  tanh    = "tanhf(x)",
}, { "a" }, with(aligned, {
  -- tiles in, rows out: the row-by-row path
  { a = dist({ 64, 96 }, { 32, 96 }, "2x1", { tile = "32x32" }), out = dist({ 64, 96 }, { 16, 96 }, "2x2") },
  -- DRAM interleaved in, L1 sharded out
  { a = dist({ 4, 33, 17 }, nil, nil, { interleaved = true, buffer = "dram", banks = 5 }),
    out = dist({ 4, 33, 17 }, { 2, 11, 17 }, "3x2", { strategy = "contiguous" }) },
}))

local misaligned = {
  a = dist({ 128, 128 }, { 32, 128 }, "2x2"),
  b = dist({ 128, 128 }, { 64, 128 }, "2x2", { orientation = "col", strategy = "contiguous" }),
  out = dist({ 128, 128 }, { 32, 128 }, "2x2"),
}
op_family("eltwise_binary.c", {
  add = "((x) + (y))", sub = "((x) - (y))", mul = "((x) * (y))", div = "((x) / (y))",
  max = "fmaxf(x, y)", min = "fminf(x, y)",
}, { "a", "b" }, with(aligned, {
  misaligned,
  -- b broadcasts along rows (rank 1, one core)
  { a = dist({ 64, 128 }, { 16, 128 }, "2x2"), b = dist({ 128 }, { 64 }, "2x1"), out = dist({ 64, 128 }, { 16, 128 }, "2x2") },
  -- b broadcasts along columns
  { a = dist({ 64, 128 }, { 16, 128 }, "2x2"), b = dist({ 64, 1 }, { 16, 1 }, "2x2"), out = dist({ 64, 128 }, { 16, 128 }, "2x2") },
  -- three page boxes: tiles, rows and boxes of 2x8
  { a = dist({ 64, 64 }, { 32, 32 }, "2x2", { tile = "32x32" }), b = dist({ 64, 64 }, { 8, 64 }, "4x2"),
    out = dist({ 64, 64 }, { 16, 16 }, "2x2", { page = { 2, 8 } }) },
}))

op_family("eltwise_ternary.c", {
  mul_add = "((x) * (y) + (z))",                        -- the fused a*b + c: this spec line is all it takes
  lerp    = "((x) + ((y) - (x)) * (z))",
  clamp   = "fminf(fmaxf(x, y), z)",
}, { "a", "b", "c" }, with({ aligned[1], aligned[3], aligned[4] }, {
  -- c is one value per column, broadcast over rows; a is misaligned with out
  { a = dist({ 32, 48 }, { 8, 48 }, "2x2", { strategy = "contiguous" }), b = dist({ 32, 48 }, { 16, 48 }, "2x1"),
    c = dist({ 48 }, { 48 }, "1x1"), out = dist({ 32, 48 }, { 8, 48 }, "2x2") },
}))
