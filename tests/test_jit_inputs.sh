#!/usr/bin/env bash
# test_jit_inputs.sh NDRUN - everything that shapes a JIT library is part of its cache entry, and odd but
# valid setups work. A changed compiler (its executable, its --version output, its path) and a changed
# linked archive (libnd_dist.a, swapped in a private mount namespace) are misses, not stale hits. CC with
# arguments ("cc -m64") is split into words and run without a shell; a compiler path with a blank is one
# word; spec and cache paths with blanks work. A read-only cache serves a valid entry, and a damaged or
# missing one falls back to the generic kernel with the reason instead of failing the run. An input
# edited during a build is not cached; CPATH is part of the entry; a lock held past NDGEN_JIT_LOCK_WAIT
# falls back, naming the holder.
set -u
ndrun=$1
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
skip() { echo "SKIP: $*"; }
realcc=$(command -v "${CC:-cc}")
cache=$tmp/cache
case_args=(--op sub --shape 24,40 --shard 8,40 --grid 3x1 --min-time 0 --repeats 1 --no-probes)

# run NAME EXPECTED_JIT REASON [PREFIX...]: one compare (its table) in $cache, with the options in
# $extra, run through PREFIX; REASON, an extended pattern the JIT's note must match
run() {
  local name=$1 want=$2 reason=$3 out rc
  shift 3
  out=$("$@" "$ndrun" compare --cache-dir "$cache" ${extra[@]+"${extra[@]}"} "${case_args[@]}" 2>"$tmp/err")
  rc=$?
  if [ $rc = 0 ] && echo "$out" | grep -q "^results: all three agree" &&
     echo "$out" | grep -Eq "^kernels: .* bytes, $want(: .*)?\\)$" &&
     echo "$out" | grep "^kernels: " | sed 's/^[^(]*([^(]*(//' | grep -Eq -- "$reason"; then ok
  else bad "$name: rc $rc, expected jit '$want' ($reason): $(echo "$out" | grep -E '^(results|kernels):') $(cat "$tmp/err")"; fi
}
extra=()
with_cc() { env CC="$cc" "$@"; }

