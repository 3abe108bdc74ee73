include "common.lua"
op { name = "iter_misuse", template = "iter_misuse.c", inputs = unary_operands.inputs,
  outputs = unary_operands.outputs, targets = { one_target } }
