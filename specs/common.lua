-- Helpers shared by the op specs: include "common.lua".

-- ndgen gives every spec two lists in its dtype table's order: `dtypes` (f32, bf16, f16, i32, u8) and
-- `floating_dtypes` (those computed as f32). It derives each template's element type NDT_T, and its
-- conversions NDT_LOAD and NDT_STORE, from the operands' dtypes.

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
