include "common.lua"
op { name = "x\0y", template = "ok_unary.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs }
