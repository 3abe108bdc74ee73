-- Refused: a bound variable passed to a helper of the template's.
include "targets.lua"
op(unary_op("adv_pass_bound", "pass_bound.c"))
