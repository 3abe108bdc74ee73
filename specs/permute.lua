-- permute: any axis permutation of a tensor of any rank, transpose included; the permutation comes
-- with each launch (scalars = perm(a)), the distributions are anything. Data movement, so every dtype.
include "common.lua"

local targets = {
  -- transpose: height sharded rows -> height sharded rows of the transpose
  { a = d({ 64, 96 }, { shard = { 16, 96 }, grid = "2x2" }), out = d({ 96, 64 }, { shard = { 24, 64 }, grid = "2x2" }) },
  -- transpose of tiles into tiles
  { a = d({ 64, 96 }, { shard = { 32, 32 }, tile = "32x32", grid = "3x2" }),
    out = d({ 96, 64 }, { shard = { 32, 64 }, tile = "32x32", grid = "3x1" }) },
  -- rank 3, last axis kept: rows move whole ([4,6,10] -> [6,4,10])
  { a = d({ 4, 6, 10 }, { shard = { 2, 3, 10 }, grid = "2x2" }), out = d({ 6, 4, 10 }, { shard = { 3, 4, 10 }, grid = "2x1" }) },
  -- the template's row groups (4 KiB of input along the output's rows: 1024 f32 rows, 2048 bf16,
  -- 4096 u8): 4200 rows cross every dtype's group, and shards of 700 split groups between cores, so a
  -- group's leader can be its 701st row and tiles mix both cores' rows; rows of 64 give every dtype
  -- whole tiles (u8: 64 x 64), transposed in registers
  { a = d({ 64, 4200 }, { shard = { 64, 840 }, grid = "5x1" }), out = d({ 4200, 64 }, { shard = { 700, 64 }, grid = "2x1" }) },
  -- a rank-3 2,0,1 whose output rows alternate between the cores every 7 rows, across 4200 rows, with
  -- one input run per group
  { a = d({ 3, 4, 4200 }, { shard = { 3, 4, 4200 }, grid = "1x1" }), out = d({ 4200, 3, 4 }, { shard = { 7, 3, 4 }, grid = "2x1" }) },
  -- input rows longer than two groups: a leader's next group takes each column's run from the one kept
  -- for the group before it (u8: groups at 0, 4096 and 8192, the one at 4096 split between the cores;
  -- f32 every 1024); the same with the input's pages 4300 wide, where a kept run ends inside the next
  -- group
  { a = d({ 64, 8600 }, { shard = { 32, 8600 }, grid = "2x1" }), out = d({ 8600, 64 }, { shard = { 4300, 64 }, grid = "2x1" }) },
  { a = d({ 64, 8600 }, { shard = { 32, 4300 }, grid = "2x1" }), out = d({ 8600, 64 }, { shard = { 4300, 64 }, grid = "2x1" }) },
  -- a DRAM output: no core holds its rows, so each is written alone
  { a = d({ 40, 150 }, { shard = { 20, 150 }, grid = "2x1" }), out = d({ 150, 40 }, { interleaved = true, buffer = "dram", banks = 3 }) },
  -- rank 4, uneven, DRAM interleaved in ([3,5,7,2] -> [2,7,3,5])
  { a = d({ 3, 5, 7, 2 }, { interleaved = true, buffer = "dram", banks = 3 }),
    out = d({ 2, 7, 3, 5 }, { shard = { 1, 4, 3, 5 }, grid = "2x2", strategy = "contiguous" }) },
}

for _, dtype in ipairs(dtypes) do
  op {
    name = "permute", template = "permute.c", scalars = "perm(a)",
    reference = { source = "reference/permute.c", name = "ref_permute" },
    moves_data = true, -- outputs are input bytes: compared exactly
    inputs = { { name = "a", dtype = dtype, index = "..." } },
    outputs = { { name = "out", dtype = dtype, index = "..." } },
    targets = targets_for(dtype, targets),
  }
end
