#!/usr/bin/env bash
# test_mpi_megatron.sh NDGEN MPIRUN NP TEST LIB8 LIB4: asks `ndgen plan` what the Megatron MLP on 4
# cores moves (docs/front-ends.md "ndgen plan", with --grid 4x1), then runs test_mpi_megatron on NP processes, which
# checks the bytes the processes read from each other against the plan's total and busiest core.
set -euo pipefail
ndgen=$1 mpirun=$2 np=$3 test=$4 lib8=$5 lib4=$6
plan=$("$ndgen" plan 'bx,xy->by' 'by,yz->bz' --in X='... -> * ...' --in W1='x y -> x y*' --in W2='y z -> y* z' \
  --shape b=8,x=128,y=256,z=64 --grid 4x1)
total=$(sed -n 's/^total: .*, \([0-9][0-9]*\) bytes moved between cores$/\1/p' <<<"$plan")
busiest=$(sed -n 's/^  collective: all_reduce; bytes moved: [0-9]* (inputs 0), at most \([0-9][0-9]*\) by one core$/\1/p' <<<"$plan")
if [[ -z $total || -z $busiest ]]; then
  echo "test_mpi_megatron.sh: could not read the plan's figures from:" >&2
  echo "$plan" >&2
  exit 1
fi
echo "ndgen plan --grid 4x1: $total bytes between cores, at most $busiest by one core"
exec "$mpirun" -np "$np" --oversubscribe "$test" "$lib8" "$lib4" "$total" "$busiest"
