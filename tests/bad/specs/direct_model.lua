include "common.lua"
op { name = "direct_model", template = "direct_model.c", inputs = unary_operands.inputs,
  outputs = unary_operands.outputs, targets = { one_target } }
