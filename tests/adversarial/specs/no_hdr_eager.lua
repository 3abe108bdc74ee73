-- Refused: a header reads a parameter outside a macro body.
include "targets.lua"
op(unary_op("adv_hdr_eager", "hdr_eager_param.c", { SCALE = "2" }))
