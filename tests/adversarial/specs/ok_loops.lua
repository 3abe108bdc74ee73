-- Accepted templates with unusual loop shapes.
include "targets.lua"
op(unary_op("adv_continue", "loop_continue.c"))
-- a continue from a macro, and a target of one page per shard: no loop at all in its specialized nest
local macro_continue = unary_op("adv_macro_continue", "macro_continue.c")
macro_continue.targets[#macro_continue.targets + 1] =
  { all = { shape = { 64, 96 }, shard = { 32, 96 }, page = { 32, 96 }, grid = "2x1" } }
op(macro_continue)
op(unary_op("adv_inner_break", "inner_break.c"))
op(unary_op("adv_nested", "nested_iter.c"))
op(unary_op("adv_iter_in_loop", "iter_in_loop.c"))
op(unary_op("adv_while", "while_pages.c"))
op(unary_op("adv_iter_input", "iter_input.c"))
op(unary_op("adv_lines", "line_numbers.c"))
