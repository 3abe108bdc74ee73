include "common.lua"
op { name = "x", inputs = unary_operands.inputs, outputs = unary_operands.outputs }
