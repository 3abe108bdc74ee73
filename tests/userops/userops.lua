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
-- Contractions whose spec gives its own conversion (scaled_ref.c): every element goes through it, also
-- where the tile would store an f32 output itself or a row would be read in place (ndgen sets
-- NDT_STORE_PLAIN or NDT_LOAD_PLAIN to 0 for them). Shapes with panels the tile stores (columns past 32,
-- one step of k).
local function contraction(name, template, ix, conv, reference, dims)
  op {
    name = name, template = template, params = conv, reference = { source = "scaled_ref.c", name = reference },
    inputs = { { name = "a", dtype = "f32", index = ix[1] }, { name = "b", dtype = "f32", index = ix[2] } },
    outputs = { { name = "out", dtype = "f32", index = ix[3] } },
    targets = { { a = { shape = dims[1], shard = dims[1], grid = "1x1" }, b = { shape = dims[2], shard = dims[2], grid = "1x1" },
                  out = { shape = dims[3], shard = dims[3], grid = "1x1" } } },
  }
end
contraction("matmul_x2", "matmul.c", { "ik", "kj", "ij" }, { STORE = "((v) * 2.0f)" }, "ref_matmul_x2",
  { { 64, 48 }, { 48, 96 }, { 64, 96 } })
contraction("scores_x2", "einsum.c", { "bhqd", "bhkd", "bhqk" }, { STORE = "((v) * 2.0f)" }, "ref_scores_x2",
  { { 1, 2, 40, 64 }, { 1, 2, 100, 64 }, { 1, 2, 40, 100 } })
contraction("matvec_x4", "einsum.c", { "ij", "j", "i" }, { LOAD = "((v) * 2.0f)" }, "ref_matvec_x4",
  { { 40, 70 }, { 70 }, { 40 } })
-- a contraction over k into a Partial output, through the bundled einsum.c: with more parts than k has
-- values, a part's chunk of the sum is empty (its copy is all zeros); einsum.c packed past its buffer
-- then (test_compare_kernels runs k = 1 over 2 parts and k = 3 over 4)
op {
  name = "kt_partial", template = "einsum.c", reference = { source = "scaled_ref.c", name = "ref_kt" },
  inputs = { { name = "a", dtype = "f32", index = "ki" }, { name = "b", dtype = "f32", index = "kj" } },
  outputs = { { name = "out", dtype = "f32", index = "ij", partial = true } },
  targets = { { a = { shape = { 3, 8 }, shard = { 3, 8 }, grid = "1x1" }, b = { shape = { 3, 8 }, shard = { 3, 8 }, grid = "1x1" },
                out = { shape = { 8, 8 }, grid = "4x1", placements = "[Partial(sum)]", mesh = "4" } } },
}
-- part 0 of a Partial input through a user's template named as the bundled all_reduce.c (its own, in
-- templates/ here: test_reads_kinds checks that the name makes it read nothing less than whole)
op {
  name = "first_part", template = "all_reduce.c",
  inputs = { { name = "in", dtype = "f32", index = "...", partial = { "sum" } } },
  outputs = { { name = "out", dtype = "f32", index = "..." } },
  targets = { { ["in"] = { shape = { 8, 64 }, grid = "8x1", placements = "[Partial(sum)]", mesh = "8" },
                out = { shape = { 8, 64 }, grid = "8x1", einshard = "... -> * ..." } } },
}
