-- Refused: the kernel's args read other than through nda_operand and the scalars.
include "targets.lua"
op(unary_op("adv_args", "args_misuse.c"))
