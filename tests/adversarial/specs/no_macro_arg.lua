-- Refused: an accessor call as a macro argument.
include "targets.lua"
op(unary_op("adv_macro_arg", "macro_arg.c"))
