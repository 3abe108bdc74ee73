-- The two-layer MLP of the einshard tutorial, Megatron style, on 4 cores in a row, one per MPI process (tests/test_mpi_megatron.c):
--
--   Y = X @ W1      bx,xy->by    X replicated ('... -> * ...'), W1 split along y ('x y -> x y*')
--   H = relu(Y)                  elementwise: H is split like Y
--   Z = H @ W2      by,yz->bz    W2 split along y ('y z -> y* z'): y is reduced and sharded, so each
--                                core holds a partial Z, and Z is Partial over the 8 cores
--   Zr = all_reduce(Z)           the one collective: Zr is whole on every core
--
-- The first matmul is data parallel over y and moves nothing; the second is tensor parallel and
-- moves nothing either, since each core contracts its own slice of y. All communication is the one
-- all_reduce. `ndgen plan` says the same (see README.md, "Sharding front ends").
include "common.lua"

local B, X, Y, Z = 8, 128, 256, 64

local function on4(shape, notation, text, mesh)
  return { shape = shape, grid = "4x1", [notation] = text, mesh = mesh }
end

local x_rep = on4({ B, X }, "einshard", "... -> * ...")
local w1 = on4({ X, Y }, "einshard", "x y -> x y*")
local y_split = on4({ B, Y }, "einshard", "b y -> b y*")
local w2 = on4({ Y, Z }, "einshard", "y z -> y* z")
local z_partial = on4({ B, Z }, "placements", "[Partial(sum)]", "4")
local z_rep = on4({ B, Z }, "einshard", "... -> * ...")

op {
  name = "matmul", template = "matmul.c", params = {},
  inputs = { { name = "a", dtype = "f32", index = "ik" }, { name = "b", dtype = "f32", index = "kj" } },
  outputs = { { name = "out", dtype = "f32", index = "ij", partial = true } },
  targets = { { a = x_rep, b = w1, out = y_split }, { a = y_split, b = w2, out = z_partial } },
}

op {
  name = "relu", template = "eltwise_unary.c", params = { EXPR = "((x) > 0.0f ? (x) : 0.0f)" },
  inputs = { { name = "a", dtype = "f32" } },
  outputs = { { name = "out", dtype = "f32" } },
  targets = { { all = y_split } },
}

op {
  name = "all_reduce", template = "all_reduce.c", params = {},
  inputs = { { name = "in", dtype = "f32", partial = true } },
  outputs = { { name = "out", dtype = "f32" } },
  targets = { { ["in"] = z_partial, out = z_rep } },
}
