#!/usr/bin/env bash
# test_mpi_fault.sh MPIRUN TEST: a killed process and a hanging process each end the whole job within a
# bounded time (60 s here; the fence gives up after 3 s), with a message, never a hang.
set -uo pipefail
mpirun=$1 test=$2
fail=0
for mode in kill hang; do
  start=$(date +%s)
  out=$(timeout 60 "$mpirun" -np 2 --oversubscribe "$test" "$mode" 2>&1)
  rc=$?
  took=$(( $(date +%s) - start ))
  case $mode in
    kill) want='exited on signal 9|killed|Killed' ;;
    hang) want='a fence waited 3 s for the other processes \(one has died or hangs, or reached this call that much later: raise .*NDGEN_MPI_FENCE_TIMEOUT.*\); ending the job' ;;
  esac
  if (( rc == 124 )); then
    echo "FAIL $mode: the job was still running after 60 s" >&2; fail=1
  elif (( rc == 0 )); then
    echo "FAIL $mode: the job succeeded; a launch finished without a process" >&2; echo "$out" >&2; fail=1
  elif ! grep -Eq "$want" <<<"$out"; then
    echo "FAIL $mode: exit $rc after $took s, but no message matching '$want':" >&2; echo "$out" >&2; fail=1
  elif grep -q 'finished a launch' <<<"$out"; then
    echo "FAIL $mode: a launch finished without every process" >&2; fail=1
  else
    echo "ok $mode: the job ended in $took s with exit $rc: $(grep -Eo "$want" <<<"$out" | head -1)"
  fi
done
exit $fail
