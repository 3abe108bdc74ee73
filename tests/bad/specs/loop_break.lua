include "common.lua"
op { name = "loop_break", template = "loop_break.c", inputs = unary_operands.inputs,
  outputs = unary_operands.outputs, targets = { one_target } }
