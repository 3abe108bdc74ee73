include "common.lua"
op { name = "x", template = "ok_unary.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs,
  scalars = "n: i32", targets = { { all = one_target.all, scalars = { n = "3" } } } }
