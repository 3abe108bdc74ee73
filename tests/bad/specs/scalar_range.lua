include "common.lua"
op { name = "x", template = "ok_unary.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs,
  scalars = "eps: f32 in (1, 0)", targets = { one_target } }
