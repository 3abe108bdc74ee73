-- Refused: a macro body names a static that a local hides where it expands.
include "targets.lua"
op(unary_op("adv_macro_shadow", "macro_shadow.c"))
