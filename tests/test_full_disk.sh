#!/usr/bin/env bash
# test_full_disk.sh NDGEN NDRUN SPECS TEMPLATES - a full disk (a small tmpfs in a private mount namespace,
# as root) is reported by name and loses nothing: ndgen generate fails with "No space left on device",
# the old output stays as it was and no temporary file is left; the JIT, whose cache is on the full disk,
# falls back to the generic kernel with a warning saying so, and the run still agrees.
set -u
. "$(dirname "$0")/jqe.sh"
ndgen=$1 ndrun=$2 specs=$3 templates=$4
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
  echo "SKIP: a full disk needs root and unshare -m (a tmpfs in a private mount namespace)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
mkdir -p "$tmp/disk"
# inside: mount a 256 KiB tmpfs on disk/, put the old output there, fill the rest, then run both tools
cat >"$tmp/inside.sh" <<EOF
set -u
mount -t tmpfs -o size=256k,mode=0755 tmpfs "$tmp/disk" || exit 3
echo "old output" >"$tmp/disk/k.c"
mkdir -m 700 "$tmp/disk/cache"
dd if=/dev/zero of="$tmp/disk/filler" bs=4k count=1000 2>/dev/null
"$ndgen" generate --templates "$templates" --output "$tmp/disk/k.c" "$specs/eltwise.lua" 2>"$tmp/gen.err"
echo \$? >"$tmp/gen.rc"
cat "$tmp/disk/k.c" >"$tmp/k.after"
ls -A "$tmp/disk" >"$tmp/left"
"$ndrun" compare --cache-dir "$tmp/disk/cache" --op sub --shape 24,40 --shard 8,40 --grid 3x1 --min-time 0 \\
  --repeats 1 --no-probes --json >"$tmp/run.out" 2>"$tmp/run.err"
echo \$? >"$tmp/run.rc"
EOF
unshare -m bash "$tmp/inside.sh"
pass=0 fail=0
check() { if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1" >&2; fi; }
check "ndgen fails on a full disk, naming it ($(head -c 200 "$tmp/gen.err"))" \
  '[ "$(cat "$tmp/gen.rc")" = 1 ] && grep -q "No space left on device" "$tmp/gen.err"'
check "the old output is kept" '[ "$(cat "$tmp/k.after")" = "old output" ]'
check "no temporary file is left ($(tr '\n' ' ' <"$tmp/left"))" '! grep -q "ndgen-tmp" "$tmp/left"'
check "the JIT on a full disk falls back, saying so ($(head -c 300 "$tmp/run.err"))" \
  '[ "$(cat "$tmp/run.rc")" = 0 ] && jqe ".match and .jit == \"fallback\"" "$tmp/run.out" >/dev/null &&
   grep -Eq "No space left on device|disk of the cache folder is full" "$tmp/run.err"'
echo "test_full_disk: $pass passed, $fail failed"
[ $fail = 0 ]
