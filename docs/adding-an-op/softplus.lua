-- softplus(x) = log(1 + exp(x)), written only as a spec: the elementwise template does the rest.
op {
  name = "softplus",
  template = "eltwise_unary.c",
  params = { EXPR = "log1pf(expf(x))" },
  inputs = { { name = "x", dtype = "f32", index = "..." } },
  outputs = { { name = "y", dtype = "f32", index = "..." } },
  targets = { { all = { shape = { 64, 64 }, shard = { 16, 64 }, grid = "2x2" } } },
}

-- silu(x) = x * sigmoid(x), with a plain reference derived from the same EXPR, so nothing is written twice.
op {
  name = "silu",
  template = "eltwise_unary.c",
  params = { EXPR = "((x) / (1.0f + expf(-(x))))" },
  reference = "elementwise",
  inputs = { { name = "x", dtype = "f32", index = "..." } },
  outputs = { { name = "y", dtype = "f32", index = "..." } },
  targets = { { all = { shape = { 64, 64 }, shard = { 16, 64 }, grid = "2x2" } } },
}

-- square(x) = x * x for every dtype: ndgen derives the element type (NDT_T) and its conversions
-- (bf16 is computed in f32) from each operand's dtype, so the spec sets none.
for _, dtype in ipairs({ "f32", "bf16", "i32", "u8" }) do
  op {
    name = "square",
    template = "eltwise_unary.c",
    params = { EXPR = "((x) * (x))" },
    reference = "elementwise",
    inputs = { { name = "x", dtype = dtype, index = "..." } },
    outputs = { { name = "y", dtype = dtype, index = "..." } },
    targets = { { all = { shape = { 64, 64 }, shard = { 16, 64 }, grid = "2x2" } } },
  }
end
