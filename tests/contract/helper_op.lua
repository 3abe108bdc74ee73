-- included by via_include.lua: declares an op from a function, as specs' helpers do
function declare_mm(a_shape, b_shape)
  op { name = "mm", template = "einsum.c",
       inputs = { { name = "a", dtype = "f32", index = "ik" }, { name = "b", dtype = "f32", index = "kj" } },
       outputs = { { name = "out", dtype = "f32", index = "ij" } },
       targets = { { a = { shape = a_shape, interleaved = true, grid = "2x1" },
                     b = { shape = b_shape, interleaved = true, grid = "2x1" },
                     out = { shape = { 4, 8 }, interleaved = true, grid = "2x1" } } } }
end
