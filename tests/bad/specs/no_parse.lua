include "common.lua"
op { name = "no_parse", template = "no_parse.c", inputs = unary_operands.inputs,
  outputs = unary_operands.outputs, targets = { one_target } }
