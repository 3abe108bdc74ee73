include "common.lua"
op { name = "not-an-identifier", template = "ok_unary.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs }
