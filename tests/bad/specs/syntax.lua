op { name = "syntax",
  template = "ok_unary.c",
  inputs = {
