include "common.lua"
op { name = "undeclared_call", template = "undeclared_call.c", inputs = unary_operands.inputs,
  outputs = unary_operands.outputs, targets = { one_target } }
