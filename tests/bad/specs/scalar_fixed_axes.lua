include "common.lua"
op { name = "x", template = "ok_unary.c", scalars = "axes(a)",
  inputs = { { name = "a", dtype = "f32", index = "..." } }, outputs = { { name = "out", dtype = "f32", index = "..." } },
  targets = { { a = { shape = { 8, 8 }, shard = { 4, 8 }, grid = "2x1" }, out = { shape = { 8 }, shard = { 4 }, grid = "2x1" },
                scalars = { axes = { 0, 0 } } } } }
