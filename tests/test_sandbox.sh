#!/usr/bin/env bash
# test_sandbox.sh NDGEN TEMPLATES - a spec cannot outlive its budgets or leave its folder: loops behind
# pcall, xpcall, metamethods and finalizers stop with file:line within the instruction budget, memory
# bombs stop at the cap, a loop and a C call allocating in a loop stop at the wall-clock limit, an include or reference source that resolves outside its folder (a symlink)
# is refused, sources past 16 MiB are not read, and
# every error names file:line whatever value was thrown. Each case: exit 1, its message, nothing written,
# within a time limit.
set -u
ndgen=$1 templates=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/specs" "$tmp/out" "$tmp/outside"
pass=0 fail=0
op='op{name="x", template="page_copy.c", inputs={{name="a",dtype="f32"}}, outputs={{name="out",dtype="f32"}}}'

# expect NAME 'LUA' REGEX [SECONDS] [ARGS]: the first stderr line matches REGEX (extended)
expect() {
  local name=$1 lua=$2 want=$3 limit=${4:-30}
  printf '%s\n' "$lua" >"$tmp/specs/$name.lua"
  rm -rf "$tmp/out"/*
  timeout "$limit" "$ndgen" generate ${5:-} --templates "$templates" --output "$tmp/out/k.c" "$tmp/specs/$name.lua" \
    >/dev/null 2>"$tmp/err"
  local rc=$?
  if [ $rc -ne 1 ]; then fail=$((fail + 1)); echo "FAIL $name: exit $rc, want 1 ($(head -c 300 "$tmp/err"))" >&2; return; fi
  if [ -n "$(ls -A "$tmp/out")" ]; then fail=$((fail + 1)); echo "FAIL $name: left $(ls "$tmp/out")" >&2; return; fi
  if ! head -n 1 "$tmp/err" | grep -qE -- "$want"; then
    fail=$((fail + 1)); echo "FAIL $name: got '$(head -n 1 "$tmp/err")', want /$want/" >&2; return
  fi
  pass=$((pass + 1))
}

budget='the spec ran for more than [0-9]+ Lua instructions'
s='[^ ]*specs/'
expect pcall_loop 'while true do pcall(function() while true do end end) end' "^${s}pcall_loop.lua:1: $budget"
expect xpcall_loop 'while true do xpcall(function() while true do end end, function() while true do end end) end' \
  "^${s}xpcall_loop.lua:1: $budget"
expect meta_loop 'local t = setmetatable({}, {__index = function() while true do end end}) while true do pcall(function() return t.x end) end' \
  "^${s}meta_loop.lua:1: $budget"
expect gc_loop "setmetatable({}, {__gc = function() while true do end end}) $op" \
  "^${s}gc_loop.lua:1: setmetatable: __gc finalizers are not allowed in specs$"
expect close_loop "do local x <close> = setmetatable({}, {__close = function() while true do end end}) end $op" \
  "^${s}close_loop.lua:1: $budget"
expect no_coroutine 'coroutine.wrap(function() while true do end end)()' "^${s}no_coroutine.lua:1: attempt to index a nil value \(global 'coroutine'\)$"
expect no_collect 'collectgarbage()' "^${s}no_collect.lua:1: attempt to call a nil value \(global 'collectgarbage'\)$"
expect rep_bomb 'local t = {} for i = 1, 8 do t[i] = string.rep("x", 1e8) end' \
  "^${s}rep_bomb.lua: the spec used more than 256 MB of memory \(--spec-memory sets the cap\)$" 60 "--spec-memory 256"
expect rep_huge 'local s = string.rep("x", 2e9)' \
  "^${s}rep_huge.lua: the spec used more than 1024 MB of memory \(--spec-memory sets the cap\)$"
expect table_bomb 'local t = {} while true do t[#t + 1] = {} end' \
  "^${s}table_bomb.lua: the spec used more than 64 MB of memory" 30 "--spec-memory 64"
expect error_table 'local x = 1
error({})' "^${s}error_table.lua:2: error raised with a table value instead of a message$"
expect error_level0 'error("no position", 0)' "^${s}error_level0.lua:1: no position$"
expect error_nil 'error()' "^${s}error_nil.lua:1: error raised with a nil value instead of a message$"
expect include_dot 'include "."' "^${s}include_dot.lua:1: include '.': not a regular file$"
expect pattern_bomb 'print(string.find(string.rep("a", 28), string.rep("a*", 28) .. "b"))' \
  "^${s}pattern_bomb.lua:1: string.find: a 57-byte pattern over a 28-byte subject could backtrack past the spec's budget"
expect method_bomb 'print(("a"):rep(1e6):find(("a"):rep(5e5) .. "b", 1, true))' \
  "^${s}method_bomb.lua:1: string.find: a 500001-byte pattern over a 1000000-byte subject"
expect patterns_work "assert(('x=1,y=2'):gsub('(%w+)=(%w+)', '%2=%1') == '1=x,2=y' and ('a.b'):find('.', 1, true) == 2)
error('patterns work', 0)" "^${s}patterns_work.lua:2: patterns work$"
# C loops an argument sets, not memory: refused before they start, or (empty repetitions) done at once
expect rep_empty 'assert(string.rep("", 1 << 62) == "" and (""):rep(1 << 62, "") == "" and ("ab"):rep(2, "") == "abab")
error("rep done", 0)' "^${s}rep_empty.lua:2: rep done$" 10
expect move_huge 'table.move({}, 1, 1 << 50, 2)' \
  "^${s}move_huge.lua:1: table.move: 1125899906842624 elements are more than one call may walk in a spec" 10
# big(TOP): a table of 12 to 40 entries whose border (#) is TOP, a power of 2: the array part holds
# 1..8, and from t[9] Lua's length doubles through the hash part (t[16], t[32], .., t[TOP])
big='local function big(top) local t = {} for _, k in ipairs({1, 2, 3, 4, 8, 9}) do t[k] = 8 end
local k = 16 while k <= top do t[k] = 8 k = k * 2 end return t end'
expect insert_border "$big local t = big(1 << 40) assert(#t == 1 << 40) table.insert(t, 1, 0)" \
  "^${s}insert_border.lua:2: table.insert: 1099511627776 elements are more than one call may walk" 10
expect remove_border "$big local t = big(1 << 40) table.remove(t, 1)" "^${s}remove_border.lua:2: table.remove: " 10
expect sort_len 'table.sort(setmetatable({}, {__len = function() return 1 << 40 end}))' "^${s}sort_len.lua:1: table.sort: " 10
expect concat_len 'table.concat(setmetatable({}, {__len = function() return 1 << 40 end}))' "^${s}concat_len.lua:1: table.concat: " 10
expect targets_border "$big
op{name='x', template='page_copy.c', inputs={{name='a',dtype='f32'}}, outputs={{name='out',dtype='f32'}}, targets = big(1 << 30)}" \
  "^${s}targets_border.lua:3: op 'x': field 'targets' has 1073741824 entries; at most 65536$" 10
# a shape whose border is 2^32 + 1, which an int read as 1 dim
expect shape_border "$big local s = big(1 << 32) s[(1 << 32) + 1] = 8 assert(#s == (1 << 32) + 1)
op{name='x', template='page_copy.c', inputs={{name='a',dtype='f32'}}, outputs={{name='out',dtype='f32'}},
   targets = {{all = {shape = s, shard = {8}, grid = '1x1'}}}}" "^${s}shape_border.lua:3: .*field 'shape' has 4294967297 dims; give 1 to 8$" 10
expect ops_many "for i = 1, 70000 do $op end" "^${s}ops_many.lua:1: op: more than 65536 ops in one spec$" 30
echo 'return 1' >"$tmp/outside/secret.lua"
ln -s "$tmp/outside/secret.lua" "$tmp/specs/link.lua"
expect include_link 'include "link.lua"' "^${s}include_link.lua:1: include 'link.lua': it resolves to .*/outside/secret.lua, outside the spec folder "
ln -s /etc/passwd "$tmp/specs/passwd.lua"
expect include_passwd 'include "passwd.lua"' "^${s}include_passwd.lua:1: include 'passwd.lua': it resolves to /etc/passwd, outside the spec folder "

# a reference source is read only inside the folder it is found in, and no source past 16 MiB
echo 'static void ref(void) {}' >"$tmp/outside/secret.c"
ln -s "$tmp/outside/secret.c" "$tmp/specs/evil.c"
expect reference_link "op{name='x', template='page_copy.c', reference = {source = 'evil.c', name = 'ref'},
   inputs={{name='a',dtype='f32'}}, outputs={{name='out',dtype='f32'}}}" \
  "^${s}reference_link.lua:1: op 'x': reference source 'evil.c': it resolves to .*/outside/secret.c, outside the folder "
