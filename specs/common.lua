-- Helpers shared by the op specs: include "common.lua".

-- ndgen gives every spec two lists in its dtype table's order: `dtypes` (f32, bf16, f16, i32, u8) and
-- `floating_dtypes` (those computed as f32), and `dtype_storage`, each one's storage C type. It derives
-- each template's element type NDT_T, and its conversions NDT_LOAD and NDT_STORE, from the operands'
-- dtypes.

-- The targets an op gets in dtype, typed: all of them, unless an earlier dtype of the table is stored
-- in the same C type and computed alike (f16 after bf16: both uint16_t, computed in f32). Its kernels
-- then run the template code that dtype's run, but for the conversions, which test_dtypes checks on
-- every value: the first and the last target cover it, and the JIT builds any other on demand.
function targets_for(dtype, targets)
  local floating = {}
  for _, f in ipairs(floating_dtypes) do floating[f] = true end
  for _, other in ipairs(dtypes) do
    if other == dtype then break end
    if dtype_storage[other] == dtype_storage[dtype] and floating[other] == floating[dtype] and #targets > 2 then
      return typed({ targets[1], targets[#targets] }, dtype)
    end
  end
  return typed(targets, dtype)
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
