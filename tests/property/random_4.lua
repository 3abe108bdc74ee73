-- Property targets, part 4: every op of the library at sizes that cross every template's internal
-- blocks: output rows longer than reduce.c's and einsum.c's 256-element chunks, matmul.c's 8-row and
-- 32-column panels (evenly and not) and its 256-long steps of k, softmax rows spanning pages and cores.
include "random_dists.lua"
math.randomseed(20261124)
local R = math.random
local W = random_any_dist

local function dtype() return R(3) == 1 and "bf16" or "f32" end
-- rank 1 to 3, the last dim past 256 most of the time
local function wide_shape(max_elems)
  local s = {}
  for i = 1, R(1, 3) - 1 do s[i] = R(1, 6) end
  s[#s + 1] = R(4) == 1 and R(1, 256) or R(257, 900)
  local n = 1
  for _, v in ipairs(s) do n = n * v end
  while n > max_elems do s[1] = (s[1] + 1) // 2; n = 1; for _, v in ipairs(s) do n = n * v end end
  return s
end

local unary = {
  gelu = "(0.5f * (x) * (1.0f + erff((x) * 0.70710678f)))", exp = "expf(x)", log = "logf(x)", sqrt = "sqrtf(x)",
  neg = "(-(x))", abs = "fabsf(x)", sigmoid = "(1.0f / (1.0f + expf(-(x))))", tanh = "tanhf(x)",
  relu = "((x) > 0.0f ? (x) : 0.0f)",
}
local binary = { add = "((x) + (y))", sub = "((x) - (y))", mul = "((x) * (y))", div = "((x) / (y))",
                 max = "fmaxf(x, y)", min = "fminf(x, y)" }
local ternary = { mul_add = "((x) * (y) + (z))", lerp = "((x) + ((y) - (x)) * (z))", clamp = "fminf(fmaxf(x, y), z)" }

local function names(t) local n = {} for k in pairs(t) do n[#n + 1] = k end table.sort(n) return n end

for _, name in ipairs(names(unary)) do
  local list = {}
  for i = 1, 3 do
    local dt, shape = dtype(), wide_shape(6000)
    list[i] = { dt, { a = W(shape, dt), out = W(shape, dt) } }
  end
  declare(name, "eltwise_unary.c", { "a" }, list, function() return { EXPR = unary[name] } end)
end
local function suffix(shape) -- a suffix of the shape, some dims broadcast
  local s = {}
  for k = R(1, #shape), #shape do s[#s + 1] = R(3) == 1 and 1 or shape[k] end
  return s
end
for _, name in ipairs(names(binary)) do
  local list = {}
  for i = 1, 3 do
    local dt, shape = dtype(), wide_shape(6000)
    list[i] = { dt, { a = W(shape, dt), b = W(suffix(shape), dt), out = W(shape, dt) } }
  end
  declare(name, "eltwise_binary.c", { "a", "b" }, list, function() return { EXPR = binary[name] } end)
end
for _, name in ipairs(names(ternary)) do
  local list = {}
  for i = 1, 2 do
    local dt, shape = dtype(), wide_shape(6000)
    list[i] = { dt, { a = W(shape, dt), b = W(suffix(shape), dt), c = W(suffix(shape), dt), out = W(shape, dt) } }
  end
  declare(name, "eltwise_ternary.c", { "a", "b", "c" }, list, function() return { EXPR = ternary[name] } end)
end

-- Reductions over random axis sets (every axis sometimes), keepdims or not.
local reductions = {
  reduce_sum = { INIT = "0.0f", ACC = "((acc) + (x))", FINISH = "(acc)" },
  reduce_max = { INIT = "(-INFINITY)", ACC = "fmaxf(acc, x)", FINISH = "(acc)" },
  reduce_mean = { INIT = "0.0f", ACC = "((acc) + (x))", FINISH = "((acc) / (float)(n))" },
}
for _, name in ipairs(names(reductions)) do
  local list = {}
  for i = 1, 6 do
    local dt, shape = dtype(), wide_shape(8000)
    local keep, out, any = R(2) == 1 or #shape == 1, {}, false
    local all = R(5) == 1
    for k = 1, #shape do
      local reduced = all or R(2) == 1 or (k == #shape and not any)
      if k == #shape and i % 2 == 0 and not all and #shape > 1 then reduced = false end -- keep the long rows
      any = any or reduced
      if reduced and keep then out[#out + 1] = 1 elseif not reduced then out[#out + 1] = shape[k] end
    end
    if not any then out = {} for k = 1, #shape do out[k] = shape[k] end out[1] = 1 keep = true end
    if #out == 0 then for k = 1, #shape do out[k] = 1 end end -- everything reduced: keepdims
    list[i] = { dt, { a = W(shape, dt), out = W(out, dt) } }
  end
  declare(name, "reduce.c", { "a" }, list, function() return reductions[name] end, "axes(a)")
end

local sm = {}
for i = 1, 5 do
  local dt, shape = dtype(), wide_shape(6000)
  sm[i] = { dt, { a = W(shape, dt), out = W(shape, dt) } }
end
declare("softmax", "softmax.c", { "a" }, sm, function() return {} end)

-- matmul.c: m across 8-row panels, n across 32-column panels, k across 256-long steps.
local mm = {}
for i = 1, 6 do
  local m, k, n = R(1, 40), R(4) == 1 and R(1, 64) or R(257, 600), R(1, 100)
  local dt = dtype()
  mm[i] = { dt, { a = W({ m, k }, dt), b = W({ k, n }, dt), out = W({ m, n }, dt) } }
end
declare("matmul", "matmul.c", { "a", "b" }, mm, function() return {} end, nil, { "ik", "kj", "ij" })

-- einsum.c: output rows past its 256-element chunk.
local bmm, scores, matvec = {}, {}, {}
for i = 1, 3 do
  local b, m, k, n, dt = R(1, 3), R(1, 6), R(1, 40), R(200, 400), dtype()
  bmm[i] = { dt, { a = W({ b, m, k }, dt), b = W({ b, k, n }, dt), out = W({ b, m, n }, dt) } }
  local h, q, kk, d = R(1, 2), R(1, 4), R(200, 330), R(1, 24)
  scores[i] = { dt, { a = W({ b, h, q, d }, dt), b = W({ b, h, kk, d }, dt), out = W({ b, h, q, kk }, dt) } }
  local rows, cols = R(1, 300), R(257, 700)
  matvec[i] = { dt, { a = W({ rows, cols }, dt), b = W({ cols }, dt), out = W({ rows }, dt) } }
end
declare("bmm", "einsum.c", { "a", "b" }, bmm, function() return {} end, nil,
        { "bik", "bkj", "bij" })
declare("scores", "einsum.c", { "a", "b" }, scores, function() return {} end,
        nil, { "bhqd", "bhkd", "bhqk" })
declare("matvec", "einsum.c", { "a", "b" }, matvec, function() return {} end, nil,
        { "ij", "j", "i" })

-- Permutes and reshards of wide rows, every data-movement dtype.
local dtypes = { "f32", "bf16", "i32", "u8" }
local perm, resh = {}, {}
for i = 1, 6 do
  local dt = dtypes[R(4)]
  local shape = { R(1, 40), R(2, 40), R(1, 4) == 1 and R(257, 600) or R(2, 40) }
  if R(3) == 1 then shape = { R(17, 300), R(17, 300) } end
  local p, out = {}, {}
  for k = 1, #shape do p[k] = k end
  for k = #p, 2, -1 do local j = R(k); p[k], p[j] = p[j], p[k] end
  for k = 1, #shape do out[k] = shape[p[k]] end
  local n = 1
  for _, v in ipairs(shape) do n = n * v end
  if n <= 40000 then perm[#perm + 1] = { dt, { a = W(shape, dt), out = W(out, dt) } } end
  local rs = wide_shape(6000)
  resh[i] = { dt, { a = W(rs, dt), out = W(rs, dt) } }
end
declare("permute", "permute.c", { "a" }, perm, function() return {} end, "perm(a)")
declare("reshard", "eltwise_unary.c", { "a" }, resh, function() return { EXPR = "(x)", LOAD = "(v)", STORE = "(v)" } end)
