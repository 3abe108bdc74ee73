-- Refused: T given as float for bf16 operands, which are stored as uint16_t.
include "targets.lua"
op(unary_op("adv_type_bf16", "one_type.c", { T = "float" }, "bf16"))
