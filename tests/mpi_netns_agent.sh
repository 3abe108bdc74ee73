#!/usr/bin/env bash
# mpi_netns_agent.sh HOST COMMAND... - the "ssh" of test_mpi_netns.sh, which gives it to mpirun as
# --mca plm_rsh_agent: Open MPI's rsh launcher runs it as `agent HOST orted ...` (the orted command
# quoted for a remote shell, as ssh would pass it), once per host of the hostfile. HOST is one of the
# test's made-up host names, ndgen-t<pid>-<i>; the command runs in network namespace ndgen_t<pid>_<i>
# with a UTS namespace of its own whose hostname is HOST, so the orted there, and the ranks it starts,
# see only that namespace's loopback and its veth link, and connect back to mpirun over the link.
set -euo pipefail
host=${1:-}
shift || true
if ! [[ $host =~ ^ndgen-t[0-9]+-[0-9]+$ ]]; then
  echo "mpi_netns_agent.sh: host '$host' is not one of test_mpi_netns.sh's (ndgen-t<pid>-<i>)" >&2
  exit 1
fi
ns=${host//-/_}
# "$*": the command as one string, for sh -c, as sshd would run it; the first word after HOST is a
# lone space (Open MPI's place for ssh options), harmless here
exec ip netns exec "$ns" unshare --uts sh -c 'echo "$1" >/proc/sys/kernel/hostname && exec sh -c "$2"' agent "$host" "$*"
