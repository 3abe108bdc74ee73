include "common.lua"
op { name = "x", template = "nope.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs }
