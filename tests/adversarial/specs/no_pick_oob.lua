-- Refused: a parameter binds an operand the op does not have.
include "targets.lua"
op(binary_op("adv_pick_oob", "param_binding.c", { FIRST = "5" }))
