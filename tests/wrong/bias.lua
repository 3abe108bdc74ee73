-- An elementwise op with explicit index letters and no summed one, out[i][j] = a[i][j] + b[j]: three
-- operands without "...", which ndrun must not take for a contraction (no GFLOP/s, no GEMM peer).
op {
  name = "bias_add", template = "eltwise_binary.c", params = { EXPR = "((x) + (y))" }, reference = "elementwise",
  inputs = { { name = "a", dtype = "f32", index = "ij" }, { name = "b", dtype = "f32", index = "j" } },
  outputs = { { name = "out", dtype = "f32", index = "ij" } },
  targets = {},
}
