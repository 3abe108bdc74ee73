include "common.lua"
op { name = "x", template = "ok_unary.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs,
  scalars = "eps: f32 > 0", targets = { { all = one_target.all, scalars = { epsilon = 1 } } } }
