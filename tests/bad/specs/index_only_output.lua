op { name = "x", template = "ok_unary.c", inputs = { { name = "a", dtype = "f32", index = "ij" } },
  outputs = { { name = "out", dtype = "f32", index = "iz" } } }