truncate -s 17M "$tmp/specs/huge.c"
expect reference_huge "op{name='x', template='page_copy.c', reference = {source = 'huge.c', name = 'ref'},
   inputs={{name='a',dtype='f32'}}, outputs={{name='out',dtype='f32'}}}" \
  "^${s}reference_huge.lua:1: op 'x': reference source .*huge.c: cannot read it: larger than 16 MiB"
mkdir -p "$tmp/big"
truncate -s 17M "$tmp/big/big.c"
printf '%s\n' "op{name='x', template='big.c', inputs={{name='a',dtype='f32'}}, outputs={{name='out',dtype='f32'}}}" \
  >"$tmp/specs/big.lua"
rm -rf "$tmp/out"/*
timeout 30 "$ndgen" generate --templates "$tmp/big" --output "$tmp/out/k.c" "$tmp/specs/big.lua" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "big.c:1: cannot read the template: larger than 16 MiB" "$tmp/err" && [ -z "$(ls -A "$tmp/out")" ]
then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL big template: exit $rc: $(head -c 300 "$tmp/err")" >&2; fi

# The wall clock: a loop stops at --spec-seconds with file:line (before the instruction budget), and a
# loop of large allocations, whose few instructions the budget would let run for minutes (10^7 string.rep
# of 1 MiB), stops there too. --spec-seconds takes only finite seconds in (0, a day].
wall='the spec ran for more than 0.3 seconds of wall-clock time \(--spec-seconds sets the limit\)'
expect wall_loop 'while true do end' "^${s}wall_loop.lua:1: $wall" 20 "--spec-seconds 0.3"
expect wall_alloc 'for i = 1, 1e7 do local x = string.rep("x", 1 << 20) end' "^${s}wall_alloc.lua(:1)?: $wall" 20 \
  "--spec-seconds 0.3"
for bad in 0 -1 inf nan 1e9 2x ''; do
  printf '%s\n' "$op" >"$tmp/specs/ok.lua"
  "$ndgen" generate --spec-seconds "$bad" --templates "$templates" --output "$tmp/out/k.c" "$tmp/specs/ok.lua" \
    >/dev/null 2>"$tmp/err"
  rc=$?
  if [ $rc -eq 2 ] && grep -q -- "--spec-seconds $bad: expected seconds above 0, at most 86400" "$tmp/err"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL --spec-seconds '$bad': exit $rc: $(head -c 200 "$tmp/err")" >&2; fi
done

# and a plain spec still generates
printf '%s\n' "$op" >"$tmp/specs/ok.lua"
if "$ndgen" generate --templates "$templates" --output "$tmp/out/k.c" "$tmp/specs/ok.lua" 2>"$tmp/err"; then
  pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL a plain spec: $(cat "$tmp/err")" >&2; fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
