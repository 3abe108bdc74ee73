-- A kernel that never returns (hang.c): ndrun's watchdog stops the run and names it (tests/test_ndrun.sh).
-- Its reference is a plain copy, so the case is well formed up to the launch.
op {
  name = "hang", template = "hang.c",
  reference = { source = "copy_ref.c", name = "ref_copy_f32" },
  inputs = { { name = "a", dtype = "f32", index = "..." } },
  outputs = { { name = "out", dtype = "f32", index = "..." } },
  requires = "same_paging(a, out)",
  targets = {},
}
