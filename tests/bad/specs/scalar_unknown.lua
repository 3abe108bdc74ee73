include "common.lua"
op { name = "x", template = "scalar_unknown.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs,
  scalars = "eps: f32", targets = { one_target } }
