-- Refused: a header tests another header's macro in a directive.
include "targets.lua"
op(unary_op("adv_hdr_order", "hdr_order.c"))
