op { name = "copy", template = "page_copy.c", requires = "same_paging(in, result)",
     inputs = { { name = "in", dtype = "f32" } }, outputs = { { name = "out", dtype = "f32" } } }
