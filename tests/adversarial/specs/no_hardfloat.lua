-- Refused: the template reads u8 pages through float pointers, an element type that is not the dtype's.
include "targets.lua"
op(unary_op("adv_hardfloat", "hardfloat_u8.c", nil, "u8"))
