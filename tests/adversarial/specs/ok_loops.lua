-- Accepted templates with unusual loop shapes.
include "targets.lua"
op(unary_op("adv_continue", "loop_continue.c"))
op(unary_op("adv_inner_break", "inner_break.c"))
op(unary_op("adv_nested", "nested_iter.c"))
op(unary_op("adv_iter_in_loop", "iter_in_loop.c"))
op(unary_op("adv_while", "while_pages.c"))
op(unary_op("adv_iter_input", "iter_input.c"))
op(unary_op("adv_lines", "line_numbers.c"))
