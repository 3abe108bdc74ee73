op { name = "x", template = "ok_unary.c", inputs = { { name = "a", dtype = "f32" } },
  outputs = { { name = "a", dtype = "f32" } } }
