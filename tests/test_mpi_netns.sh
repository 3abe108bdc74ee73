#!/usr/bin/env bash
# test_mpi_netns.sh MPIRUN TEST_MPI_KERNELS LIBRARY NDRUN [NP]: the MPI runtime over a real network
# path. Each of NP processes (4 unless told) runs in a network namespace of its own, as on a host of
# its own: Open MPI's rsh launcher starts one orted per made-up host of a hostfile through
# mpi_netns_agent.sh, which enters that host's namespace (and a UTS namespace with its hostname), so the
# processes reach each other and mpirun only over veth links to a bridge, by IP, in TCP (btl tcp, and
# the one-sided pt2pt component over it). Two runs:
#   - ndrun compare of a reshard from row blocks to column blocks, with no emulated nodes: Open MPI
#     must see NP nodes (MPI_Comm_split_type(SHARED) of one process each), each process fetching the
#     other processes' rows, (NP - 1) * 64 / NP pages of 256 bytes, as test_mpi_ndrun counts them;
#     and each namespace's link must have received at least the bytes its process fetched;
#   - test_mpi_kernels (the suite bit-identical to one process, fetched bytes against the brute-force
#     count) with NDGEN_MPI_NODE_SIZE=1, which here is what the real nodes already are; every process's
#     link must have carried at least 1 MiB each way (the run moves some 7 MB each way per process at
#     4 processes; the compare above 0.25 to 0.4 MB; with the agent not entering the namespaces, the
#     links carried about 1 KB in either run).
# In both, every process records its network namespace and hostname: each must be in a different one
# of the test's namespaces, so the test cannot pass with the processes sharing one (the agent not
# entering them, say). Exit 77 (skipped) if the machine cannot make namespaces, veth links or a bridge (not
# root, no CAP_NET_ADMIN or CAP_SYS_ADMIN, no `ip` or `unshare`); once it can, any failure fails.
# Everything is removed at exit, and leftovers of earlier runs that were killed, by name.
set -euo pipefail
mpirun=$1 test=$2 lib=$3 ndrun=$4 np=${5:-4}
# the runs below set what they need: the first one is over the real nodes
unset NDGEN_MPI_NODE_SIZE NDGEN_MPI_GETS NDGEN_MPI_SYNC NDGEN_MPI_STATS_ROOT
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# ndgen_t<pid>_hub holds the bridge and mpirun, ndgen_t<pid>_<i> host i (named ndgen-t<pid>-<i>). The
# subnet only ever exists inside these namespaces: nothing of the machine's own network is touched.
prefix=ndgen_t$$ net=10.213.77
tmp=

skip() { echo "test_mpi_netns: skipped: $*" >&2; exit 77; }
die() { echo "test_mpi_netns: FAIL: $*" >&2; exit 1; }
fail=0
bad() { echo "test_mpi_netns: FAIL: $*" >&2; fail=1; }

