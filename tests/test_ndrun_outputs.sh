#!/usr/bin/env bash
# test_ndrun_outputs.sh NDRUN - the files ndrun bench writes go through nd_files, as ndgen's do: a
# symbolic link, named pipe, device or folder as --json-out or --svg-out is refused before the suite
# runs (and stays what it was), as are the two options naming one file; a --filter that matches no case
# is a usage error that leaves the last report alone; a good run writes both files whole.
set -u
ndrun=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0 fail=0
check() { if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1 ($(head -c 300 err))" >&2; fi; }
export NDGEN_CACHE_DIR="$tmp/cache"
one=(bench --tiny --filter 'add on 2x1')

timeout 300 "$ndrun" "${one[@]}" --json-out r.json --svg-out r.svg >out 2>err
check "a good run writes both files" '[ $? -eq 0 ] && grep -q "\"add on 2x1 cores\"" r.json && grep -q "<svg" r.svg'
cp r.json r.json.before

timeout 60 "$ndrun" bench --tiny --filter no_such_case --json-out r.json >out 2>err
check "a filter matching nothing is a usage error" \
  '[ $? -eq 2 ] && grep -q "filter .no_such_case. matches no case" err && cmp -s r.json r.json.before'

echo secret >target
ln -s target link.json
timeout 60 "$ndrun" "${one[@]}" --json-out link.json >out 2>err
check "a symlink is refused and its target untouched" \
  '[ $? -eq 1 ] && grep -q "link.json: it is a symbolic link; ndrun writes only regular files" err &&
   [ -L link.json ] && [ "$(cat target)" = secret ] && ! grep -q "add on 2x1" out'

mkfifo fifo.json
timeout 60 "$ndrun" "${one[@]}" --json-out fifo.json >out 2>err
check "a named pipe is refused, without waiting on it" '[ $? -eq 1 ] && grep -q "fifo.json: it is a named pipe" err && [ -p fifo.json ]'

timeout 60 "$ndrun" "${one[@]}" --json-out /dev/null >out 2>err
check "/dev/null is refused and stays a device" '[ $? -eq 1 ] && grep -q "/dev/null: it is a character device" err && [ -c /dev/null ]'

mkdir dir.svg
timeout 60 "$ndrun" "${one[@]}" --svg-out dir.svg >out 2>err
check "a folder is refused" '[ $? -eq 1 ] && grep -q "dir.svg: it is a folder" err'

timeout 60 "$ndrun" "${one[@]}" --json-out same --svg-out ./same >out 2>err
check "--json-out and --svg-out naming one file are refused" \
  '[ $? -eq 1 ] && grep -q "\-\-svg-out ./same: it is also --json-out same" err && [ ! -e same ]'

check "no temporary file is left behind" '[ -z "$(ls -A | grep -e tmp)" ]'
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
