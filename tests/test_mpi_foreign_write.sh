#!/usr/bin/env bash
# test_mpi_foreign_write.sh MPIRUN TEST: a kernel storing into another core's page. On one node every
# store lands; over two emulated nodes the job must end (the other node's page is not mapped here: the store faults),
# never finish with the store silently lost.
set -uo pipefail
mpirun=$1 test=$2
fail=0
out=$(NDGEN_MPI_NODE_SIZE=0 timeout 60 "$mpirun" -np 2 --oversubscribe -x NDGEN_MPI_NODE_SIZE "$test" 2>&1)
if (( $? != 0 )) || ! grep -q '1 nodes, 0 of 4 rows received' <<<"$out"; then
  echo "FAIL one node: every store should land:" >&2; echo "$out" >&2; fail=1
else
  echo "ok one node: every store landed"
fi
out=$(NDGEN_MPI_NODE_SIZE=1 timeout 60 "$mpirun" -np 2 --oversubscribe -x NDGEN_MPI_NODE_SIZE "$test" 2>&1)
rc=$?
if (( rc == 124 )); then
  echo "FAIL two nodes: the job was still running after 60 s" >&2; fail=1
elif (( rc == 0 )) || grep -q 'silently lost' <<<"$out"; then
  echo "FAIL two nodes: a store into another node's page was taken and lost (exit $rc):" >&2; echo "$out" >&2; fail=1
else
  echo "ok two nodes: the job ended with exit $rc instead of losing the store"
fi
exit $fail
