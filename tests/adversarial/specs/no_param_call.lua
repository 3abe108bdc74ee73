-- Refused: a parameter's text calls an accessor function.
include "targets.lua"
op(unary_op("adv_param_call", "param_static.c", { EXPR = "(x) + (float)nda_rank(a)" }))
