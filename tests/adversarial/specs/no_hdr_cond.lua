-- Refused: the template defines ADV_FAST (when FAST) before including a header that tests it.
include "targets.lua"
op(unary_op("adv_cond_fast", "hdr_cond.c", { FAST = "1" }))
op(unary_op("adv_cond_slow", "hdr_cond.c", { FAST = "0" }))
