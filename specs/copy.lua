-- Page copy between two distributions of one shape and page box: the simplest reshard.
local function both(shape, page, from, to)
  from.shape, from.page, to.shape, to.page = shape, page, shape, page
  return { ["in"] = from, out = to }
end

op {
  name = "page_copy",
  template = "page_copy.c",
  reference = { source = "reference/copy.c", name = "ref_copy" },
  moves_data = true, -- data movement: the output is the input, compared exactly
  requires = "same_paging(in, out)", -- page p of in is page p of out: the template copies pages whole
  inputs = { { name = "in", dtype = "f32", index = "..." } },
  outputs = { { name = "out", dtype = "f32", index = "..." } },
  targets = {
    -- height sharded -> width sharded rows of 16, on the same 2x2 grid
    both({ 64, 64 }, { 1, 16 }, { shard = { 16, 64 }, grid = "2x2" }, { shard = { 64, 16 }, grid = "2x2" }),
    -- identical placement: every read is local
    both({ 64, 64 }, { 1, 64 }, { shard = { 16, 64 }, grid = "2x2" }, { shard = { 16, 64 }, grid = "2x2" }),
    -- DRAM interleaved -> L1 block sharded
    both({ 3, 64, 64 }, { 1, 1, 32 }, { interleaved = true, buffer = "dram", banks = 6 },
         { shard = { 1, 32, 32 }, grid = "2x3", strategy = "contiguous" }),
  },
}
