include "common.lua"
op { name = "x", template = "ok_unary.c", inputs = unary_operands.inputs, outputs = unary_operands.outputs,
  targets = { { all = { shape = { 8, 8 }, shard = { 0, 8 }, grid = "2x1" } } } }
