op { name = "x", template = "ok_unary.c", inputs = { { name = "a", dtype = "f32", index = "i...j..." } },
  outputs = { { name = "out", dtype = "f32" } } }
