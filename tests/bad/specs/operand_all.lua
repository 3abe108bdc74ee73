op { name = "x", template = "ok_unary.c", inputs = { { name = "all", dtype = "f32" } },
  outputs = { { name = "out", dtype = "f32" } } }
