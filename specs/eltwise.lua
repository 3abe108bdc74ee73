-- Elementwise ops on f32: one generic kernel each, plus kernels specialized for the targets below.

-- Targets shared by the elementwise ops: every operand distributed alike (aligned), over a few
-- families, plus one misaligned case where the input's pages live on other cores.
local function aligned(shape, shard, grid, extra)
  local d = { shape = shape, shard = shard, grid = grid }
  for k, v in pairs(extra or {}) do d[k] = v end
  return { all = d }
end

local targets = {
  aligned({ 256, 256 }, { 64, 256 }, "2x2"),                              -- height sharded, row pages
  aligned({ 256, 256 }, { 256, 64 }, "4x1"),                              -- width sharded
  aligned({ 8, 96, 96 }, { 2, 32, 32 }, "4x2", { tile = "32x32" }),       -- block sharded tiles
  aligned({ 5, 7, 33 }, { 2, 3, 16 }, "3x2", { strategy = "contiguous" }), -- uneven edges
  aligned({ 64, 64 }, nil, "2x2", { interleaved = true }),                -- interleaved rows
}
for _, n in ipairs({ 2, 4 }) do                                         -- computed in a loop
  targets[#targets + 1] = aligned({ 4, 16, 64 }, { 1, 16 // n, 64 }, n .. "x1", { orientation = "col" })
end

local unary = {
  relu = "((x) > 0.0f ? (x) : 0.0f)",
  neg  = "(-(x))",
  abs  = "fabsf(x)",
  exp  = "expf(x)",
}
for name, expr in pairs(unary) do
  op {
    name = name,
    template = "eltwise_unary.c",
    inputs = { { name = "a", dtype = "f32", index = "..." } },
    outputs = { { name = "out", dtype = "f32", index = "..." } },
    params = { T = "float", EXPR = expr },
    targets = targets,
  }
end

local binary = { add = "((x) + (y))", mul = "((x) * (y))" }
for name, expr in pairs(binary) do
  local bt = {}
  for i, t in ipairs(targets) do bt[i] = t end
  -- misaligned: b's pages sit on other cores than a's and out's
  bt[#bt + 1] = {
    a = { shape = { 128, 128 }, shard = { 32, 128 }, grid = "2x2" },
    b = { shape = { 128, 128 }, shard = { 64, 128 }, grid = "2x2", orientation = "col", strategy = "contiguous" },
    out = { shape = { 128, 128 }, shard = { 32, 128 }, grid = "2x2" },
  }
  op {
    name = name,
    template = "eltwise_binary.c",
    inputs = { { name = "a", dtype = "f32", index = "..." }, { name = "b", dtype = "f32", index = "..." } },
    outputs = { { name = "out", dtype = "f32", index = "..." } },
    params = { T = "float", EXPR = expr },
    targets = bt,
  }
end
