-- Helpers shared by the op specs: include "common.lua".

-- How each dtype is stored in a template's NDT_T.
storage = { f32 = "float", bf16 = "uint16_t", i32 = "int32_t", u8 = "uint8_t" }

-- Template parameters for a math dtype: bf16 is stored as uint16_t, computed in f32 and rounded to
-- nearest even on the way back. `extra` adds op parameters such as EXPR.
function math_params(dtype, extra)
  local p = { T = storage[dtype] }
  if dtype == "bf16" then p.LOAD, p.STORE = "nda_bf16_to_f32(v)", "nda_f32_to_bf16(v)" end
  for k, v in pairs(extra or {}) do p[k] = v end
  return p
end

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
