-- softplus(x) = log(1 + exp(x)), written only as a spec: the elementwise template does the rest.
op {
  name = "softplus",
  template = "eltwise_unary.c",
  params = { EXPR = "log1pf(expf(x))" },
  inputs = { { name = "x", dtype = "f32", index = "..." } },
  outputs = { { name = "y", dtype = "f32", index = "..." } },
  targets = { { all = { shape = { 64, 64 }, shard = { 16, 64 }, grid = "2x2" } } },
}
