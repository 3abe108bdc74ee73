-- Refused: the address of a bound variable.
include "targets.lua"
op(unary_op("adv_addr_of", "addr_of.c"))
