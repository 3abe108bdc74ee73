op { name = "x", template = "ok_unary.c", inputs = { { name = "a.b", dtype = "f32" } },
  outputs = { { name = "out", dtype = "f32" } } }
