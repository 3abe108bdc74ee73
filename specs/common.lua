-- Helpers shared by the op specs: include "common.lua".

-- The dtypes ndgen knows (ndgen derives each template's element type NDT_T, and its conversions
-- NDT_LOAD and NDT_STORE, from the operands' dtypes).
storage = { f32 = true, bf16 = true, i32 = true, u8 = true }

-- A distribution table: d({64, 64}, {shard = {16, 64}, grid = "2x2"}).
function d(shape, fields)
  local t = { shape = shape }
  for k, v in pairs(fields or {}) do t[k] = v end
  return t
end

-- The targets with every operand's distribution given this dtype (copies; the list is untouched).
function typed(targets, dtype)
  local out = {}
  for i, t in ipairs(targets) do
    out[i] = {}
    for operand, dist in pairs(t) do
      local c = {}
      for k, v in pairs(dist) do c[k] = v end
      c.dtype = dtype
      out[i][operand] = c
    end
  end
  return out
end
