include "common.lua"
op { name = "in_macro", template = "in_macro.c", inputs = unary_operands.inputs,
  outputs = unary_operands.outputs, targets = { one_target } }
