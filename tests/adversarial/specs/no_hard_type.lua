-- Refused: NDT_T defined without #ifndef, for u8 operands.
include "targets.lua"
op(unary_op("adv_hard_type", "hard_type.c", nil, "u8"))
