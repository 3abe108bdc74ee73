-- Refused: operands bound by a run-time index.
include "targets.lua"
op(unary_op("adv_operand_loop", "operand_loop.c"))
