op { name = "x", template = "ok_unary.c", inputs = { { name = string.rep("a", 65), dtype = "f32" } },
  outputs = { { name = "out", dtype = "f32" } } }
