-- Refused: bound tensors swapped through a temporary.
include "targets.lua"
op(binary_op("adv_swap", "swap_tmp.c"))
