include "common.lua"
op { name = "x", template = "ok_unary.c", moves_data = 1, inputs = unary_operands.inputs, outputs = unary_operands.outputs }
