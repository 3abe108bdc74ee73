-- reshard: any distribution of a tensor to any other, for every data-movement dtype. It is the
-- identity through the elementwise template, whose general path walks output rows and reads
-- contiguous runs wherever the input keeps them: sharded or interleaved, L1 or DRAM, any shard
-- shape, grid, orientation and strategy, and tile pages to row pages and back.
include "common.lua"

local pairs_of = {
  -- height sharded rows -> width sharded rows, on another grid
  { d({ 64, 64 }, { shard = { 16, 64 }, grid = "2x2" }), d({ 64, 64 }, { shard = { 64, 16 }, grid = "4x1" }) },
  -- L1 tiles -> DRAM interleaved rows
  { d({ 2, 64, 96 }, { shard = { 1, 32, 32 }, tile = "32x32", grid = "3x2" }),
    d({ 2, 64, 96 }, { interleaved = true, buffer = "dram", banks = 4 }) },
  -- DRAM interleaved tiles -> L1 block sharded 16x16 tiles, column-major cores, contiguous
  { d({ 48, 80 }, { interleaved = true, tile = "32x32", buffer = "dram", banks = 3 }),
    d({ 48, 80 }, { shard = { 16, 32 }, tile = "16x16", grid = "2x3", orientation = "col", strategy = "contiguous" }) },
  -- uneven rank 4, box pages -> rows over a core list
  { d({ 3, 5, 7, 9 }, { shard = { 2, 2, 4, 3 }, page = { 1, 1, 2, 3 }, grid = "2x2" }),
    d({ 3, 5, 7, 9 }, { shard = { 1, 5, 7, 9 }, grid = "4x4", cores = "(0,0)-(1,0); (3,3)" }) },
}

local targets = {}
for i, p in ipairs(pairs_of) do
  targets[i] = { a = p[1], out = p[2] }
  targets[#pairs_of + i] = { a = p[2], out = p[1] } -- and back
end
for _, dtype in ipairs(dtypes) do
  op {
    name = "reshard", template = "eltwise_unary.c", params = { EXPR = "(x)", LOAD = "(v)", STORE = "(v)" }, -- bits as they are
    reference = "elementwise",
    moves_data = true, -- outputs are input bytes: compared exactly
    inputs = { { name = "a", dtype = dtype, index = "..." } },
    outputs = { { name = "out", dtype = dtype, index = "..." } },
    targets = targets_for(dtype, targets),
  }
end
