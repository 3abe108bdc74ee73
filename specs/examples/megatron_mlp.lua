-- megatron_mlp(cores): the ops of the two-layer MLP of the einshard tutorial, Megatron style, with
-- their targets on `cores` cores in a row (specs/examples/megatron.lua: 8; tests/mpi/megatron4.lua: 4,
-- one per MPI process). See megatron.lua for what each step does and moves.
function megatron_mlp(cores)
  local B, X, Y, Z = 8, 128, 256, 64
  local function on(shape, notation, text, mesh)
    return { shape = shape, grid = cores .. "x1", [notation] = text, mesh = mesh }
  end

  local x_rep = on({ B, X }, "einshard", "... -> * ...")
  local w1 = on({ X, Y }, "einshard", "x y -> x y*")
  local y_split = on({ B, Y }, "einshard", "b y -> b y*")
  local w2 = on({ Y, Z }, "einshard", "y z -> y* z")
  local z_partial = on({ B, Z }, "placements", "[Partial(sum)]", tostring(cores))
  local z_rep = on({ B, Z }, "einshard", "... -> * ...")

  op {
    name = "matmul", template = "matmul.c", params = {},
    reference = { source = "reference/einsum.c", name = "ref_einsum" },
    inputs = { { name = "a", dtype = "f32", index = "ik" }, { name = "b", dtype = "f32", index = "kj" } },
    outputs = { { name = "out", dtype = "f32", index = "ij", partial = true } },
    targets = { { a = x_rep, b = w1, out = y_split }, { a = y_split, b = w2, out = z_partial } },
  }

  op {
    name = "relu", template = "eltwise_unary.c", params = { EXPR = "((x) > 0.0f ? (x) : 0.0f)" },
    reference = "elementwise",
    inputs = { { name = "a", dtype = "f32" } },
    outputs = { { name = "out", dtype = "f32" } },
    targets = { { all = y_split } },
  }

  op {
    name = "all_reduce", template = "all_reduce.c", params = {},
    inputs = { { name = "in", dtype = "f32", partial = true } },
    outputs = { { name = "out", dtype = "f32" } },
    targets = { { ["in"] = z_partial, out = z_rep } },
  }
end
