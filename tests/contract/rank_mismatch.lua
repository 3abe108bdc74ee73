op { name = "mm", template = "einsum.c",
     inputs = { { name = "a", dtype = "f32", index = "ik" }, { name = "b", dtype = "f32", index = "kj" } },
     outputs = { { name = "out", dtype = "f32", index = "ij" } },
     targets = { { a = { shape = { 4, 6 }, interleaved = true, grid = "2x1" }, b = { shape = { 6 }, interleaved = true, grid = "2x1" }, out = { shape = { 4, 8 }, interleaved = true, grid = "2x1" } } } }
