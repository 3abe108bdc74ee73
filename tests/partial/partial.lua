-- Partial specialization (issue 17): kernels that fix the sharding pattern and read the tensor shape at
-- run time (fixed = "pattern"), or the shape and the core list (fixed = "shard"), beside exact kernels
-- and the generic one. tests/test_partial.c runs them on random shapes (and, for "shard", core grids)
-- sharing each pattern, and checks the pick order on op add.
local rows = { shape = { 300, 200 }, shard = { 64, 64 }, grid = "2x2" }            -- row pages of 64
local other = { shape = { 300, 200 }, shard = { 32, 128 }, grid = "3x1", strategy = "contiguous" }
local tiles = { shape = { 3, 96, 80 }, shard = { 2, 64, 32 }, tile = "32x32", grid = "2x2", strategy = "contiguous" }
local box = { shape = { 5, 40, 24 }, shard = { 2, 16, 8 }, page = { 1, 4, 8 }, grid = "3x2" }
local bcast = { shape = { 200 }, shard = { 64 }, grid = "2x2" }

op {
  name = "add",
  template = "eltwise_binary.c",
  inputs = { { name = "a", dtype = "f32", index = "ij" }, { name = "b", dtype = "f32", index = "ij" } },
  outputs = { { name = "out", dtype = "f32", index = "ij" } },
  params = { EXPR = "((x) + (y))" },
  targets = {
    { all = rows },                                   -- t0: exact
    { all = rows, fixed = "pattern" },                -- t1: the same pattern, any shape
    { a = other, b = rows, out = rows, fixed = "pattern" }, -- t2: a placed otherwise: remote reads
    { all = rows, fixed = "shard" },                  -- t3: the same shard layout, any shape and cores
    { a = other, b = rows, out = rows, fixed = "all but shape, grid" }, -- t4: t2's, any cores
  },
}

op {
  name = "addrow",
  template = "eltwise_binary.c",
  inputs = { { name = "a", dtype = "f32", index = "ij" }, { name = "b", dtype = "f32", index = "j" } },
  outputs = { { name = "out", dtype = "f32", index = "ij" } },
  params = { EXPR = "((x) - (y))" },
  targets = {
    { a = rows, b = bcast, out = rows, fixed = "pattern" }, -- b broadcast along rows: element reads
    { a = rows, b = bcast, out = rows, fixed = "shard" },
  },
}

op {
  name = "add3",
  template = "eltwise_binary.c",
  inputs = { { name = "a", dtype = "f32", index = "ijk" }, { name = "b", dtype = "f32", index = "ijk" } },
  outputs = { { name = "out", dtype = "f32", index = "ijk" } },
  params = { EXPR = "((x) * 2.0f + (y))" },
  targets = {
    { all = tiles, fixed = "pattern" },
    { a = box, b = box, out = box, fixed = "pattern" },
    { all = tiles, fixed = "shard" },
    { a = box, b = box, out = box, fixed = "shard" },
  },
}

op {
  name = "copy",
  template = "page_copy.c",
  requires = "same_paging(in, out)",
  inputs = { { name = "in", dtype = "f32", index = "..." } },
  outputs = { { name = "out", dtype = "f32", index = "..." } },
  targets = {
    { ["in"] = { shape = { 300, 200 }, shard = { 64, 40 }, page = { 1, 40 }, grid = "2x2" },
      out = { shape = { 300, 200 }, shard = { 100, 200 }, page = { 1, 40 }, grid = "3x1", strategy = "contiguous" },
      fixed = "pattern" },
    { ["in"] = { shape = { 300, 200 }, shard = { 64, 40 }, page = { 1, 40 }, grid = "2x2" },
      out = { shape = { 300, 200 }, shard = { 100, 200 }, page = { 1, 40 }, grid = "3x1", strategy = "contiguous" },
      fixed = "shard" },
    { ["in"] = { shape = { 300, 200 }, shard = { 64, 200 }, page = { 1, 40 }, grid = "2x2" }, -- one shard across
      out = { shape = { 300, 200 }, shard = { 100, 40 }, page = { 1, 40 }, grid = "3x1", strategy = "contiguous" },
      fixed = "pattern" }, -- at the example, more at wider shapes: every page lookup must use dim 1's shard
  },
}
