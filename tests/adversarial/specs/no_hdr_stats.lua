-- Refused: a header defines the macro owner_of, a name generated code uses.
include "targets.lua"
op(unary_op("adv_hdr_stats", "hdr_macro_stats.c"))
