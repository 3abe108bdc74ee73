include "common.lua"
op { name = "x", template = "ok_unary.c",
  inputs = "a", outputs = unary_operands.outputs }
