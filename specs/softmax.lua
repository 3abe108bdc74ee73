-- softmax over the last axis, numerically stable, computed in f32 for every floating dtype (f32, bf16, f16).
include "common.lua"

local targets = {
  { all = d({ 64, 96 }, { shard = { 16, 96 }, grid = "2x2" }) },                        -- rows inside pages
  { a = d({ 64, 96 }, { shard = { 64, 32 }, grid = "3x1" }),                             -- rows across cores
    out = d({ 64, 96 }, { shard = { 16, 96 }, grid = "2x2" }) },
  { all = d({ 2, 64, 64 }, { shard = { 1, 32, 64 }, tile = "32x32", grid = "2x2" }) },  -- tiles
  { a = d({ 3, 5, 33 }, { interleaved = true, buffer = "dram", banks = 2 }),              -- DRAM, uneven
    out = d({ 3, 5, 33 }, { shard = { 2, 2, 33 }, grid = "2x2", strategy = "contiguous" }) },
  { a = d({ 3, 4500 }, { shard = { 3, 1600 }, grid = "3x1" }),                           -- rows past ROW_KEEP (4096),
    out = d({ 3, 4500 }, { shard = { 2, 4500 }, grid = "2x1" }) },                        -- their exps computed twice
  { a = d({ 6, 12, 16 }, { shard = { 3, 6, 3 }, page = { 3, 2, 1 }, grid = "2x1" }),   -- pages one element along the
    out = d({ 6, 12, 16 }, { shard = { 9, 3, 2 }, page = { 3, 3, 1 }, grid = "2x2" }) },  -- row, rows taken up again
}
for _, dtype in ipairs(floating_dtypes) do
  op {
    name = "softmax", template = "softmax.c", params = {},
    reference = { source = "reference/softmax.c", name = "ref_softmax" },
    inputs = { { name = "a", dtype = dtype, index = "..." } },
    outputs = { { name = "out", dtype = dtype, index = "..." } },
    targets = targets_for(dtype, targets),
  }
end
