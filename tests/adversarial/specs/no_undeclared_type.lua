-- Refused: T for a template that declares no element type (it hard-codes float).
include "targets.lua"
op(unary_op("adv_undeclared_type", "hardfloat_u8.c", { T = "uint8_t" }, "u8"))
