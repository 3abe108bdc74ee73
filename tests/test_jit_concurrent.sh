#!/usr/bin/env bash
# test_jit_concurrent.sh NDRUN - processes sharing a JIT cache. Eight processes needing the same missing
# (then the same damaged) entry build it once: one builds, seven wait on the entry's lock and load what
# it built; one library and one manifest are left, no orphaned library, no build folder, no lock file.
# A build killed with kill -9 mid-compile leaves its build folder and lock, which the next build in
# that cache removes; a library no manifest names (a build killed between its two renames) is removed
# when its entry is next built.
set -u
. "$(dirname "$0")/jqe.sh"
ndrun=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache=$tmp/cache
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
realcc=$(command -v "${CC:-cc}")
case_args=(--op sub --shape 24,40 --shard 8,40 --grid 3x1 --min-time 0 --repeats 1 --no-probes --json)

# a compiler slow enough that all eight processes look for the entry before the first is built
printf '#!/bin/sh\nsleep 1\nexec %s "$@"\n' "$realcc" >"$tmp/slowcc"
printf '#!/bin/sh\ncase " $* " in *" -shared "*) sleep 60;; esac\nexec %s "$@"\n' "$realcc" >"$tmp/stuckcc"
chmod +x "$tmp/slowcc" "$tmp/stuckcc"

# eight WANT: eight concurrent runs; one says WANT, seven "cache"; one entry, nothing else left
eight() {
  local i
  for i in 1 2 3 4 5 6 7 8; do
    CC=$tmp/slowcc "$ndrun" compare --cache-dir "$cache" "${case_args[@]}" >"$tmp/out$i" 2>"$tmp/err$i" &
  done
  wait
  local jits
  jits=$(for i in 1 2 3 4 5 6 7 8; do jq -r 'select(.match) | .jit' "$tmp/out$i"; done | sort | uniq -c | tr -s ' ' | xargs)
  [ "$jits" = "$( (echo "1 $1"; echo "7 cache") | sort -k2 | xargs)" ] && ok || bad "eight runs ($1): $jits; $(cat "$tmp"/err*)"
  local left
  left=$(cd "$cache" && ls -A | sed 's/^[0-9a-f]\{16\}\.manifest$/M/; s/^[0-9a-f]\{16\}-[0-9a-f]\{16\}\.so$/L/' | sort | xargs)
  [ "$left" = "L M" ] && ok || bad "eight runs ($1) left: $(ls -A "$cache")"
}
eight built
printf 'X' | dd of="$(ls "$cache"/*.so)" bs=1 seek=4000 conv=notrunc status=none
eight rebuilt

# a build killed mid-compile leaves its build folder and its lock
(setsid env CC="$tmp/stuckcc" "$ndrun" compare --cache-dir "$cache" "${case_args[@]}" >/dev/null 2>&1 & echo $! >"$tmp/pid")
pid=$(cat "$tmp/pid")
for _ in $(seq 100); do
  [ -n "$(find "$cache" -name 'kernel.c' 2>/dev/null)" ] && break
  sleep 0.1
done
kill -9 -- -"$pid" 2>/dev/null
while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
[ -n "$(find "$cache" -maxdepth 1 -name '.build-*')" ] && [ -n "$(find "$cache" -maxdepth 1 -name '.lock-*')" ] && ok ||
  bad "the killed build left no build folder or lock to clean: $(ls -A "$cache")"
# a library no manifest names
key=$(basename "$(ls "$cache"/*.manifest)" .manifest)
cp "$(ls "$cache"/*.so)" "$cache/$key-0123456789abcdef.so"
rm "$cache/$key.manifest"
out=$(CC=$realcc "$ndrun" compare --cache-dir "$cache" "${case_args[@]}" 2>"$tmp/err")
if [ $? = 0 ] && echo "$out" | jqe '.match and .jit == "built"' >/dev/null; then ok; else bad "after the kill: $out $(cat "$tmp/err")"; fi
# the killed build's leftovers (another entry's) are gone; the key rebuilt here is left with one library
out=$(CC=$tmp/slowcc "$ndrun" compare --cache-dir "$cache" "${case_args[@]}" 2>"$tmp/err")
if [ $? = 0 ] && echo "$out" | jqe '.match and .jit == "built"' >/dev/null; then ok; else bad "slowcc again: $out $(cat "$tmp/err")"; fi
left=$(cd "$cache" && ls -A | sed 's/^[0-9a-f]\{16\}\.manifest$/M/; s/^[0-9a-f]\{16\}-[0-9a-f]\{16\}\.so$/L/' | sort | xargs)
[ "$left" = "L L M M" ] && ok || bad "after the kill, left: $(ls -A "$cache")"
[ ! -e "$cache/$key-0123456789abcdef.so" ] && ok || bad "the orphaned library was not removed"

echo "test_jit_concurrent: $pass passed, $fail failed"
[ $fail = 0 ]
