-- Refused: a trigraph, which ndgen and the compiler could read differently.
include "targets.lua"
op(binary_op("adv_trigraph", "trigraph.c"))
