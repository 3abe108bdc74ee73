include "common.lua"
op { name = "x", template = "ok_unary.c",
  inputs = { { name = "a", dtype = "f32" }, { name = "b", dtype = "f32" } }, outputs = unary_operands.outputs }
