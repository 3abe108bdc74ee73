-- The Megatron MLP of specs/examples/megatron.lua on 4 cores in a row, one per MPI process
-- (tests/test_mpi_megatron.c): the bytes read across processes must be what `ndgen plan` predicts.
include "common.lua"
include "examples/megatron_mlp.lua"

megatron_mlp(4)
