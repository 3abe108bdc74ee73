# cli.sh - sourced by the command-line tests: a scratch folder, pass and fail counts, and the two checks
# they make of a command (its JSON satisfies a jq expression; it is refused with one line on stderr and
# writes nothing). TOOL is the binary every COMMAND is run with.
. "$(dirname "${BASH_SOURCE[0]}")/jqe.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# json_ok 'COMMAND...' 'JQ-EXPRESSION': the command succeeds and its JSON satisfies the expression
json_ok() {
  local out
  if ! out=$(eval "$TOOL $1"); then bad "$1 failed"; return; fi
  if echo "$out" | jqe "$2" >/dev/null; then ok; else bad "$1: jq '$2' is false: $(echo "$out" | jq -c . | cut -c1-400)"; fi
}

# refused 'COMMAND...' STATUS 'PATTERN' [grep flags]: exit status STATUS (any non-zero for "nonzero"),
# nothing on stdout, exactly one stderr line matching PATTERN (fixed text unless flags say -E), and the
# --output file not written, nor a temporary beside it
refused() {
  rm -f "$tmp/out"
  eval "$TOOL $1 --output '$tmp/out'" >"$tmp/stdout" 2>"$tmp/err"
  local rc=$?
  if [ "$2" = nonzero ] && [ $rc -eq 0 ] || [ "$2" != nonzero ] && [ $rc -ne "$2" ]; then
    bad "$1: exit $rc, want $2"; return
  fi
  if [ "$(wc -l <"$tmp/err")" -ne 1 ]; then bad "$1: stderr is not one line: $(cat "$tmp/err")"; return; fi
  if ! grep -q ${4:--F} -- "$3" "$tmp/err"; then bad "$1: '$(cat "$tmp/err")' does not match '$3'"; return; fi
  if [ -s "$tmp/stdout" ] || [ -e "$tmp/out" ] || ls "$tmp"/.out.* "$tmp"/out.tmp.* >/dev/null 2>&1; then
    bad "$1: wrote output"; return
  fi
  ok
}

# Prints the counts; the test's exit status.
finish() {
  echo "$pass passed, $fail failed"
  [ $fail -eq 0 ]
}
