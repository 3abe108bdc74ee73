-- Refused: operands of two dtypes for a template with one element type NDT_T.
include "targets.lua"
op(unary_op("adv_type_mixed", "one_type.c", nil, "u8", "f32"))
