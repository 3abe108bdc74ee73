op { name = "add", template = "eltwise_binary.c", params = { EXPR = "((x) + (y))" },
     inputs = { { name = "a", dtype = "f32" }, { name = "b", dtype = "f32" } },
     outputs = { { name = "out", dtype = "f32" } },
     targets = { { a = { shape = { 4, 6 }, interleaved = true, grid = "2x1" }, b = { shape = { 4, 6 }, interleaved = true, grid = "2x1" }, out = { shape = { 4, 7 }, interleaved = true, grid = "2x1" } } } }
