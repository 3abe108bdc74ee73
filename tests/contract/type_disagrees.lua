op { name = "relu", template = "eltwise_unary.c", params = { T = "float", EXPR = "(x)" },
     inputs = { { name = "a", dtype = "bf16" } }, outputs = { { name = "out", dtype = "bf16" } } }
