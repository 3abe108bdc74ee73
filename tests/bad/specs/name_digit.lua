include "common.lua"
op { name = "1x", template = "ok_unary.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs }
