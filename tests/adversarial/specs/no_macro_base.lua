-- Refused: the template defines the macro base, a name generated code uses.
include "targets.lua"
op(unary_op("adv_macro_base", "macro_base.c"))
