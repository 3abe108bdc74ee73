-- Four targets for the accepted corpus, given the op's input names (the output is "out"). Every
-- operand of a target has the same shape and page box, so page p of one holds the elements of page p
-- of another; what differs is where the pages live.
--   1. aligned: every operand placed alike (the specialized loops use advancing pointers);
--   2. apart: other shard shapes, grids and strategies per operand, some cores holding nothing;
--   3. uneven tiles: 72x100 in 32x32 tiles (padding) with edge shards of fewer pages;
--   4. rank 3 with box pages, uneven shards, one operand interleaved in DRAM.
local apart = {
  { shape = { 64, 96 }, shard = { 16, 32 }, page = { 1, 32 }, grid = "3x2" },
  { shape = { 64, 96 }, shard = { 64, 32 }, page = { 1, 32 }, grid = "2x1", strategy = "contiguous",
    orientation = "col" },
  { shape = { 64, 96 }, shard = { 32, 96 }, page = { 1, 32 }, grid = "2x2", strategy = "contiguous" },
}
local tiles = {
  { shape = { 72, 100 }, shard = { 64, 64 }, tile = "32x32", grid = "2x1" },
  { shape = { 72, 100 }, shard = { 32, 64 }, tile = "32x32", grid = "3x1", strategy = "contiguous" },
  { shape = { 72, 100 }, shard = { 64, 32 }, tile = "32x32", grid = "2x2" },
}
local rank3 = {
  { shape = { 3, 20, 40 }, interleaved = true, page = { 1, 4, 8 }, grid = "3x1", buffer = "dram" },
  { shape = { 3, 20, 40 }, shard = { 1, 8, 16 }, page = { 1, 4, 8 }, grid = "4x1" },
  { shape = { 3, 20, 40 }, shard = { 2, 12, 40 }, page = { 1, 4, 8 }, grid = "2x1", strategy = "contiguous" },
}

-- The output always gets the last layout of each list, so it stays in L1 (a DRAM output needs a core
-- per bank); inputs take the others in turn.
function targets(inputs)
  local list = {
    { all = { shape = { 64, 96 }, shard = { 32, 96 }, grid = "2x1" } },
    {}, {}, {},
  }
  for t, layouts in ipairs({ apart, tiles, rank3 }) do
    for i, name in ipairs(inputs) do
      list[t + 1][name] = layouts[(i - 1) % 2 + 1]
    end
    list[t + 1].out = layouts[3]
  end
  return list
end

-- Operand lists by dtype.
function unary(dtype, odtype)
  return { { name = "a", dtype = dtype, index = "..." } }, { { name = "out", dtype = odtype or dtype, index = "..." } }
end
function binary(dtype)
  return { { name = "a", dtype = dtype, index = "..." }, { name = "b", dtype = dtype, index = "..." } },
    { { name = "out", dtype = dtype, index = "..." } }
end

-- The op tables: op(unary_op("name", "template.c", params, dtype, odtype)) declares an op on a -> out
-- with the four targets; op(binary_op(...)) one on a, b -> out. The spec calls op itself, so that
-- messages name the spec's own line.
function unary_op(name, template, params, dtype, odtype)
  local inputs, outputs = unary(dtype or "f32", odtype)
  return { name = name, template = template, params = params, inputs = inputs, outputs = outputs,
           targets = targets({ "a" }) }
end
function binary_op(name, template, params)
  local inputs, outputs = binary("f32")
  return { name = name, template = template, params = params, inputs = inputs, outputs = outputs,
           targets = targets({ "a", "b" }) }
end
