op { name = "x", template = "ok_unary.c", inputs = { { name = "a", dtype = "f32", index = "iji" } },
  outputs = { { name = "out", dtype = "f32", index = "ij" } } }
