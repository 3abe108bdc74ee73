-- A deliberately wrong kernel library: 'add' that subtracts. ndrun must report that it disagrees with
-- the reference (tests/test_ndrun.sh), which shows the comparison can fail.
op {
  name = "add", template = "eltwise_binary.c", params = { T = "float", EXPR = "((x) - (y))" },
  inputs = { { name = "a", dtype = "f32", index = "..." }, { name = "b", dtype = "f32", index = "..." } },
  outputs = { { name = "out", dtype = "f32", index = "..." } },
  targets = {},
}
