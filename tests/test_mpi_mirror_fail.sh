#!/usr/bin/env bash
# test_mpi_mirror_fail.sh MPIRUN TEST: the mirror of other nodes' memory cannot be reserved on one
# process alone; every process's nd_device_open_mpi must fail with a message within a bounded time.
set -uo pipefail
mpirun=$1 test=$2
out=$(NDGEN_MPI_NODE_SIZE=2 timeout 60 "$mpirun" -np 3 --oversubscribe -x NDGEN_MPI_NODE_SIZE "$test" 2>&1)
rc=$?
if (( rc == 124 )); then
  echo "FAIL: the job was still running after 60 s (a process waits in a collective call the failed one skipped)" >&2
  exit 1
fi
if (( rc != 0 )) || (( $(grep -c 'open failed' <<<"$out") != 3 )) || ! grep -q 'mirror' <<<"$out"; then
  echo "FAIL: exit $rc; want every process's open to fail, process 2 naming the mirror:" >&2; echo "$out" >&2; exit 1
fi
echo "ok: every process's open failed:"; echo "$out"
