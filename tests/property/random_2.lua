-- Property targets, part 2: reshard and permute, every data-movement dtype.
include "random_dists.lua"
math.randomseed(20261122)
local R = math.random
local dtypes = { "f32", "bf16", "i32", "u8" }

local reshard, permute = {}, {}
for i = 1, 100 do
  local dtype = dtypes[R(4)]
  local shape = random_shape(1, 5, 40, 3000)
  reshard[i] = { dtype, { a = random_dist(shape, dtype), out = random_dist(shape, dtype) } }
end
for i = 1, 80 do
  local dtype = dtypes[R(4)]
  local shape = random_shape(2, 5, 24, 3000)
  local perm, out = {}, {}
  for k = 1, #shape do perm[k] = k end
  for k = #perm, 2, -1 do local j = R(k); perm[k], perm[j] = perm[j], perm[k] end
  for k = 1, #shape do out[k] = shape[perm[k]] end
  permute[i] = { dtype, { a = random_dist(shape, dtype), out = random_dist(out, dtype) } }
end
declare("reshard", "eltwise_unary.c", { "a" }, reshard, function() return { EXPR = "(x)", LOAD = "(v)", STORE = "(v)" } end)
declare("permute", "permute.c", { "a" }, permute, function() return {} end, "perm(a)")
