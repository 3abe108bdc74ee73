-- Refused: a bound variable rebound to another operand.
include "targets.lua"
op(binary_op("adv_rebind", "rebind.c"))
