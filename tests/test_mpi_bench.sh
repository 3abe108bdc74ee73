#!/usr/bin/env bash
# test_mpi_bench.sh MPIRUN NDRUN - ndrun bench --processes, alone and under an MPI launcher: every case
# checked and agreeing, one table printed (rank 0), the JSON naming the job's size and nodes, and the
# bytes a reshard of [2048,1024] f32 from row blocks (256 rows of 4 KiB pages per core, 8 cores) to
# column blocks fetches from other nodes, counted here by hand: every output column block needs every
# input row, so each process fetches all the rows the other nodes hold, 2048 - 2048/nodes of them.
# Rounds are timed for a short minimum time, so the processes must agree on how many they run.
set -u
mpirun=$1 ndrun=$2
source "$(dirname "$0")/cli.sh"

holds() {
  if jqe "$2" "$1" >/dev/null; then ok; else bad "$3: jq '$2' is false: $(jq -c . "$1" | cut -c1-400)"; fi
}

run() { # run NP NODE_SIZE: the family's cases on rows (add, softmax, the reshard), JSON in $tmp/out.json, table in $tmp/table
  local np=$1 size=$2
  if [ "$np" = 0 ]; then
    "$ndrun" bench --processes --filter rows --threads 1 --repeats 2 --min-time 0.02 --json-out "$tmp/out.json" \
      >"$tmp/table" 2>"$tmp/err"
  else
    NDGEN_MPI_NODE_SIZE=$size "$mpirun" -np "$np" --oversubscribe -x NDGEN_MPI_NODE_SIZE "$ndrun" bench --processes \
      --filter rows --threads 1 --repeats 2 --min-time 0.02 --json-out "$tmp/out.json" >"$tmp/table" 2>"$tmp/err"
  fi
}

# alone (no launcher), then 2 processes on one node, on 2 nodes, and 4 processes on 2 nodes
for job in "0 0" "2 0" "2 1" "4 2"; do
  set -- $job
  np=$1 size=$2 procs=$(( $1 > 0 ? $1 : 1 ))
  nodes=$(( size > 0 ? procs / size : 1 ))
  if ! run "$np" "$size"; then bad "-np $np, node size $size: exit status: $(tail -3 "$tmp/err")"; continue; fi
  [ "$(grep -c '^3 cases; JSON in' "$tmp/table")" = 1 ] && ok || bad "-np $np: the table printed $(grep -c '^3 cases' "$tmp/table") times, want 1"
  holds "$tmp/out.json" ".processes == $procs and .nodes == $nodes and (.cases | length) == 3" "-np $np: job size"
  holds "$tmp/out.json" "[.cases[].result.match] | all" "-np $np: every case agrees"
  fetched=$(( procs > 1 && nodes > 1 ? procs * (2048 - 2048 / nodes) * 4096 : 0 ))
  holds "$tmp/out.json" "[.cases[] | select(.result.label == \"reshard rows to columns\") | .per_process[].fetched_bytes]
    | add // 0 | . == $fetched" "-np $np, $nodes nodes: the reshard fetches $fetched bytes"
done

# the matmul into a pending sum over 4 nodes of 1: part q contracts its 64 values of k, so a core reads
# every row page of a (2 KiB each) and its own rows of b; each process fetches the 384 rows of a the
# other nodes hold, 786432 bytes, and none of b (with all of b counted, twice that)
if NDGEN_MPI_NODE_SIZE=1 "$mpirun" -np 4 --oversubscribe -x NDGEN_MPI_NODE_SIZE "$ndrun" bench --processes \
     --filter "pending sum" --threads 1 --repeats 2 --min-time 0.02 --json-out "$tmp/pend.json" >"$tmp/table" 2>"$tmp/err"
then
  holds "$tmp/pend.json" '(.cases | length) == 1 and .cases[0].result.match
    and ([.cases[0].per_process[].fetched_bytes] == [786432, 786432, 786432, 786432])' "pending sum over 4 nodes"
else bad "pending sum over 4 nodes: exit status: $(tail -3 "$tmp/err")"; fi

# a usage error is 2, with the reason
"$ndrun" bench --processes --bogus >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q -- "--bogus: not an option here" "$tmp/err" && ok || bad "--bogus: $(cat "$tmp/err")"
"$ndrun" bench --processes --help | grep -q "^usage: \[mpirun -np R\] ndrun bench --processes" && ok || bad "--help"

finish