# remove PREFIX: end the processes left in PREFIX's namespaces (mpirun, the orteds and the ranks of
# this run or of one that was killed, by their ids) and delete the namespaces, which takes their veth ends and bridge with them
remove() {
  local ns pids
  for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep -E "^$1_(hub|[0-9]+)\$"); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    # shellcheck disable=SC2086 # one pid a word
    [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
}
cleanup() {
  local rc=$?
  trap - EXIT
  remove "$prefix"
  [ -z "$tmp" ] || rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP
trap 'exit 141' PIPE

command -v ip >/dev/null || skip "no 'ip' command (Debian: apt-get install iproute2)"
command -v unshare >/dev/null || skip "no 'unshare' command (util-linux)"
command -v jq >/dev/null || die "no jq"
[ "$(id -u)" = 0 ] || skip "network namespaces need root (CAP_NET_ADMIN and CAP_SYS_ADMIN); running as uid $(id -u)"
scratch=${TMPDIR:-/tmp}
tmp=$(mktemp -d "$scratch/ndgen_t$$.XXXXXX")

# Leftovers of runs killed before their trap ran (a CTest timeout sends SIGKILL): ours by name, when
# the process that made them is gone: namespaces ndgen_t<pid>_*, scratch folders ndgen_t<pid>.*.
gone() { [ "$1" != $$ ] && ! grep -qs test_mpi_netns "/proc/$1/cmdline"; }
for old in $(ip netns list 2>/dev/null | awk '{ print $1 }' | sed -nE 's/^ndgen_t([0-9]+)_(hub|[0-9]+)$/\1/p' | sort -u); do
  if gone "$old"; then
    echo "test_mpi_netns: removing the namespaces of an earlier run, process $old"
    remove "ndgen_t$old"
  fi
done
for old in "$scratch"/ndgen_t*.??????; do
  [[ -d $old && $old =~ /ndgen_t([0-9]+)\.[^/]{6}$ ]] || continue
  if gone "${BASH_REMATCH[1]}"; then
    echo "test_mpi_netns: removing the scratch folder of an earlier run, $old"
    rm -rf "$old"
  fi
done

# What the machine must allow; past these, every step is expected to work. First what a killed run of
# the same process number left (gone() spares it): nothing of this run exists yet.
remove "$prefix"
hub=${prefix}_hub
ip netns add "$hub" 2>"$tmp/err" || skip "ip netns add failed: $(cat "$tmp/err")"
ip netns exec "$hub" true 2>"$tmp/err" || skip "ip netns exec failed: $(cat "$tmp/err")"
ip netns exec "$hub" unshare --uts true 2>"$tmp/err" || skip "unshare --uts failed: $(cat "$tmp/err")"
ip -n "$hub" link add br0 type bridge 2>"$tmp/err" || skip "no bridge device: $(cat "$tmp/err")"
for ((i = 0; i < np; ++i)); do
  ip netns add "${prefix}_$i" 2>"$tmp/err" || skip "ip netns add failed: $(cat "$tmp/err")"
  ip -n "$hub" link add "n$i" type veth peer name eth0 netns "${prefix}_$i" 2>"$tmp/err" ||
    skip "no veth link: $(cat "$tmp/err")"
done
must() { "$@" 2>"$tmp/err" || die "$* failed: $(cat "$tmp/err")"; }
must ip -n "$hub" link set lo up
must ip -n "$hub" addr add "$net.254/24" dev br0
must ip -n "$hub" link set br0 up
declare -A host_of_ns # a namespace's inode (net:[N]) -> its host number
: >"$tmp/hosts"
for ((i = 0; i < np; ++i)); do
  ns=${prefix}_$i
  must ip -n "$hub" link set "n$i" master br0 up
  must ip -n "$ns" link set lo up
  must ip -n "$ns" addr add "$net.$((i + 1))/24" dev eth0
  must ip -n "$ns" link set eth0 up
  host_of_ns[$(ip netns exec "$ns" readlink /proc/self/ns/net)]=$i
  echo "ndgen-t$$-$i slots=1" >>"$tmp/hosts"
done
(( ${#host_of_ns[@]} == np )) || die "the $np namespaces are not $np distinct namespaces: ${!host_of_ns[*]}"
echo "test_mpi_netns: $np namespaces ${prefix}_0..$((np - 1)), $net.1-$np/24 on veth links to a bridge in $hub ($net.254)"

# Open MPI 4.1 as on NP hosts, each reached through the agent:
#   --hostfile, plm_rsh_agent: one orted per host, started in its namespace (mpirun runs in the hub's);
#   plm_rsh_no_tree_spawn: every orted started by mpirun itself, not by another orted;
#   oob_tcp_if_include, btl_tcp_if_include: the daemons' and the processes' TCP on the test's subnet;
#   pml ob1, btl self,tcp: messages over TCP sockets (UCX, where a configuration lets it in, could use
#     shared memory between namespaces of one machine);
#   osc sm,pt2pt: one-sided traffic as messages over those sockets; Debian's openmpi-mca-params.conf
#     leaves pt2pt out (osc = ^ucx,pt2pt), and rdma, the one left, cannot create a window over btl tcp
#     (MPI_Win_create fails);
#   --bind-to none: each orted sees the whole machine as its own and would bind its rank to core 0
#     (at 2 processes every rank on core 0);
#   mpi_yield_when_idle: each orted thinks its one process has a machine to itself, so the processes
#     would spin while they wait, 4 on 2 cores (the run took 22 to 25 s so, 8 to 10 s yielding);
#   orte_tmpdir_base: the session directories in the scratch folder, removed at exit whatever happens.
# shellcheck disable=SC2054 # self,tcp and sm,pt2pt are one word each
opts=(-np "$np" --hostfile "$tmp/hosts" --bind-to none
  --mca plm_rsh_agent "bash $here/mpi_netns_agent.sh" --mca plm_rsh_no_tree_spawn 1
  --mca oob_tcp_if_include "$net.0/24" --mca btl_tcp_if_include "$net.0/24"
  --mca pml ob1 --mca btl self,tcp --mca osc sm,pt2pt --mca orte_tmpdir_base "$tmp" --mca mpi_yield_when_idle 1)
# each process writes "rank namespace hostname" to RECORD.rank, then runs the program
record=(sh -c 'printf "%s %s %s\n" "$OMPI_COMM_WORLD_RANK" "$(readlink /proc/self/ns/net)" "$(cat /proc/sys/kernel/hostname)" >"$0.$OMPI_COMM_WORLD_RANK" && exec "$@"')

# counters FILE: each host namespace's eth0 received and sent bytes, one line per host
counters() {
  for ((i = 0; i < np; ++i)); do
    ip netns exec "${prefix}_$i" cat /sys/class/net/eth0/statistics/rx_bytes /sys/class/net/eth0/statistics/tx_bytes |
      paste -sd' '
  done >"$1"
}
# run NAME MPIRUN-ARGS...: mpirun in the hub, output in $tmp/NAME.out, counters before and after; the
# exit status is the job's. (Open MPI's rsh launcher warns that setpgid failed when the agent has
# already become another program, a harmless race: those lines are left out of what is shown.)
run() {
  local name=$1 rc=0 start=$SECONDS
  shift
  counters "$tmp/$name.before"
  # in the background, so that a TERM to this script is handled at once (cleanup ends the job)
  timeout -k 10 120 ip netns exec "$hub" "$mpirun" "${opts[@]}" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  wait $! || rc=$?
  counters "$tmp/$name.after"
  echo "test_mpi_netns: $name: exit $rc after $((SECONDS - start)) s"
  grep -v 'plm:rsh: Warning: setpgid' "$tmp/$name.err" >&2 || true
  return "$rc"
}
# placed NAME: every process recorded a namespace of its own among the hosts' and its host's hostname;
# sets host_of_rank[r] to process r's host, empty where it is not so
declare -a host_of_rank
placed() {
  local r rank id name seen=
  for ((r = 0; r < np; ++r)); do
    host_of_rank[r]=
    if ! [ -s "$tmp/$1.$r" ] || ! read -r rank id name <"$tmp/$1.$r" || [ "$rank" != "$r" ]; then
      bad "$1: process $r recorded no namespace"; continue
    fi
    local h=${host_of_ns[$id]:-}
    if [ -z "$h" ]; then bad "$1: process $r ran in namespace $id, not in one of the test's (${!host_of_ns[*]})"
    elif [[ " $seen " == *" $h "* ]]; then bad "$1: process $r shares host $h's namespace with another process"
    elif [ "$name" != "ndgen-t$$-$h" ]; then bad "$1: process $r in host $h's namespace has hostname '$name'"
    else host_of_rank[r]=$h seen="$seen $h"; fi
  done
}
# delta NAME HOST COLUMN: bytes the host's link received (1) or sent (2) during run NAME
delta() {
  echo $(( $(sed -n "$(($2 + 1))p" "$tmp/$1.after" | cut -d' ' -f"$3") - $(sed -n "$(($2 + 1))p" "$tmp/$1.before" | cut -d' ' -f"$3") ))
}

# 1. ndrun compare over the real nodes (no NDGEN_MPI_NODE_SIZE)
rows=$((64 / np))
want=$(((np - 1) * rows * 256))
if run compare "${record[@]}" "$tmp/compare" "$ndrun" compare --op reshard --shape 64,64 --shard "$rows",64 \
     --grid "${np}x1" --operand out --shard 64,"$rows" --no-probes --min-time 0.001 --json; then
  placed compare
  if ! jq -e ".match == true and .reference_checked == true and .processes == $np and .nodes == $np and
        ([range($np) as \$p | .per_process[\$p] | .node == \$p and .fetched_bytes == $want and .gets == $np - 1]
        | all)" "$tmp/compare.out" >/dev/null; then
    bad "compare: want a match over $np nodes, each process fetching $want bytes in $((np - 1)) gets: $(jq -c . "$tmp/compare.out" | cut -c1-600)"
  fi
  for ((r = 0; r < np; ++r)); do
    h=${host_of_rank[r]:-$r} # the hostfile places process r on host r
    got=$(jq ".per_process[$r].fetched_bytes // 0" "$tmp/compare.out") rx=$(delta compare "$h" 1) tx=$(delta compare "$h" 2)
    echo "test_mpi_netns: compare: process $r (node $(jq ".per_process[$r].node" "$tmp/compare.out")) fetched $got bytes; host ndgen-t$$-$h's link received $rx bytes, sent $tx"
    (( rx >= got )) || bad "compare: process $r fetched $got bytes, but its namespace's link received only $rx"
  done
else
  bad "compare: exit status $?: $(tail -5 "$tmp/compare.out")"
fi

# 2. test_mpi_kernels, each process a node
if run kernels -x NDGEN_MPI_NODE_SIZE=1 "${record[@]}" "$tmp/kernels" "$test" "$lib"; then
  placed kernels
  grep -E "^test_mpi_kernels on $np processes: [0-9]+ checks passed, 0 failed" "$tmp/kernels.out" ||
    bad "kernels: no line 'test_mpi_kernels on $np processes: ... 0 failed': $(tail -5 "$tmp/kernels.out")"
  for ((r = 0; r < np; ++r)); do
    h=${host_of_rank[r]:-$r} # the hostfile places process r on host r
    rx=$(delta kernels "$h" 1) tx=$(delta kernels "$h" 2)
    echo "test_mpi_netns: kernels: process $r, host ndgen-t$$-$h's link received $rx bytes, sent $tx"
    (( rx >= 1048576 && tx >= 1048576 )) || bad "kernels: process $r's namespace's link carried $rx bytes in and $tx out, want 1 MiB each"
  done
else
  bad "kernels: exit status $?: $(tail -20 "$tmp/kernels.out")"
fi
exit "$fail"
