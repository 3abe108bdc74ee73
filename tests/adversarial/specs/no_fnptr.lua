-- Refused: a pointer to an accessor function.
include "targets.lua"
op(unary_op("adv_fnptr", "fnptr.c"))
