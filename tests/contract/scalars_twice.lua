op { name = "scale", template = "eltwise_unary.c", scalars = "alpha, beta, alpha", params = { EXPR = "(x)" },
     inputs = { { name = "a", dtype = "f32" } }, outputs = { { name = "out", dtype = "f32" } } }
