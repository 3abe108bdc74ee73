include "common.lua"
op { name = "x", template = "ok_unary.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs,
  targets = { { all = one_target.all, scalars = { eps = 1 } } } }
