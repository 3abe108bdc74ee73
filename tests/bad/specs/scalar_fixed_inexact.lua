include "common.lua"
op { name = "x", template = "ok_unary.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs,
  scalars = "n: i64", targets = { { all = one_target.all, scalars = { n = 9007199254740993 } } } }
