-- The consumer's own op on its own template, and one of ndgen's installed templates.
local d = { shape = { 32, 48 }, shard = { 8, 48 }, grid = "2x2" }
op {
  name = "affine", template = "affine.c", params = { A = "3.0f", B = "1.0f" },
  inputs = { { name = "x", dtype = "f32" } }, outputs = { { name = "y", dtype = "f32" } },
  targets = { { all = d } },
}
op {
  name = "square", template = "eltwise_unary.c", params = { EXPR = "((x) * (x))" },
  inputs = { { name = "x", dtype = "f32" } }, outputs = { { name = "y", dtype = "f32" } },
  targets = { { all = d } },
}
