include "common.lua"
op { name = "unbound", template = "unbound.c", inputs = unary_operands.inputs,
  outputs = unary_operands.outputs, targets = { one_target } }
