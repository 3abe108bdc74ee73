op { name = "copy", template = "page_copy.c", requires = "same_paging(in, out)",
     inputs = { { name = "in", dtype = "f32" } }, outputs = { { name = "out", dtype = "f32" } },
     targets = {
       { all = { shape = { 64, 64 }, shard = { 32, 64 }, grid = "2x1" } },
       { ["in"] = { shape = { 64, 64 }, shard = { 64, 64 }, tile = "32x32", grid = "1x1" }, out = { shape = { 64, 64 }, shard = { 64, 64 }, grid = "1x1" } },
     } }
