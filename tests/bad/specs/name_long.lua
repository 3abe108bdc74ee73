include "common.lua"
op { name = string.rep("x", 65), template = "ok_unary.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs }
