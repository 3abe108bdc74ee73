-- A user's kernel library, apart from the bundled ops (tests/test_compare_kernels.sh): silu by spec
-- alone and without a reference, softplus with its reference derived from its EXPR, and a u8 op whose
-- reference is a C function of its own (and again under the name "elementwise", which is no derived reference).
local t = { { all = { shape = { 32, 64 }, shard = { 16, 64 }, grid = "2x1" } } }
op {
  name = "silu", template = "eltwise_unary.c", params = { EXPR = "((x) / (1.0f + expf(-(x))))" },
  inputs = { { name = "x", dtype = "f32", index = "..." } },
  outputs = { { name = "y", dtype = "f32", index = "..." } },
  targets = t,
}
op {
  name = "softplus", template = "eltwise_unary.c", params = { EXPR = "log1pf(expf(x))" }, reference = "elementwise",
  inputs = { { name = "x", dtype = "f32", index = "..." } },
  outputs = { { name = "y", dtype = "f32", index = "..." } },
  targets = t,
}
-- |a - b| on u8 under three references from iabsdiff_ref.c: its own function, and the same function
-- under the name "elementwise" and under a bundled reference's name (tests/test_reads_kinds.c: neither
-- name makes a user's function read less than its inputs whole).
local function iabsdiff(name, reference)
  op {
    name = name, template = "eltwise_binary.c", params = { EXPR = "((x) > (y) ? (x) - (y) : (y) - (x))" },
    reference = { source = "iabsdiff_ref.c", name = reference },
    inputs = { { name = "a", dtype = "u8", index = "..." }, { name = "b", dtype = "u8", index = "..." } },
    outputs = { { name = "out", dtype = "u8", index = "..." } },
    targets = t,
  }
end
iabsdiff("iabsdiff", "ref_iabsdiff")
iabsdiff("iabsdiff_named", "elementwise")
iabsdiff("iabsdiff_softmax_named", "ref_softmax")
