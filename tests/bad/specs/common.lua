-- shared by the malformed specs: a valid operand list and target
unary_operands = {
  inputs = { { name = "a", dtype = "f32" } },
  outputs = { { name = "out", dtype = "f32" } },
}
one_target = { all = { shape = { 8, 8 }, shard = { 4, 8 }, grid = "2x1" } }