# ---- the compiler: a wrapper around the real one, whose text, version and path change
cc=$tmp/bin/cc1
mkdir -p "$tmp/bin"
printf '#!/bin/sh\nexec %s "$@"\n' "$realcc" >"$cc"
chmod +x "$cc"
run "compiler: first build" built "" with_cc
# the entry holds the specialized kernel alone: the generic one is the loaded library's (ndgen
# generate --specialized-only), so the JIT does not compile it again
syms=$(nm -D --defined-only "$cache"/*.so)
echo "$syms" | grep -q ' nd_sub__f32__t0$' && ! echo "$syms" | grep -q '__generic$' && ok ||
  bad "JIT library symbols: $(echo "$syms" | grep ' nd_')"
run "compiler: unchanged" cache "" with_cc
echo "# edited" >>"$cc"
run "compiler: its executable edited" rebuilt "stale: an input file changed" with_cc
run "compiler: edited, again" cache "" with_cc
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "cc1 (test) 99.0"; exit 0; }\nexec %s "$@"\n' "$realcc" >"$tmp/bin/v"
cat "$tmp/bin/v" >"$cc"
run "compiler: another --version" built "" with_cc
cp -p "$cc" "$tmp/bin/cc2"
cc=$tmp/bin/cc2
run "compiler: another path" built "" with_cc
n=$(ls "$cache"/*.manifest | wc -l)
[ "$n" = 3 ] && ok || bad "three compilers should make three entries: $(ls "$cache")"

# ---- CC with arguments: split into words, run directly (no shell: the ';' below is an argument)
cat >"$tmp/bin/argcc" <<EOF
#!/bin/sh
printf '%s\n' "\$@" >>"$tmp/args"
[ "\$1" = "--marker=a;b" ] || { echo "argcc: first argument '\$1'" >&2; exit 1; }
shift
exec $realcc "\$@"
EOF
chmod +x "$tmp/bin/argcc"
cc="$tmp/bin/argcc --marker=a;b"
run "CC with arguments" built "" with_cc
grep -qx -- "--version" "$tmp/args" && grep -qx -- "-shared" "$tmp/args" && ok || bad "argcc saw: $(cat "$tmp/args")"
cc="$realcc -m64"
run "CC=\"cc -m64\"" built "" with_cc
run "CC=\"cc -m64\", again" cache "" with_cc
# a compiler whose path has a blank: one word
mkdir -p "$tmp/my tools"
cp -p "$tmp/bin/cc1" "$tmp/my tools/cc"
cc="$tmp/my tools/cc"
run "compiler path with a blank" built "" with_cc

# ---- spec and cache paths with blanks
mkdir -p "$tmp/a b"
cp -r "$(dirname "$0")/../specs" "$tmp/a b/specs"
saved=$cache
cache="$tmp/a b/cache dir"
extra=(--spec-dir "$tmp/a b/specs")
run "blanks: first build" built "" env
run "blanks: unchanged" cache "" env
grep -q "^dep [0-9a-f]* [0-9]* $tmp/a b/specs/eltwise.lua$" "$cache"/*.manifest && ok || bad "spec path: $(cat "$cache"/*.manifest)"
echo "-- edited" >>"$tmp/a b/specs/eltwise.lua"
run "blanks: spec edited" rebuilt "stale: an input file changed" env
# a spec edited while its kernel is built (a compiler that edits it first): not cached, built again
cat >"$tmp/editcc" <<EOF
#!/bin/sh
echo "-- edited during the build" >>"$tmp/a b/specs/eltwise.lua"
exec "$realcc" "\$@"
EOF
chmod +x "$tmp/editcc"
cc=$tmp/editcc
run "blanks: spec edited during the build" fallback "eltwise.lua changed while its kernel was built; not caching it" with_cc
run "blanks: built again once left alone" rebuilt "stale: an input file changed" env
extra=()
cache=$saved

# ---- the environment the compiler reads: another CPATH is another entry (a cache of their own)
cache=$tmp/cpath-cache
run "CPATH: unset" built "" env
run "CPATH: set" built "" env CPATH="$tmp"
run "CPATH: set, again" cache "" env CPATH="$tmp"

# ---- a lock another process holds too long: its pid named, the generic kernel runs
rm -f "$cache"/*
run "lock: first build" built "" env
key=$(basename "$(ls "$cache"/*.manifest)" .manifest)
rm -f "$cache/$key.manifest"
echo 424242 >"$cache/.lock-$key"
# The holder is the process that holds the lock: `flock FILE sleep 30` would leave its sleep holding it
# after the kill, and the next build would wait out the 30 s (it did: 29 of the test's 38 s).
(flock 9 && exec sleep 30) 9<"$cache/.lock-$key" &
holder=$!
sleep 0.3
run "lock held" fallback "entry $key has been locked by process 424242 for more than 1 s" env NDGEN_JIT_LOCK_WAIT=1
kill $holder 2>/dev/null; wait $holder 2>/dev/null
run "lock free again" built "" env
out=$(NDGEN_JIT_LOCK_WAIT=forever "$ndrun" compare --cache-dir "$cache" "${case_args[@]}" 2>&1)
echo "$out" | grep -q "lock_wait nan: expected seconds in (0, 86400\] (NDGEN_JIT_LOCK_WAIT 'forever')" && ok ||
  bad "NDGEN_JIT_LOCK_WAIT=forever: $out"
cache=$saved

# ---- the linked archive, swapped for a changed copy in a private mount namespace (needs root)
archive=$(sed -n 's/^dep [0-9a-f]* [0-9]* \(.*libnd_dist\.a\)$/\1/p' "$(ls "$cache"/*.manifest | head -n 1)")
if [ -z "$archive" ]; then
  bad "no libnd_dist.a in the manifest: $(cat "$cache"/*.manifest)"
elif [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  cp "$archive" "$tmp/changed.a"
  echo 'int ndgen_test_extra_member(void) { return 1; }' >"$tmp/extra.c"
  "$realcc" -c -fPIC -o "$tmp/extra.o" "$tmp/extra.c" && ar q "$tmp/changed.a" "$tmp/extra.o"
  run "archive: before" built "" env
  run "archive: changed" rebuilt "stale: an input file changed" \
    unshare -m sh -c 'mount --bind "$0" "$1" && shift && exec "$@"' "$tmp/changed.a" "$archive"
  run "archive: back" rebuilt "stale: an input file changed" env
else
  skip "a changed archive needs root and unshare -m"
fi

# ---- a read-only cache: a valid entry is used; a damaged or missing one falls back, with the reason
ro_run() { # NAME EXPECTED REASON: the cache read-only for this one run
  if [ "$(id -u)" = 0 ]; then
    run "$1" "$2" "$3" unshare -m sh -c 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"' "$cache"
  else
    chmod 555 "$cache"; run "$1" "$2" "$3" env; chmod 700 "$cache"
  fi
}
if [ "$(id -u)" = 0 ] && ! unshare -m true 2>/dev/null; then
  skip "a read-only cache needs unshare -m as root"
else
  rm -rf "$cache"
  run "read-only: first build" built "" env
  ro_run "read-only: valid" cache ""
  printf 'X' | dd of="$(ls "$cache"/*.so)" bs=1 seek=4000 conv=notrunc status=none
  ro_run "read-only: damaged" fallback "cannot lock entry [0-9a-f]+ to rebuild it \\(library damaged or missing\\)"
  grep -q "^ndrun: warning: jit: cache folder $cache: cannot lock entry .*; the generic kernel runs" "$tmp/err" && ok ||
    bad "read-only, damaged: the warning: $(cat "$tmp/err")"
  rm -f "$cache"/*
  ro_run "read-only: empty" fallback "to build it \\(no entry\\)"
  run "writable again" built "" env
fi

echo "test_jit_inputs: $pass passed, $fail failed"
[ $fail = 0 ]
