#!/usr/bin/env bash
# test_jit_cache.sh NDRUN SPEC_DIR - on-demand specialization and its cache: a first run builds, a
# second reuses; a damaged library, a damaged or truncated manifest, and a changed spec are each
# detected and rebuilt, never loaded; no build folder or lock is left behind; --no-jit turns it off.
set -u
. "$(dirname "$0")/jqe.sh"
ndrun=$1 specs=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache=$tmp/cache
cp -r "$specs" "$tmp/specs"
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# run EXPECTED_JIT: one compare whose specialized kernel no prebuilt library has
run() {
  local out
  out=$($ndrun compare --cache-dir "$cache" --spec-dir "$tmp/specs" --op sub --shape 24,40 --shard 8,40 \
        --grid 3x1 --min-time 0 --repeats 1 --json 2>"$tmp/err")
  if [ $? = 0 ] && echo "$out" | jqe --arg j "$1" '.match and .jit == $j and (.specialized_symbol | test("__t0$"))' \
       >/dev/null; then ok; else bad "expected jit '$1': $(echo "$out" | jq -c '{match, jit}' 2>/dev/null) $(cat "$tmp/err")"; fi
}
lib() { ls "$cache"/*.so; }
manifest() { ls "$cache"/*.manifest; }

run built
[ "$(ls "$cache" | wc -l)" = 2 ] && ok || bad "a cache entry is one library and one manifest: $(ls "$cache")"
run cache

# a damaged library: same size, one byte changed
printf 'X' | dd of="$(lib)" bs=1 seek=4000 conv=notrunc status=none
run rebuilt
run cache
[ "$(ls "$cache"/*.so | wc -l)" = 1 ] && ok || bad "the damaged library was not removed"

# a truncated library
truncate -s 100 "$(lib)"
run rebuilt

# a half-written manifest: its last line missing
m=$(manifest); head -n -1 "$m" >"$tmp/m" && cp "$tmp/m" "$m"
run rebuilt

# a manifest edited to point at other bytes: its own checksum no longer matches
sed -i 's/^library \(.\)/library f\1/' "$(manifest)"
run rebuilt

# a changed input: the spec (a comment is a change; the cache does not parse Lua)
echo "-- edited" >>"$tmp/specs/eltwise.lua"
run rebuilt
run cache

# a removed library
rm -f "$cache"/*.so
run rebuilt

# nothing half-built is left behind
[ -z "$(find "$cache" -name '.build-*' -o -name '.lock-*')" ] && ok ||
  bad "build folders or locks left: $(find "$cache" -name '.build-*' -o -name '.lock-*')"

# a failing generator is reported, leaves no entry, and the generic kernel runs, as when the compiler
# fails: a spec that no longer parses
rm -rf "$cache"
echo "this is not lua" >>"$tmp/specs/eltwise.lua"
out=$($ndrun compare --cache-dir "$cache" --spec-dir "$tmp/specs" --op sub --shape 24,40 --shard 8,40 --grid 3x1 \
      --min-time 0 --repeats 1 2>&1)
if [ $? = 0 ] && echo "$out" | grep -q "^results: all three agree" &&
   echo "$out" | grep -q "^kernels: nd_sub__f32__generic .*(.*fallback: jit: op 'sub': .*generate failed: .*eltwise.lua:[0-9]*:" &&
   [ -z "$(ls "$cache" 2>/dev/null)" ]; then ok; else bad "a failing generator: $out; cache: $(ls -a "$cache")"; fi

# --no-jit: no build, a clear error
rm -rf "$cache"
out=$($ndrun compare --no-jit --cache-dir "$cache" --op sub --shape 24,40 --shard 8,40 --grid 3x1 --min-time 0 2>&1)
if [ $? = 1 ] && echo "$out" | grep -q "no specialized kernel for these distributions" && [ ! -e "$cache" ]; then ok
else bad "--no-jit: $out"; fi

echo "test_jit_cache: $pass passed, $fail failed"
[ $fail = 0 ]
