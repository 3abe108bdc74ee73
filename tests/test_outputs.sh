#!/usr/bin/env bash
# test_outputs.sh NDGEN TEMPLATES - ndgen replaces only regular files or new names, writes a multi-spec run
# all or nothing, and leaves no temporary file: on errors, on SIGTERM, and (removed by the next run)
# after kill -9 at random moments, after which a normal run succeeds.
set -u
ndgen=$1 templates=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/specs" "$tmp/out"
pass=0 fail=0
check() { if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1" >&2; fi; }

spec() { # spec NAME SHAPE: a page_copy op with one target
  printf 'op{name="copy", template="page_copy.c", inputs={{name="a",dtype="f32"}}, outputs={{name="out",dtype="f32"}},
  targets={{all={shape={%s}, shard={16,64}, grid="2x2"}}}}\n' "$2" >"$tmp/specs/$1.lua"
}
spec one 64,64
spec two 128,64
printf 'error("broken on purpose")\n' >"$tmp/specs/broken.lua"
gen() { "$ndgen" generate --templates "$templates" "$@" 2>"$tmp/err"; }

# not a regular file: refused, and left as it was
mkfifo "$tmp/out/fifo"
gen --output "$tmp/out/fifo" "$tmp/specs/one.lua"
check "a named pipe is refused" '[ $? -eq 1 ] && grep -q "fifo: it is a named pipe; ndgen writes only regular files or new names" "$tmp/err" && [ -p "$tmp/out/fifo" ]'
echo keep >"$tmp/target.c" && ln -s "$tmp/target.c" "$tmp/out/link.c"
gen --output "$tmp/out/link.c" "$tmp/specs/one.lua"
check "a symlink is refused and stays a symlink to an untouched file" \
  '[ $? -eq 1 ] && grep -q "link.c: it is a symbolic link" "$tmp/err" && [ -L "$tmp/out/link.c" ] && [ "$(cat "$tmp/target.c")" = keep ]'
mkdir "$tmp/out/dir.c"
gen --output "$tmp/out/dir.c" "$tmp/specs/one.lua"
check "a folder is refused" '[ $? -eq 1 ] && grep -q "dir.c: it is a folder" "$tmp/err"'
gen --output /dev/null "$tmp/specs/one.lua"
check "/dev/null is refused and stays a device" '[ $? -eq 1 ] && grep -q "/dev/null: it is a character device" "$tmp/err" && [ -c /dev/null ]'
rm -rf "$tmp/out" && mkdir "$tmp/out"

# all or nothing over several specs
gen --output-dir "$tmp/out" "$tmp/specs/one.lua" "$tmp/specs/two.lua" "$tmp/specs/broken.lua"
check "a failing spec fails the run" '[ $? -eq 1 ] && grep -q "broken.lua:1: broken on purpose" "$tmp/err"'
check "and writes none of the specs before it" '[ -z "$(ls -A "$tmp/out")" ]'
gen --output-dir "$tmp/out" "$tmp/specs/one.lua" "$tmp/specs/two.lua"
check "without it, both are written" '[ -f "$tmp/out/one.c" ] && [ -f "$tmp/out/two.c" ] && [ -z "$(ls -A "$tmp/out" | grep ndgen-tmp)" ]'
sum=$(cat "$tmp/out/one.c" "$tmp/out/two.c" | md5sum)

# SIGTERM removes the temporary files of the run it stops
for i in 1 2 3 4 5; do
  "$ndgen" generate --templates "$templates" --output-dir "$tmp/out" "$tmp/specs/one.lua" "$tmp/specs/two.lua" 2>/dev/null &
  pid=$!
  sleep "0.0$((RANDOM % 9 + 1))"
  kill -TERM $pid 2>/dev/null
  wait $pid 2>/dev/null
done
check "SIGTERM leaves no temporary file" '[ -z "$(ls -A "$tmp/out" | grep ndgen-tmp)" ]'

# kill -9 at random moments: whole files only, and the next run removes what was left and succeeds
spec one 64,32 # the content changes, so the killed runs do write
left=0
for i in $(seq 1 20); do
  "$ndgen" generate --templates "$templates" --output-dir "$tmp/out" "$tmp/specs/one.lua" "$tmp/specs/two.lua" 2>/dev/null &
  pid=$!
  sleep "0.0$((RANDOM % 9 + 1))"
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  n=$(ls -A "$tmp/out" | grep -c ndgen-tmp)
  left=$((left + n))
  for f in "$tmp/out/one.c" "$tmp/out/two.c"; do # every file in place is whole: it ends with the registry
    tail -n 1 "$f" | grep -q "^const nda_kernel_group ndk_group_\|^};" || { echo "FAIL: $f is cut short" >&2; fail=$((fail + 1)); }
  done
done
echo "kill -9: temporary files found after the kills, summed over 20: $left (each removed by a later run)"
gen --output-dir "$tmp/out" "$tmp/specs/one.lua" "$tmp/specs/two.lua"
check "after the kills a normal run succeeds" '[ $? -eq 0 ]'
check "and no temporary file survives it" '[ -z "$(ls -A "$tmp/out" | grep ndgen-tmp)" ]'
check "and the output is the new spec's" '[ "$(cat "$tmp/out/one.c" "$tmp/out/two.c" | md5sum)" != "$sum" ]'

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
