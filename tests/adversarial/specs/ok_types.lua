-- Accepted templates and element types: derived per operand, one for all, or none declared.
include "targets.lua"
op(unary_op("adv_mixed", "mixed_types.c", nil, "u8", "f32"))
op(unary_op("adv_mixed", "mixed_types.c", nil, "bf16", "f32"))
op(unary_op("adv_mixed", "mixed_types.c", nil, "f32", "bf16"))
op(unary_op("adv_mixed", "mixed_types.c", nil, "i32", "f32"))
op(unary_op("adv_mixed", "mixed_types.c", nil, "f32", "i32"))
op(unary_op("adv_one_type", "one_type.c", nil, "bf16"))
op(unary_op("adv_one_type", "one_type.c", nil, "i32"))
