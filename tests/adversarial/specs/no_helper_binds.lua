-- Refused: a static helper binding an operand.
include "targets.lua"
op(unary_op("adv_helper_binds", "helper_binds.c"))
