#!/usr/bin/env bash
# test_mpi_ndrun.sh MPIRUN NDRUN - ndrun compare under an MPI launcher: one result printed (rank 0),
# generic, specialized and reference agreeing, and per process the bytes its core read, against the
# count written out here for a reshard of [64,64] from row blocks to column blocks over P cores, one per
# process: each core reads every input row of its columns, a whole row page of 256 bytes each, of which
# the 64/P rows its own row block holds are local and the rest live in the other processes.
set -u
mpirun=$1 ndrun=$2
source "$(dirname "$0")/cli.sh"

# holds FILE 'JQ-EXPRESSION' WHAT: the JSON in FILE satisfies the expression
holds() {
  if jqe "$2" "$1" >/dev/null; then ok; else bad "$3: jq '$2' is false: $(jq -c . "$1" | cut -c1-400)"; fi
}

for np in 1 2 4; do
  rows=$((64 / np))
  if ! "$mpirun" -np "$np" --oversubscribe "$ndrun" compare --op reshard --shape 64,64 --shard "$rows",64 \
       --grid "${np}x1" --operand out --shard 64,"$rows" --no-probes --min-time 0.001 --json >"$tmp/out" 2>"$tmp/err"; then
    bad "-np $np: exit status $?: $(tail -3 "$tmp/err")"; continue
  fi
  [ "$(grep -c '"processes"' "$tmp/out")" = 1 ] && ok || bad "-np $np: $(grep -c '"processes"' "$tmp/out") results printed, want 1"
  holds "$tmp/out" ".match == true and .reference_checked == true and .processes == $np" "-np $np: match and processes"
  if [ "$np" -gt 1 ]; then
    local_b=$((rows * 256)) other_b=$(((64 - rows) * 256))
    holds "$tmp/out" "[.per_process[] | select(.local_bytes == $local_b and .other_process_bytes == $other_b and
      .other_core_bytes == $other_b)] | length == $np" \
      "-np $np: each process reads $local_b bytes of its own and $other_b of the others'"
    holds "$tmp/out" "[.per_process[] | .cores[1] - .cores[0]] | all(. == 1)" "-np $np: one core per process"
    # every output column block reads every process's rows: at 2 processes each waits for the other,
    # twice; at 4 each would talk to 3, more than an all-reduce's 2 rounds, so the launch fences
    if [ "$np" = 2 ]; then
      holds "$tmp/out" "[.per_process[] | select(.order == \"pairs\" and .pair_writers == 1 and
        .pair_readers == 1)] | length == 2" "-np 2: ordered in pairs with the other"
    else
      holds "$tmp/out" "[.per_process[] | select(.order == \"fence\")] | length == $np" "-np $np: every process fenced"
    fi
  fi
done
# NDGEN_MPI_SYNC=fence: the same launch fenced over every process
if NDGEN_MPI_SYNC=fence "$mpirun" -np 2 --oversubscribe "$ndrun" compare --op reshard --shape 64,64 --shard 32,64 \
     --grid 2x1 --operand out --shard 64,32 --no-probes --min-time 0.001 --json >"$tmp/out" 2>"$tmp/err"; then
  holds "$tmp/out" ".match == true and ([.per_process[] | select(.order == \"fence\")] | length == 2)" \
    "NDGEN_MPI_SYNC=fence: every process fenced"
