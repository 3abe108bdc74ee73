-- Accepted templates whose names collide with the generated code's, and headers using parameters.
include "targets.lua"
op(unary_op("adv_statics", "collide_statics.c"))
op(unary_op("adv_typedef", "typedef_macro.c"))
op(unary_op("adv_scale2", "hdr_macro_param.c", { SCALE = "2" }))
op(unary_op("adv_scale5", "hdr_macro_param.c", { SCALE = "5" }))
