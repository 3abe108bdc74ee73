-- A deliberately wrong kernel library: 'add' that subtracts. ndrun must report that it disagrees with
-- the reference (tests/test_ndrun.sh), which shows the comparison can fail. Its reference is the
-- right add, written apart (a reference derived from this EXPR would be as wrong as the kernel).
op {
  name = "add", template = "eltwise_binary.c", params = { T = "float", EXPR = "((x) - (y))" },
  reference = { source = "add_ref.c", name = "ref_add" },
  inputs = { { name = "a", dtype = "f32", index = "..." }, { name = "b", dtype = "f32", index = "..." } },
  outputs = { { name = "out", dtype = "f32", index = "..." } },
  targets = {},
}