else bad "NDGEN_MPI_SYNC=fence: exit status $?: $(tail -3 "$tmp/err")"; fi
# 4 processes as emulated nodes of 1, 2 and 4 (NDGEN_MPI_NODE_SIZE): each process fetches, before the
# launch, the input pages of other nodes covering the output elements its core writes, counted here by
# hand. Rows to columns: a core's 16 columns take every input row, a 256-byte page each, so the rows of
# the other nodes, 16 per process: 48 rows (12288 bytes, 3 gets) on 4 nodes, 32 (8192, 2 gets) on 2.
# Columns to rows: a core's 16 rows take, from each other process, those rows' 16-column pages of 64
# bytes: 3 * 16 * 64 = 3072 bytes on 4 nodes, 2048 on 2; whole entries would be 12288 and 8192. The
# pages the node's other processes hold are read in place: (size - 1) times 4096, or 1024 (size 4: one
# node, nothing fetched). Each process reserves address space for its node's memory, which on one node is
# the job's, J, so that over nodes of `size` these shares sum to size * J; and a staging area for the other
# nodes' pages it reads: at least what it fetched, at most each other node's entry of a tensor it read
# (4096 bytes) and two OS pages around it; never the other nodes' memory.
job=0
for size in 4 2 1; do
  others=$((4 - size))
  for dir in rows cols; do
    if [ $dir = rows ]; then in=16,64 out=64,16 page=$((16 * 256)); else in=64,16 out=16,64 page=$((16 * 64)); fi
    want=$((others * page)) node=$(((size - 1) * page))
    if ! NDGEN_MPI_NODE_SIZE=$size "$mpirun" -np 4 --oversubscribe "$ndrun" compare --op reshard --shape 64,64 \
         --shard $in --grid 4x1 --operand out --shard $out --no-probes --min-time 0.001 --json >"$tmp/out" 2>"$tmp/err"; then
      bad "nodes of $size, $dir: exit status $?: $(tail -3 "$tmp/err")"; continue
    fi
    holds "$tmp/out" ".match == true and .processes == 4 and .nodes == $((4 / size))" "nodes of $size, $dir: match and nodes"
    holds "$tmp/out" "[.per_process[] | select(.fetched_bytes == $want and .gets == $others and .node_bytes == $node)]
      | length == 4" "nodes of $size, $dir: each process fetches $want bytes in $others gets, reads $node in place"
    holds "$tmp/out" "[range(4) as \$p | .per_process[\$p].node == (\$p / $size | floor)] | all" \
      "nodes of $size, $dir: process p on node p / $size"
    if [ $size = 4 ]; then
      job=$(jq '.per_process[0].reserved_bytes' "$tmp/out")
      holds "$tmp/out" "[.per_process[] | .reserved_bytes == $job and .staging_bytes == 0] | all" \
        "one node: each process reserves the job's memory and stages nothing"
    else
      osp=$(getconf PAGESIZE)
      holds "$tmp/out" "([.per_process[] | .reserved_bytes - .staging_bytes] | add) == $size * $job and
        ([.per_process[] | .staging_bytes >= .fetched_bytes and .staging_bytes <= $others * (4096 + 2 * $osp)]
        | all)" "nodes of $size, $dir: each process reserves its node's memory and stages what it fetched"
    fi
  done
done
# An elementwise input placed as the output (same shards and pages) but on the cores in reverse order,
# 4 processes as 4 nodes: each process's core writes rows whose input `a` lives on process 3 - p, so it
# fetches that whole entry, 16 rows of 256 bytes in one get; `b`, placed and held as the output, costs
# nothing. (Skipping inputs placed as the output without asking who holds them fetched nothing and
# answered wrongly: checked once.)
if NDGEN_MPI_NODE_SIZE=1 "$mpirun" -np 4 --oversubscribe "$ndrun" compare --op add --shape 64,64 --shard 16,64 \
     --grid 4x1 --operand a --cores "(3,0);(2,0);(1,0);(0,0)" --no-probes --min-time 0.001 --json >"$tmp/out" 2>"$tmp/err"; then
  holds "$tmp/out" ".match == true and ([.per_process[] | select(.fetched_bytes == 4096 and .gets == 1)] | length == 4)" \
    "add, a on the cores reversed: each process fetches 4096 bytes in 1 get"
else
  bad "add, a on the cores reversed: exit status $?: $(tail -3 "$tmp/err")"
fi
# The table prints the per-process lines once.
"$mpirun" -np 2 --oversubscribe "$ndrun" compare --op reshard --shape 64,64 --shard 32,64 --grid 2x1 \
  --operand out --shard 64,32 --no-probes --min-time 0.001 >"$tmp/table" 2>&1
[ "$(grep -c '^processes: 2' "$tmp/table")" = 1 ] && grep -q "process 1: cores \[1, 2), own pages 8192, other cores' pages 8192, of which in other processes 8192" "$tmp/table" \
  && ok || bad "table: $(grep -A3 '^processes' "$tmp/table")"
# DRAM reads count as other cores' whichever process holds the bank: not counted, never a wrong figure
"$mpirun" -np 2 --oversubscribe "$ndrun" compare --op add --shape 8,16 --interleaved --buffer dram --banks 2 \
  --grid 2x1 --no-probes --min-time 0.001 >"$tmp/table" 2>&1
[ "$(grep -c "of which in other processes not counted" "$tmp/table")" = 2 ] && ok \
  || bad "DRAM: $(grep -A3 '^processes' "$tmp/table")"
finish
