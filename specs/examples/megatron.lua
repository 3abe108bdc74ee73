-- The two-layer MLP of the einshard tutorial, Megatron style, on 8 cores in a row:
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
include "examples/megatron_mlp.lua"

megatron_mlp(8)
