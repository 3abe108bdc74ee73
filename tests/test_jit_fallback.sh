#!/usr/bin/env bash
# test_jit_fallback.sh NDRUN WERROR - a specialized kernel the C compiler refuses falls back to the
# generic kernel: ndrun compare still checks and times, warns with the compiler's message, reports
# "fallback", and caches nothing, so the next run with a working compiler builds. A compiler that
# cannot be started falls back alike. The JIT never passes -Werror, nor -Werror= but for the warnings
# that are always bugs (ERRORS, NDGEN_KERNEL_ERRORS), which it passes. With WERROR on (NDGEN_WERROR),
# matmul targets whose sizes once made GCC warn in the template compile warning-free under -Werror.
set -u
. "$(dirname "$0")/jqe.sh"
ndrun=$1 werror=${2:-OFF} errors=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache=$tmp/cache
realcc=${CC:-cc}
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# a compiler that fails as a compiler does: a located error on standard error, status 1
cat >"$tmp/failcc" <<'EOF'
#!/bin/sh
echo "kernel.c: In function 'nd_sub__f32__t0':" >&2
echo "kernel.c:12:5: error: simulated compiler failure" >&2
exit 1
EOF
# the real compiler, refusing -Werror and any -Werror= but the always-bug ones, and recording those
cat >"$tmp/nowerror" <<EOF
#!/bin/sh
for a in "\$@"; do
  case " $errors " in *" \$a "*) echo "\$a" >>"$tmp/errors-passed"; continue;; esac
  case \$a in -Werror|-Werror=*) echo "nowerror: the JIT passed \$a" >&2; exit 1;; esac
done
exec $realcc "\$@"
EOF
# the real compiler, with warnings as errors
cat >"$tmp/werror" <<EOF
#!/bin/sh
exec $realcc "\$@" -Werror
EOF
chmod +x "$tmp/failcc" "$tmp/nowerror" "$tmp/werror"

case_args=(--op sub --shape 24,40 --shard 8,40 --grid 3x1 --min-time 0 --repeats 1 --no-probes)
compare() { "$ndrun" compare --cache-dir "$cache" "$@" 2>"$tmp/err"; }

# the compiler fails: JSON says fallback, the generic kernel ran as the specialized one, results agree
out=$(CC=$tmp/failcc compare "${case_args[@]}" --json)
rc=$?
if [ $rc = 0 ] && echo "$out" | jqe '.match and .jit == "fallback" and .specialized_symbol == .generic_symbol and
     (.generic_symbol | test("generic$"))' >/dev/null; then ok
else bad "failing compiler, JSON: rc $rc: $(echo "$out" | jq -c '{match, jit, specialized_symbol}' 2>/dev/null)"; fi
# the warning names the op and the compiler, and carries its error line (not its first line)
if grep -q "^ndrun: warning: jit: op 'sub': compiling with $tmp/failcc failed: kernel.c:12:5: error: simulated compiler failure; the generic kernel runs" "$tmp/err"
then ok; else bad "failing compiler, warning: $(cat "$tmp/err")"; fi
# nothing cached, nothing half-built left
[ -z "$(ls -A "$cache")" ] && ok || bad "a failed build left files: $(ls -A "$cache")"

# the table shows the fallback and the compiler's message beside the kernels
out=$(CC=$tmp/failcc compare "${case_args[@]}")
rc=$?
if [ $rc = 0 ] && echo "$out" | grep -q "^kernels: nd_sub__f32__generic .*nd_sub__f32__generic (.*fallback: jit: op 'sub': compiling with .* failed: .*simulated compiler failure"
then ok; else bad "failing compiler, table: rc $rc: $out $(cat "$tmp/err")"; fi

# a compiler that cannot be started falls back too
out=$(CC=$tmp/no-such-cc compare "${case_args[@]}" --json)
rc=$?
if [ $rc = 0 ] && echo "$out" | jqe '.match and .jit == "fallback"' >/dev/null &&
   grep -q "^ndrun: warning: jit: op 'sub': compiling with $tmp/no-such-cc failed: it could not be started" "$tmp/err"
then ok; else bad "missing compiler: rc $rc: $out $(cat "$tmp/err")"; fi

# the failure was not cached: a working compiler builds now; and it is never handed -Werror
out=$(CC=$tmp/nowerror compare "${case_args[@]}" --json)
rc=$?
if [ $rc = 0 ] && echo "$out" | jqe '.match and .jit == "built" and (.specialized_symbol | test("__t0$"))' >/dev/null &&
   [ ! -s "$tmp/err" ]; then ok
else bad "working compiler after a failure: rc $rc: $(echo "$out" | jq -c '{match, jit}' 2>/dev/null) $(cat "$tmp/err")"; fi
# and it passed each warning that is always a bug as an error
for e in $errors; do
  if grep -qx -- "$e" "$tmp/errors-passed" 2>/dev/null; then ok; else bad "the JIT did not pass $e"; fi
done

# matmul specialized on demand, warning-free under -Werror: one panel under a page narrower than N,
# rows over 256, several panels, uneven tails, K over one KC step
if [ "$werror" = ON ]; then
  while read -r args; do
    out=$(CC=$tmp/werror compare --op matmul $args --min-time 0 --repeats 1 --no-probes --json)
    rc=$?
    if [ $rc = 0 ] && echo "$out" | jqe '.match and .jit == "built"' >/dev/null && [ ! -s "$tmp/err" ]; then ok
    else bad "matmul $args: rc $rc: $(echo "$out" | jq -c '{match, jit}' 2>/dev/null) $(cat "$tmp/err")"; fi
  done <<'EOF'
--shape 1,1,31 --shard 1,1 --grid 1x1 --operand b --shard 1,31 --operand out --shard 1,22
--shape 520,33,70 --shard 260,33 --grid 2x1 --operand b --shard 33,70 --operand out --shard 260,70
--shape 270,300,130 --shard 90,300 --grid 3x2 --operand b --shard 300,65 --operand out --shard 90,65
--shape 9,7,97 --shard 9,7 --grid 2x2 --operand b --shard 7,97 --operand out --shard 5,33
EOF
fi

echo "test_jit_fallback: $pass passed, $fail failed"
[ $fail = 0 ]
