-- Refused: an alias of a bound variable.
include "targets.lua"
op(unary_op("adv_alias", "alias.c"))
