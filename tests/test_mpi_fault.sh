#!/usr/bin/env bash
# test_mpi_fault.sh MPIRUN TEST [NP [MPIRUN ARGS...]]: a process that dies, hangs, stops, or makes other device calls than
# the others (one more, on another shape, on tensors allocated in another order, with another scalar,
# in a launch that skips its fences, or that is ordered in pairs)
# ends the whole job within a bounded time (60 s here; the fence gives up after 2 s) with a message
# naming it, and no call finishes.
set -uo pipefail
mpirun=$1 test=$2 np=${3:-2}
shift $(( $# < 3 ? $# : 3 ))
last=$((np - 1))
fail=0
absent="a fence waited 2 s for the other processes \(one has died or hangs, or reached this call that much later: raise .*NDGEN_MPI_FENCE_TIMEOUT.*\); ending the job"
named="process $last (has not reached this fence: its last was fence [0-9]+, (none yet|the [a-z]+ of [a-z_ ]+)|did not answer within 2 s)"
different="at fence [0-9]+ the processes made different device calls"
for mode in kill hang stop extra args order scalar local pairs alone; do
  start=$(date +%s)
  out=$(timeout 60 "$mpirun" -np "$np" --oversubscribe "$@" "$test" "$mode" 2>&1)
  rc=$?
  took=$(( $(date +%s) - start ))
  case $mode in
    kill) want=('exited on signal 9|killed|Killed') ;;
    hang|stop) want=("$absent" "$named") ;;
    extra) want=("$different" "process 0: the start of nd_device_close" "process $last: the start of nd_tensor_write") ;;
    args|order) want=("$different" "process $last: the start of nd_tensor_write \(key [0-9a-f]+\): the same call as an earlier process, on other tensors or arguments") ;;
    scalar) want=("$different" "process $last: the start of a launch \(key [0-9a-f]+\): the same call as an earlier process, on other tensors or arguments") ;;
    # the launch fences nothing: the next fence (the close) finds the calls differ
    local|alone) want=("$different" "process $last: the start of nd_device_close \(key [0-9a-f]+\): the same call as an earlier process, on other tensors or arguments") ;;
    # ordered in pairs: a process reading the last one's pages finds its call differs on its READY
    pairs) want=("process [0-9]+ of $np: at fence [0-9]+, the start of a launch \(key [0-9a-f]+\), process $last was at fence [0-9]+, another call \(key [0-9a-f]+\): the processes made different device calls") ;;
  esac
  missing=
  for w in "${want[@]}"; do grep -Eq "$w" <<<"$out" || missing=$w; done
  if grep -q "was not ordered as it should be" <<<"$out"; then missing="(the launch ordered as the mode says)"; fi
  if (( rc == 124 )); then
    echo "FAIL $mode: the job was still running after 60 s" >&2; echo "$out" >&2; fail=1
  elif (( rc == 0 )); then
    echo "FAIL $mode: the job succeeded" >&2; echo "$out" >&2; fail=1
  elif [[ -n $missing ]]; then
    echo "FAIL $mode: exit $rc after $took s, but no message matching '$missing':" >&2; echo "$out" >&2; fail=1
  elif grep -q 'finished' <<<"$out"; then
    echo "FAIL $mode: a process finished its calls" >&2; echo "$out" >&2; fail=1
  else
    echo "ok $mode: the job ended in $took s with exit $rc: $(grep -Eo "${want[-1]}" <<<"$out" | head -1)"
  fi
done
exit $fail
