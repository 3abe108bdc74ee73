-- Accepted templates whose bindings and tensor arguments are chosen by parameters or #if.
include "targets.lua"
op(binary_op("adv_pick_a", "param_binding.c", { FIRST = "0" }))
op(binary_op("adv_pick_b", "param_binding.c", { FIRST = "1" }))
op(binary_op("adv_src_a", "param_tensor.c", { SRC = "a" }))
op(binary_op("adv_src_b", "param_tensor.c", { SRC = "b" }))
op(binary_op("adv_branch0", "if_branch.c", { MODE = "0" }))
op(binary_op("adv_branch1", "if_branch.c", { MODE = "1" }))
op(binary_op("adv_shadow", "shadow_bound.c"))
op(unary_op("adv_core_alias", "core_alias.c"))
