-- Refused: a parameter's text names a static of the template.
include "targets.lua"
op(unary_op("adv_param_static", "param_static.c", { EXPR = "(x) * scale" }))
