-- Property targets, part 1: relu (any two distributions) and add (numpy broadcasting).
include "random_dists.lua"
math.randomseed(20261121)
local R = math.random

local relu, add = {}, {}
for i = 1, 90 do
  local dtype = R(3) == 1 and "bf16" or "f32"
  local shape = random_shape(1, 5, 40, 3000)
  relu[i] = { dtype, { a = random_dist(shape, dtype), out = random_dist(shape, dtype, { l1 = R(4) > 1 }) } }
end
for i = 1, 90 do
  local dtype = R(3) == 1 and "bf16" or "f32"
  local shape = random_shape(1, 4, 24, 3000)
  local bshape = {} -- a suffix of the shape, some dims broadcast
  for k = R(1, #shape), #shape do bshape[#bshape + 1] = R(3) == 1 and 1 or shape[k] end
  add[i] = { dtype, { a = random_dist(shape, dtype), b = random_dist(bshape, dtype), out = random_dist(shape, dtype) } }
end
declare("relu", "eltwise_unary.c", { "a" }, relu,
        function() return { EXPR = "((x) > 0.0f ? (x) : 0.0f)" } end)
declare("add", "eltwise_binary.c", { "a", "b" }, add, function() return { EXPR = "((x) + (y))" } end)
