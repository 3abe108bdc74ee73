-- Contractions of two operands, by index notation: matmul, batched matmul, attention's scores and
-- context, and matrix-vector products. Reduced axes accumulate in f32, for every floating dtype (f32, bf16, f16).
include "common.lua"

local contractions = {
  matmul = { "ik", "kj", "ij", {
    { a = d({ 64, 48 }, { shard = { 16, 48 }, grid = "2x2" }), b = d({ 48, 80 }, { shard = { 48, 80 }, grid = "1x1" }),
      out = d({ 64, 80 }, { shard = { 16, 80 }, grid = "2x2" }) },
    -- the reduced axis k sharded over cores in both operands: partial rows live on other cores
    { a = d({ 32, 64 }, { shard = { 32, 16 }, grid = "4x1" }), b = d({ 64, 32 }, { shard = { 16, 32 }, grid = "2x2" }),
      out = d({ 32, 32 }, { shard = { 8, 32 }, grid = "2x2" }) },
    -- tiles everywhere
    { a = d({ 64, 64 }, { shard = { 32, 32 }, tile = "32x32", grid = "2x2" }),
      b = d({ 64, 64 }, { shard = { 32, 64 }, tile = "32x32", grid = "2x1" }),
      out = d({ 64, 64 }, { shard = { 32, 32 }, tile = "32x32", grid = "2x2", strategy = "contiguous" }) },
  } },
  bmm = { "bik", "bkj", "bij", {
    { a = d({ 3, 17, 24 }, { shard = { 1, 17, 24 }, grid = "3x1" }), b = d({ 3, 24, 40 }, { shard = { 1, 24, 40 }, grid = "3x1" }),
      out = d({ 3, 17, 40 }, { shard = { 1, 17, 40 }, grid = "3x1" }) },
  } },
  scores = { "bhqd", "bhkd", "bhqk", {    -- q . k over d: b's row letter is not its last axis
    { a = d({ 2, 2, 8, 16 }, { shard = { 1, 2, 8, 16 }, grid = "2x1" }), b = d({ 2, 2, 12, 16 }, { interleaved = true, buffer = "dram", banks = 3 }),
      out = d({ 2, 2, 8, 12 }, { shard = { 1, 1, 8, 12 }, grid = "2x2" }) },
  } },
  context = { "bhqk", "bhkd", "bhqd", {   -- attention's probabilities times v, over the keys k
    { a = d({ 2, 2, 8, 12 }, { shard = { 1, 2, 8, 12 }, grid = "2x1" }), b = d({ 2, 2, 12, 16 }, { shard = { 1, 2, 6, 16 }, grid = "2x2" }),
      out = d({ 2, 2, 8, 16 }, { shard = { 1, 1, 4, 16 }, grid = "2x2" }) },
  } },
  matvec = { "ij", "j", "i", {
    { a = d({ 48, 33 }, { shard = { 16, 33 }, grid = "3x1" }), b = d({ 33 }, { shard = { 33 }, grid = "1x1" }),
      out = d({ 48 }, { shard = { 16 }, grid = "3x1" }) },
  } },
}

-- tensor parallel: k split 4 ways in both operands, out a pending sum of 4 parts (one per core). In
-- f32 only: a bf16 or f16 part is rounded before the parts are added, so it is not the rounded sum.
local tensor_parallel = {
  a = d({ 32, 64 }, { einshard = "i k -> i k*", grid = "4x1" }), b = d({ 64, 48 }, { einshard = "k j -> k* j", grid = "4x1" }),
  out = d({ 32, 48 }, { placements = "[Partial(sum)]", mesh = "4", grid = "4x1" }),
}

for name, c in pairs(contractions) do
  for _, dtype in ipairs(floating_dtypes) do
    local targets = targets_for(dtype, c[4])
    if name == "matmul" and dtype == "f32" then targets[#targets + 1] = typed({ tensor_parallel }, dtype)[1] end
    op {
      -- matmul has its own packed, register-blocked kernel; the rest share the general one
      name = name, template = name == "matmul" and "matmul.c" or "einsum.c", params = {},
      reference = { source = "reference/einsum.c", name = "ref_einsum" },
      inputs = { { name = "a", dtype = dtype, index = c[1] }, { name = "b", dtype = dtype, index = c[2] } },
      -- matmul's output may be Partial: each copy computes its share of the sum over k
      outputs = { { name = "out", dtype = dtype, index = c[3], partial = name == "matmul" } },
      targets = targets,
    }
  end
end
