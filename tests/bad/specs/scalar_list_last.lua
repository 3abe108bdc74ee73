include "common.lua"
op { name = "x", template = "ok_unary.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs,
  scalars = "axes: axes(a), eps: f32", targets = { one_target } }
