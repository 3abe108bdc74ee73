op { name = "x", template = "ok_unary.c", inputs = { { name = "a", dtype = "f64" } },
  outputs = { { name = "out", dtype = "f32" } } }
