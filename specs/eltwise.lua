-- Elementwise ops on f32: unary, binary and ternary with numpy broadcasting. Each op gets a generic
-- kernel, plus kernels specialized for the targets below.

local function d(shape, shard, grid, extra)
  local t = { shape = shape, shard = shard, grid = grid }
  for k, v in pairs(extra or {}) do t[k] = v end
  return t
end

-- Every operand distributed alike: the page-by-page path with known-local reads.
local aligned = {
  d({ 256, 256 }, { 64, 256 }, "2x2"),                               -- height sharded, row pages
  d({ 256, 256 }, { 256, 64 }, "4x1"),                               -- width sharded
  d({ 8, 96, 96 }, { 2, 32, 32 }, "4x2", { tile = "32x32" }),        -- block sharded tiles
  d({ 5, 7, 33 }, { 2, 3, 16 }, "3x2", { strategy = "contiguous" }), -- uneven edges
  d({ 64, 64 }, nil, "2x2", { interleaved = true }),                 -- interleaved rows
}
for _, n in ipairs({ 2, 4 }) do                                      -- computed in a loop
  aligned[#aligned + 1] = d({ 4, 16, 64 }, { 1, 16 // n, 64 }, n .. "x1", { orientation = "col" })
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

-- How each math dtype is stored and converted: bf16 is stored as uint16_t, computed in f32 and
-- rounded to nearest even on the way back.
local math_types = {
  f32  = { T = "float" },
  bf16 = { T = "uint16_t", LOAD = "nda_bf16_to_f32(v)", STORE = "nda_f32_to_bf16(v)" },
}

-- A target list with every distribution given this dtype.
local function typed(targets, dtype)
  local out = {}
  for i, t in ipairs(targets) do
    out[i] = {}
    for operand, dist in pairs(t) do
      local copy = {}
      for k, v in pairs(dist) do copy[k] = v end
      copy.dtype = dtype
      out[i][operand] = copy
    end
  end
  return out
end

local function op_family(template, ops, inputs, targets)
  for name, expr in pairs(ops) do
    for dtype, types in pairs(math_types) do
      local ins = {}
      for i, n in ipairs(inputs) do ins[i] = { name = n, dtype = dtype, index = "..." } end
      local params = { EXPR = expr }
      for k, v in pairs(types) do params[k] = v end
      op {
        name = name, template = template, params = params,
        inputs = ins, outputs = { { name = "out", dtype = dtype, index = "..." } },
        targets = typed(dtype == "f32" and targets or { targets[1], targets[#targets] }, dtype),
      }
    end
  end
end

op_family("eltwise_unary.c", {
  relu    = "((x) > 0.0f ? (x) : 0.0f)",
  gelu    = "(0.5f * (x) * (1.0f + erff((x) * 0.70710678f)))",
  exp     = "expf(x)",
  log     = "logf(x)",
  sqrt    = "sqrtf(x)",
  neg     = "(-(x))",
  abs     = "fabsf(x)",
  sigmoid = "(1.0f / (1.0f + expf(-(x))))",
  tanh    = "tanhf(x)",
}, { "a" }, with(aligned, {
  -- tiles in, rows out: the row-by-row path
  { a = d({ 64, 96 }, { 32, 96 }, "2x1", { tile = "32x32" }), out = d({ 64, 96 }, { 16, 96 }, "2x2") },
  -- DRAM interleaved in, L1 sharded out
  { a = d({ 4, 33, 17 }, nil, nil, { interleaved = true, buffer = "dram", banks = 5 }),
    out = d({ 4, 33, 17 }, { 2, 11, 17 }, "3x2", { strategy = "contiguous" }) },
}))

local misaligned = {
  a = d({ 128, 128 }, { 32, 128 }, "2x2"),
  b = d({ 128, 128 }, { 64, 128 }, "2x2", { orientation = "col", strategy = "contiguous" }),
  out = d({ 128, 128 }, { 32, 128 }, "2x2"),
}
op_family("eltwise_binary.c", {
  add = "((x) + (y))", sub = "((x) - (y))", mul = "((x) * (y))", div = "((x) / (y))",
  max = "fmaxf(x, y)", min = "fminf(x, y)",
}, { "a", "b" }, with(aligned, {
  misaligned,
  -- b broadcasts along rows (rank 1, one core)
  { a = d({ 64, 128 }, { 16, 128 }, "2x2"), b = d({ 128 }, { 64 }, "2x1"), out = d({ 64, 128 }, { 16, 128 }, "2x2") },
  -- b broadcasts along columns
  { a = d({ 64, 128 }, { 16, 128 }, "2x2"), b = d({ 64, 1 }, { 16, 1 }, "2x2"), out = d({ 64, 128 }, { 16, 128 }, "2x2") },
  -- three page boxes: tiles, rows and boxes of 2x8
  { a = d({ 64, 64 }, { 32, 32 }, "2x2", { tile = "32x32" }), b = d({ 64, 64 }, { 8, 64 }, "4x2"),
    out = d({ 64, 64 }, { 16, 16 }, "2x2", { page = { 2, 8 } }) },
}))

op_family("eltwise_ternary.c", {
  mul_add = "((x) * (y) + (z))",                        -- the fused a*b + c: this spec line is all it takes
  lerp    = "((x) + ((y) - (x)) * (z))",
  clamp   = "fminf(fmaxf(x, y), z)",
}, { "a", "b", "c" }, with({ aligned[1], aligned[3], aligned[4] }, {
  -- c is one value per column, broadcast over rows; a is misaligned with out
  { a = d({ 32, 48 }, { 8, 48 }, "2x2", { strategy = "contiguous" }), b = d({ 32, 48 }, { 16, 48 }, "2x1"),
    c = d({ 48 }, { 48 }, "1x1"), out = d({ 32, 48 }, { 8, 48 }, "2x2") },
}))
