#!/usr/bin/env bash
# test_outputs.sh NDGEN TEMPLATES - ndgen replaces only regular files or new names, never an input of the
# run (spec, template, through hard links and linked folders) nor one output with another (--depfile,
# --stamp, two specs of one name in --output-dir), writes a multi-spec run all or nothing, and leaves
# no temporary file: on errors, on SIGTERM, and (removed by the next run) after kill -9 at random
# moments, after which a normal run succeeds.
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

# an output that is an input, or another output: refused before anything is written, inputs intact
mkdir -p "$tmp/tpl" "$tmp/other"
cp "$templates/page_copy.c" "$tmp/tpl/" && cp "$tmp/specs/one.lua" "$tmp/other/one.lua"
spec_sum=$(md5sum <"$tmp/specs/one.lua") tpl_sum=$(md5sum <"$tmp/tpl/page_copy.c")
intact() { [ "$(md5sum <"$tmp/specs/one.lua")" = "$spec_sum" ] && [ "$(md5sum <"$tmp/tpl/page_copy.c")" = "$tpl_sum" ]; }
gtpl() { "$ndgen" generate --templates "$tmp/tpl" "$@" 2>"$tmp/err"; }
gtpl --output "$tmp/specs/one.lua" "$tmp/specs/one.lua"
check "--output the spec itself is refused" '[ $? -eq 1 ] && grep -q "one.lua: it is .*one.lua, which this run reads" "$tmp/err" && intact'
ln "$tmp/specs/one.lua" "$tmp/out/hard.c"
gtpl --output "$tmp/out/hard.c" "$tmp/specs/one.lua"
check "--output a hard link to the spec is refused" '[ $? -eq 1 ] && grep -q "hard.c: it is .*one.lua, which this run reads" "$tmp/err" && intact'
rm -f "$tmp/out/hard.c"
gtpl --output "$tmp/tpl/page_copy.c" "$tmp/specs/one.lua"
check "--output the template is refused" '[ $? -eq 1 ] && grep -q "page_copy.c: it is .*page_copy.c, which this run reads" "$tmp/err" && intact'
ln -s "$tmp/tpl" "$tmp/tpl_link"
gtpl --output "$tmp/tpl_link/page_copy.c" "$tmp/specs/one.lua"
check "--output the template through a linked folder is refused" '[ $? -eq 1 ] && grep -q "which this run reads" "$tmp/err" && intact'
gtpl --output "$tmp/out/x.c" --depfile "$tmp/out/../out/x.c" "$tmp/specs/one.lua"
check "--depfile naming --output is refused" \
  '[ $? -eq 1 ] && grep -q "\-\-depfile .*x.c: it is also --output .*x.c" "$tmp/err" && [ -z "$(ls -A "$tmp/out")" ]'
gtpl --output "$tmp/out/x.c" --stamp "$tmp/out/x.c" "$tmp/specs/one.lua"
check "--stamp naming --output is refused" '[ $? -eq 1 ] && grep -q "\-\-stamp .*x.c: it is also --output" "$tmp/err" && [ -z "$(ls -A "$tmp/out")" ]'
gtpl --output-dir "$tmp/out" "$tmp/specs/one.lua" "$tmp/other/one.lua"
check "two specs of one name in --output-dir are refused" \
  '[ $? -eq 1 ] && grep -q "one.c: it is also the output .*one.c" "$tmp/err" && [ -z "$(ls -A "$tmp/out")" ]'
"$ndgen" registry --output "$tmp/out/r.c" --stamp "$tmp/out/r.c" one 2>"$tmp/err"
check "ndgen registry with --stamp naming --output is refused" '[ $? -eq 1 ] && grep -q "it is also --output" "$tmp/err"'
# the stamp: a symbolic link or a named pipe is refused, not followed or waited on
echo keep >"$tmp/target.stamp" && ln -s "$tmp/target.stamp" "$tmp/out/link.stamp"
gtpl --output "$tmp/out/s.c" --stamp "$tmp/out/link.stamp" "$tmp/specs/one.lua"
check "a symlinked --stamp is refused and its target untouched" \
  '[ $? -eq 1 ] && grep -q "link.stamp: the stamp file is not a regular file" "$tmp/err" && [ "$(cat "$tmp/target.stamp")" = keep ]'
mkfifo "$tmp/out/fifo.stamp"
timeout 20 "$ndgen" generate --templates "$tmp/tpl" --output "$tmp/out/s.c" --stamp "$tmp/out/fifo.stamp" \
  "$tmp/specs/one.lua" 2>"$tmp/err"
check "a --stamp that is a named pipe is refused without waiting" \
  '[ $? -eq 1 ] && grep -q "fifo.stamp: the stamp file is not a regular file" "$tmp/err" && [ -p "$tmp/out/fifo.stamp" ]'
rm -rf "$tmp/out" && mkdir "$tmp/out"
gtpl --output "$tmp/out/s.c" --stamp "$tmp/out/s.stamp" "$tmp/specs/one.lua"
check "a regular --stamp is written" '[ $? -eq 0 ] && [ -f "$tmp/out/s.stamp" ] && [ -f "$tmp/out/s.c" ]'
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
