include "common.lua"
op { name = "two_kernels", template = "two_kernels.c", inputs = unary_operands.inputs,
  outputs = unary_operands.outputs, targets = { one_target } }
