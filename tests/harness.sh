# harness.sh - sourced by the shell tests that run ndrun: a scratch folder removed at exit, a JIT cache
# inside it (so no test reads or fills the user's), and pass/fail counters with ok and bad.
. "$(dirname "${BASH_SOURCE[0]}")/jqe.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export NDGEN_CACHE_DIR=$tmp/cache
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
