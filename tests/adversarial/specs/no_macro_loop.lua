-- Refused: an nda_iter loop header written by a macro.
include "targets.lua"
op(unary_op("adv_macro_loop", "macro_loop.c"))
