#!/usr/bin/env bash
# test_partial_sets.sh NDGEN TEMPLATES - a target's `fixed` (docs/partial.md): each way of naming an offered
# set generates; every other set is refused with one line giving the parameter it would leave to run time
# and why; ndgen generate --fixed is checked likewise.
TOOL=$1
templates=$2
. "$(dirname "$0")/cli.sh"

# spec FIXED: a spec whose one target fixes FIXED (a Lua string literal)
spec() {
  cat >"$tmp/s.lua" <<LUA
local d = { shape = { 64, 64 }, shard = { 32, 64 }, grid = "2x1" }
op {
  name = "relu",
  template = "eltwise_unary.c",
  inputs = { { name = "a", dtype = "f32", index = "ij" } },
  outputs = { { name = "out", dtype = "f32", index = "ij" } },
  targets = { { all = d, fixed = $1 } },
}
LUA
}

# accepted FIXED SET: generated, and the registry entry says SET
accepted() {
  spec "$1"
  if ! $TOOL generate --templates "$templates" --output "$tmp/ok.c" "$tmp/s.lua" 2>"$tmp/err"; then
    bad "fixed = $1: $(cat "$tmp/err")"; return
  fi
  if grep -q "\"$2\", ndk_patterns_0_0" "$tmp/ok.c" || { [ "$2" = all ] && grep -q '"all", NULL, NULL,' "$tmp/ok.c"; }; then
    ok
  else
    bad "fixed = $1: the registry entry does not say \"$2\""
  fi
}

accepted '"all"' all
accepted '"pattern"' pattern
accepted '"shard"' shard
accepted '"all but shape"' pattern
accepted '"all but shape, grid"' shard
accepted '"all but shape and cores"' shard
accepted '"rank, dtype, page, shard, grid, strategy, memory, copies"' pattern
accepted '"rank,dtype,tile,shard,strategy,buffer,replicas"' shard

# rejected FIXED PATTERN: refused, the message matching PATTERN (extended regex)
rejected() {
  spec "$1"
  refused "generate --templates '$templates' '$tmp/s.lua'" 1 "$2" -E
}

rejected '"shape,grid"' 's\.lua:[0-9]+: .*fixed = "shape,grid": refused: it leaves the rank to run time, and the loop nest'
rejected '"all but rank"' 'refused: it leaves the rank to run time'
rejected '"all but shape, page"' 'refused: it leaves the page to run time, and the page box gives the page size'
rejected '"all but shape,shard"' 'refused: it leaves the shard to run time, and the shard extents are the loops'
rejected '"all but dtype"' 'refused: it leaves the dtype to run time, and an op.s kernels are generated per dtype'
rejected '"all but strategy"' 'refused: it leaves the strategy to run time, and round-robin and contiguous'
rejected '"all but memory"' 'refused: it leaves the memory to run time, and L1 and DRAM differ'
rejected '"all but copies"' 'refused: it leaves the copies to run time, and which copy a core reads'
rejected '"all but grid"' 'refused: it leaves only the grid to run time, .*give "shard"'
rejected '"all but orientation"' 'refused: it leaves only the grid to run time'
rejected '"everything"' "'everything' is not a distribution parameter"
rejected '"all but size"' "'size' is not a distribution parameter"
rejected '3' "field 'fixed' must be a string naming a set of parameters, not a number"

# ndgen generate --fixed: a set for the one --target kernel, refused alone or unknown
sig='f32 shape=64,64 page=1,64 shard=32,64 cores=(0,0)-(1,0) row_major round_robin l1'
spec '"all"'
refused "generate --templates '$templates' --fixed pattern '$tmp/s.lua'" 1 "--fixed pattern: needs --target"
refused "generate --templates '$templates' --op relu --target '$sig' --target '$sig' --fixed 'all but rank' '$tmp/s.lua'" 2 \
  "ndgen generate: --fixed: fixed = \"all but rank\": refused: it leaves the rank"
if $TOOL generate --templates "$templates" --op relu --target "$sig" --target "$sig" --fixed shard --output "$tmp/j.c" \
     "$tmp/s.lua" && grep -q '"shard", ndk_patterns_0_0' "$tmp/j.c" && grep -q 'cores=\* \* round_robin' "$tmp/j.c"; then
  ok
else
  bad "ndgen generate --op relu --target .. --fixed shard: no shard kernel"
fi
finish
