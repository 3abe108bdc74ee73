-- Refused: an accessor call in a static helper, on its parameter.
include "targets.lua"
op(unary_op("adv_helper_accessor", "helper_accessor.c"))
