-- Property targets, part 3: reduce_sum over random axes (keepdims or not), softmax, matmul.
include "random_dists.lua"
math.randomseed(20261123)
local R = math.random

local reduce, softmax, matmul = {}, {}, {}
for i = 1, 70 do
  local shape = random_shape(1, 4, 24, 3000)
  local keep, out = R(2) == 1, {}
  local any = false
  for k = 1, #shape do
    local reduced = R(2) == 1 or (k == #shape and not any)
    any = any or reduced
    if reduced and keep then out[#out + 1] = 1 elseif not reduced then out[#out + 1] = shape[k] end
  end
  if #out == 0 then out = { 1 } for k = 2, #shape do out[k] = 1 end end -- everything reduced: keepdims
  reduce[i] = { "f32", { a = random_dist(shape, "f32"), out = random_dist(out, "f32") } }
end
for i = 1, 50 do
  local shape = random_shape(1, 4, 40, 3000)
  softmax[i] = { "f32", { a = random_dist(shape, "f32"), out = random_dist(shape, "f32") } }
end
for i = 1, 60 do
  local m, k, n = R(1, 40), R(1, 40), R(1, 40)
  matmul[i] = { "f32", { a = random_dist({ m, k }, "f32"), b = random_dist({ k, n }, "f32"),
                         out = random_dist({ m, n }, "f32") } }
end
declare("reduce_sum", "reduce.c", { "a" }, reduce, function() return {} end, "axes(a)")
declare("softmax", "softmax.c", { "a" }, softmax, function() return {} end)
declare("matmul", "einsum.c", { "a", "b" }, matmul, function() return {} end, nil, { "ik", "kj", "ij" })
