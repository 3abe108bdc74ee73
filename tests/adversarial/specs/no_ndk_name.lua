-- Refused: a variable named like the generated code's names.
include "targets.lua"
op(unary_op("adv_ndk_name", "ndk_name.c"))
