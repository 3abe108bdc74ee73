op { name = "add", template = "eltwise_binary.c", params = { EXPR = "((x) + (y))" },
     inputs = { { name = "a", dtype = "f32" }, { name = "b", dtype = "u8" } },
     outputs = { { name = "out", dtype = "f32" } } }
