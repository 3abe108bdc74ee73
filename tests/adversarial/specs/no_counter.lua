-- Refused: __COUNTER__ in the template.
include "targets.lua"
op(unary_op("adv_counter", "counter.c"))
