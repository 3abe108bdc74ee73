-- Refused: goto inside an nda_iter loop.
include "targets.lua"
op(unary_op("adv_loop_goto", "loop_goto.c"))
