# jqe.sh - sourced by the shell tests that check JSON: jqe ARGS... is `jq -e ARGS` that also fails when
# jq read no value at all. jq 1.6 exits 0 on an empty input, so `COMMAND | jq -e FILTER` passed whenever
# COMMAND failed and printed nothing: a check that could not fail.
jqe() {
  local out
  out=$(jq -e "$@") || return
  if [ -z "$out" ]; then
    echo "jqe: jq read no JSON value (jq -e $*)" >&2
    return 1
  fi
  printf '%s\n' "$out"
}
