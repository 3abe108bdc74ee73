#!/usr/bin/env bash
# test_generate_files.sh NDGEN SRC_DIR GENERATED_DIR - what ndgen generate promises about its files:
#   - editing a template changes the kernels generated from it, and a spec that does not use it keeps
#     its output untouched (same bytes, same timestamp); an unchanged rerun touches nothing;
#   - a failed run leaves the previous output as it was;
#   - #line directives point back to the template, and --no-line drops them;
#   - files read like written ones (includes and head comment once, constants folded), and --parts N
#     splits a spec over N files that compile alone;
#   - specialized kernels contain no call to the generic accessor (checked on the bundled library).
set -u
ndgen=$1 src=$2 generated=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { if eval "$2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1" >&2; fi; }
mtime() { stat -c '%.9Y' "$1"; }

mkdir -p "$tmp/templates" "$tmp/specs" "$tmp/out"
cp "$src/templates/eltwise_unary.c" "$src/templates/eltwise_rows.h" "$src/templates/target.h" "$src/templates/page_copy.c" \
  "$tmp/templates/"
cat >"$tmp/specs/unary.lua" <<'LUA'
op { name = "twice", template = "eltwise_unary.c", params = { EXPR = "((x) * 2.0f)" },
     inputs = { { name = "a", dtype = "f32" } }, outputs = { { name = "out", dtype = "f32" } },
     targets = { { all = { shape = { 64, 64 }, shard = { 16, 64 }, grid = "2x2" } } } }
LUA
cat >"$tmp/specs/copy.lua" <<'LUA'
op { name = "copy", template = "page_copy.c",
     inputs = { { name = "in", dtype = "f32" } }, outputs = { { name = "out", dtype = "f32" } },
     targets = { { all = { shape = { 64, 64 }, shard = { 16, 64 }, grid = "2x2" } } } }
LUA
gen() { "$ndgen" generate --templates "$tmp/templates" --output-dir "$tmp/out" "$tmp/specs/unary.lua" "$tmp/specs/copy.lua"; }

check "first generation" 'gen'
u0=$(mtime "$tmp/out/unary.c") c0=$(mtime "$tmp/out/copy.c") usum=$(md5sum <"$tmp/out/unary.c")
sleep 0.05
check "unchanged rerun" 'gen'
check "unchanged rerun leaves unary.c untouched" '[ "$(mtime "$tmp/out/unary.c")" = "$u0" ]'
check "unchanged rerun leaves copy.c untouched" '[ "$(mtime "$tmp/out/copy.c")" = "$c0" ]'

# edit the unary template: its kernels change, the copy spec's output is not rewritten
sed -i 's/y\[k\] = NDT_STORE(NDT_EXPR(NDT_LOAD(x\[k\])));/y[k] = NDT_STORE(NDT_EXPR(NDT_LOAD(x[k])) + 0.5f); \/* edited *\//' \
  "$tmp/templates/eltwise_unary.c"
check "template edited" 'grep -q "edited" "$tmp/templates/eltwise_unary.c"'
sleep 0.05
check "regeneration after the edit" 'gen'
check "the edit reaches every unary kernel" '[ "$(grep -c "+ 0.5f); /\* edited \*/" "$tmp/out/unary.c")" = 2 ]'
check "unary.c was rewritten" '[ "$(md5sum <"$tmp/out/unary.c")" != "$usum" ] && [ "$(mtime "$tmp/out/unary.c")" != "$u0" ]'
check "copy.c, whose template did not change, was not rewritten" '[ "$(mtime "$tmp/out/copy.c")" = "$c0" ]'

# a failed run keeps the previous output
u1=$(mtime "$tmp/out/unary.c") usum1=$(md5sum <"$tmp/out/unary.c")
echo 'int broken = ;' >>"$tmp/templates/eltwise_unary.c"
"$ndgen" generate --templates "$tmp/templates" --output "$tmp/out/unary.c" "$tmp/specs/unary.lua" 2>"$tmp/err"
check "a template that does not parse fails" '[ $? -eq 1 ] && grep -q "eltwise_unary.c:[0-9]*:[0-9]*: error" "$tmp/err"'
check "and leaves the old output" '[ "$(md5sum <"$tmp/out/unary.c")" = "$usum1" ] && [ "$(mtime "$tmp/out/unary.c")" = "$u1" ]'
check "and no temporary file" '[ -z "$(ls "$tmp/out" | grep tmp)" ]'

# #line directives
check "#line points at the template" 'grep -qE "^#line [0-9]+ \".*page_copy.c\"" "$tmp/out/copy.c"'
first=$(grep -m1 -oE '^#line [0-9]+ ".*page_copy.c"' "$tmp/out/copy.c" | awk '{print $2}')
check "at the first line after its head of comments and #includes" \
  '[ -n "$first" ] && sed -n "$((first - 1))p" "$tmp/templates/page_copy.c" | grep -qE "^(#include|$)"'

# generated files read like written ones: includes and the template's head comment once per file,
# constants folded, one closing brace a line
check "one #include of nd_accessor.h per file" '[ "$(grep -c "^#include \"nd_accessor.h\"" "$tmp/out/unary.c")" = 1 ]'
check "the template's head comment once per file" '[ "$(grep -c "eltwise_unary.c - out = EXPR" "$tmp/out/unary.c")" = 1 ]'
check "no x / 1, x % 1, (0) * k or 0 * k" '! grep -qE "[/%] 1([^0-9]|$)|\(0\) \*|[^0-9a-z_.]0 \* " "$tmp/out/unary.c" "$tmp/out/copy.c"'
check "no pile of closing braces" '! grep -qE "} *}" "$tmp/out/unary.c" "$tmp/out/copy.c"'
check "statistics counted by the accessor's ndstat_* functions" \
  'grep -q "ndstat_reads(" "$tmp/out/unary.c" && ! grep -q "stats->" "$tmp/out/unary.c"'

# --parts N: N files named from the output, the registry group in the first, each compiles alone
mkdir -p "$tmp/parts"
check "--parts 3 generates" '"$ndgen" generate --templates "$src/templates" --parts 3 --output "$tmp/parts/unary.c" \
  --depfile "$tmp/parts/unary.d" "$tmp/specs/unary.lua"'
check "into unary.1.c, unary.2.c, unary.3.c" '[ -f "$tmp/parts/unary.1.c" ] && [ -f "$tmp/parts/unary.2.c" ] &&
  [ -f "$tmp/parts/unary.3.c" ] && [ ! -e "$tmp/parts/unary.c" ]'
check "the registry group in part 1 only" '[ "$(cat "$tmp"/parts/unary.*.c | grep -c "^const nda_kernel_group ndk_group_unary")" = 1 ] &&
  grep -q "^const nda_kernel_group ndk_group_unary" "$tmp/parts/unary.1.c"'
check "every kernel once over the parts" '[ "$(cat "$tmp"/parts/unary.*.c | grep -c "^void nd_twice__f32__")" = 2 ]'
check "the depfile names every part" 'head -n 1 "$tmp/parts/unary.d" | grep -q "unary.1.c .*unary.2.c .*unary.3.c:"'
for i in 1 2 3; do
  check "part $i compiles alone" 'cc -c -Wall -Wextra -Werror -I"$src/runtime/include" -I"$src/templates" \
    "$tmp/parts/unary.$i.c" -o "$tmp/parts/unary.$i.o"'
done
check "--parts 0 is refused" '! "$ndgen" generate --templates "$src/templates" --parts 0 --output "$tmp/parts/x.c" \
  "$tmp/specs/unary.lua" 2>/dev/null && [ ! -e "$tmp/parts/x.c" ]'
"$ndgen" generate --no-line --templates "$tmp/templates" --output "$tmp/out/noline.c" "$tmp/specs/copy.lua"
check "--no-line drops them" '! grep -q "^#line" "$tmp/out/noline.c" && grep -q "^void nd_copy__f32__generic" "$tmp/out/noline.c"'
check "the header says generated, from which spec and template, do not edit" \
  'head -n 4 "$tmp/out/copy.c" | grep -q "Generated by ndgen .* from the spec .*copy.lua and the template .*page_copy.c" &&
   head -n 4 "$tmp/out/copy.c" | grep -q "Do not edit"'

# no generic accessor call survives in a specialized kernel; generic kernels do call it (so the
# pattern is live)
calls='(^|[^A-Za-z0-9_])nda_(self|locate|page_addr|is_local|page_coord|page_id|page_read|page_write|shard_count|shard_id|page_bytes|iter_[a-z]+|parts|part|part_range|part_page_read)[ ]*\('
count() { awk -v kind="$1" -v re="$calls" '
  /^\/\* ==== / { on = ($0 ~ (kind " kernel")) } on && /^\/\* ==== registry/ { on = 0 }
  on { line = $0; while (match(line, re)) { n++; line = substr(line, RSTART + RLENGTH) } }
  END { print n + 0 }' "$generated"/*.c; }
check "specialized kernels call no generic accessor function ($(count specialized) calls)" '[ "$(count specialized)" = 0 ]'
check "generic kernels do ($(count generic) calls)" '[ "$(count generic)" -gt 0 ]'
check "the bundled library has specialized kernels" '[ "$(grep -c "specialized kernel" "$generated"/*.c | awk -F: "{s+=\$2} END {print s}")" -gt 10 ]'

# element types: every kernel of a typed template asserts its NDT_T against the operand's dtype
check "kernels carry _Static_asserts on element types" \
  '[ "$(grep -c "_Static_assert(sizeof(NDT_T) == 4 && _Generic((NDT_T)0, float: 1" "$tmp/out/unary.c")" -ge 2 ]'

# a spec's C text is the spec's: a parameter's #define carries the spec's op{} line, so a compiler
# names that line for an error in it
printf 'op { name = "oops", template = "eltwise_unary.c",\n     params = { EXPR = "((x) * 2.0f)" },\n     inputs = { { name = "a", dtype = "f32" } }, outputs = { { name = "out", dtype = "f32" } } }\n' \
  >"$tmp/specs/oops.lua"
"$ndgen" generate --templates "$src/templates" --output "$tmp/out/oops.c" "$tmp/specs/oops.lua"
check "a parameter's #define carries the spec's line" 'grep -B1 "^#define NDT_EXPR" "$tmp/out/oops.c" | grep -q "^#line 1 \".*oops.lua\""'
# and an undeclared function in a parameter is refused by ndgen itself, where the template expands it
printf 'op { name = "oops", template = "eltwise_unary.c",\n     params = { EXPR = "no_such_function(x)" },\n     inputs = { { name = "a", dtype = "f32" } }, outputs = { { name = "out", dtype = "f32" } } }\n' \
  >"$tmp/specs/oops2.lua"
"$ndgen" generate --templates "$src/templates" --output "$tmp/out/oops2.c" "$tmp/specs/oops2.lua" 2>"$tmp/err"
rc=$?
check "an undeclared function in a parameter is refused at the template's line" \
  '[ $rc -eq 1 ] && grep -q "eltwise_unary.c:[0-9]*:[0-9]*: error: implicit declaration of function .no_such_function." "$tmp/err" && [ ! -e "$tmp/out/oops2.c" ]'

# a branch the specialization makes constant keeps only the path taken: with the same paging, the
# kernel keeps the page-by-page path and loses the row path (its nda_elem_read) and the if around them
"$ndgen" generate --templates "$src/templates" --output "$tmp/out/folded.c" "$tmp/specs/unary.lua"
check "a constant branch keeps only the path taken" \
  '! grep -qE "if \((true|false)\)" "$tmp/out/folded.c" && awk "/^void nd_twice__f32__t0/,/^}/" "$tmp/out/folded.c" >"$tmp/t0.c" && grep -q "ndstat_reads" "$tmp/t0.c" && ! grep -q "elem_read" "$tmp/t0.c"'
check "and the file compiles without a warning" \
  'cc -c -Wall -Wextra -Werror -I"$src/runtime/include" -I"$src/templates" "$tmp/out/folded.c" -o "$tmp/out/folded.o"'

# translation validation: with a call left unrewritten on purpose (fault injection), ndgen refuses to
# write the file, naming the template position of the call it would have left in a specialized kernel.
# The target pages its operands differently, so the row path, which holds most calls, is the live one.
cat >"$tmp/specs/rows.lua" <<'LUA'
op { name = "twice", template = "eltwise_unary.c", params = { EXPR = "((x) * 2.0f)" },
     inputs = { { name = "a", dtype = "f32" } }, outputs = { { name = "out", dtype = "f32" } },
     targets = { { a = { shape = { 64, 64 }, shard = { 16, 64 }, grid = "2x2" },
                   out = { shape = { 64, 64 }, shard = { 64, 16 }, grid = "2x2" } } } }
LUA
for call in nda_page_bytes nda_same_paging nda_rank nda_page_coord nda_elem_read; do
  rm -f "$tmp/out/fault.c"
  spec=rows; [ $call = nda_page_bytes ] && spec=unary  # the page-by-page path's call
  NDGEN_FAULT_SKIP_CALL=$call "$ndgen" generate --templates "$src/templates" --output "$tmp/out/fault.c" \
    "$tmp/specs/$spec.lua" 2>"$tmp/err"
  rc=$?
  check "a specialized kernel left calling $call is refused" \
    '[ $rc -eq 1 ] && grep -q "eltwise_unary.c:[0-9]*:[0-9]*: $call is left in a specialized kernel" "$tmp/err" && [ ! -e "$tmp/out/fault.c" ]'
done

# a fault that leaves code which does not compile is refused too, by the same parse
NDGEN_FAULT_SKIP_CALL=nda_page_read "$ndgen" generate --templates "$src/templates" --output "$tmp/out/fault.c" \
  "$tmp/specs/unary.lua" 2>"$tmp/err"
rc=$?
check "a specialized kernel that does not compile is refused" \
  '[ $rc -eq 1 ] && grep -q "fault.c:[0-9]*:[0-9]*: error: " "$tmp/err" && [ ! -e "$tmp/out/fault.c" ]'

# the same spec gives the same bytes on every run: specs declare ops and params from pairs(), whose order
# changes from run to run (reshard.lua's params gave 3 outputs in 3 runs before params were sorted)
for spec in reshard eltwise; do
  for i in 1 2 3 4; do
    "$ndgen" generate --templates "$src/templates" --spec-dir "$src/specs" --output "$tmp/out/det.c" \
      "$src/specs/$spec.lua" && cksum <"$tmp/out/det.c"
  done >"$tmp/det.sums"
  check "specs/$spec.lua generates the same bytes in 4 runs" '[ "$(sort -u "$tmp/det.sums" | wc -l)" -eq 1 ]'
done
# math.random is seeded with a constant (Lua seeds it from the clock), and randomseed needs a seed
cat >"$tmp/specs/random.lua" <<'LUA'
local k = math.random(1, 1 << 40)
op { name = "scale", template = "eltwise_unary.c", params = { EXPR = "((x) * " .. k .. ".0f)" },
     inputs = { { name = "a", dtype = "f32", index = "..." } }, outputs = { { name = "out", dtype = "f32", index = "..." } },
     targets = { { all = { shape = { 8, 8 }, shard = { 4, 8 }, grid = "2x1" } } } }
LUA
for i in 1 2 3 4; do
  "$ndgen" generate --templates "$src/templates" --output "$tmp/out/rnd.c" "$tmp/specs/random.lua" && cksum <"$tmp/out/rnd.c"
done >"$tmp/det.sums"
check "a spec drawing math.random generates the same bytes in 4 runs" '[ "$(sort -u "$tmp/det.sums" | wc -l)" -eq 1 ]'
echo 'math.randomseed()' >"$tmp/specs/reseed.lua"
"$ndgen" generate --templates "$src/templates" --output "$tmp/out/reseed.c" "$tmp/specs/reseed.lua" 2>"$tmp/err"
rc=$?
check "math.randomseed() without a seed is refused" \
  '[ $rc -eq 1 ] && grep -q "reseed.lua:1: math.randomseed needs a seed" "$tmp/err" && [ ! -e "$tmp/out/reseed.c" ]'

# the same bytes in two checkouts at different paths (one with a blank): every bundled spec, with the
# trees mapped (--prefix-map, as ndgen_add_kernels sets it) and only installed folders recorded
for d in "$tmp/tree a" "$tmp/tree_b"; do mkdir -p "$d/out" && cp -r "$src/specs" "$src/templates" "$d/"; done
nspecs=0 ndiff=0
for spec in "$src"/specs/*.lua; do
  n=$(basename "$spec" .lua)
  grep -q "^ *op *[{(]" "$spec" || grep -q "^ *op(" "$spec" || continue # an include, not a spec
  for d in "$tmp/tree a" "$tmp/tree_b"; do
    "$ndgen" generate --templates "$d/templates" --spec-dir "$d/specs" --relocatable --installed-spec-dir share/ndgen/specs \
      --installed-template-dir share/ndgen/templates --prefix-map "$d=ndgen" --output "$d/out/$n.c" "$d/specs/$n.lua"
  done
  nspecs=$((nspecs + 1))
  cmp -s "$tmp/tree a/out/$n.c" "$tmp/tree_b/out/$n.c" || { ndiff=$((ndiff + 1)); echo "differs: specs/$n.lua" >&2; }
done
check "every bundled spec ($nspecs) generates the same bytes in two checkouts" '[ "$nspecs" -ge 8 ] && [ "$ndiff" -eq 0 ]'
check "and names neither checkout" '! grep -l -e "tree a" -e tree_b "$tmp/tree a"/out/*.c "$tmp/tree_b"/out/*.c'
"$ndgen" generate --templates "$src/templates" --prefix-map "=x" --output "$tmp/out/pm.c" "$src/specs/copy.lua" 2>"$tmp/err"
check "--prefix-map without OLD is refused" '[ $? -eq 2 ] && grep -q "prefix-map =x: expected OLD=NEW" "$tmp/err"'

# depfiles in gcc's escaping, which Make and Ninja read: a tree in a folder named with a blank, '#' and '$'
odd="$tmp/odd dir#1\$x"
mkdir -p "$odd/templates"
cp "$src/templates/page_copy.c" "$odd/templates/"
printf 'op{name="copy", template="page_copy.c", inputs={{name="a",dtype="f32"}}, outputs={{name="out",dtype="f32"}},
  targets={{all={shape={8,8}, shard={4,8}, grid="2x1"}}}}\n' >"$odd/copy.lua"
{ printf 'exec %q generate --templates %q --output %q' "$ndgen" "$odd/templates" "$odd/copy.c"
  printf ' --depfile %q --stamp %q %q\n' "$odd/copy.d" "$odd/copy.stamp" "$odd/copy.lua"; } >"$tmp/odd_gen.sh"
bash "$tmp/odd_gen.sh"
check "generates in a folder named with a blank, # and \$" '[ $? -eq 0 ] && [ -f "$odd/copy.stamp" ]'
cp "$odd/copy.d" "$tmp/odd.d"
printf 'include %s\n%%.stamp:\n\t@true\n' "$tmp/odd.d" >"$tmp/odd.mk"
make -q -f "$tmp/odd.mk" "$odd/copy.stamp" 2>"$tmp/err"
check "Make reads the depfile: the stamp is up to date" '[ $? -eq 0 ]'
touch -d '-60 seconds' "$odd/copy.stamp" # older than the template now
make -q -f "$tmp/odd.mk" "$odd/copy.stamp" 2>"$tmp/err"
check "Make reads the depfile: a template newer than the stamp makes it out of date" '[ $? -eq 1 ] && [ ! -s "$tmp/err" ]'

if command -v ninja >/dev/null; then
  nj() { printf '%s' "$1" | sed 's/\$/$$/g; s/ /$ /g; s/:/$:/g'; } # a path in a .ninja file
  mkdir -p "$tmp/nj"
  printf 'rule gen\n  command = bash %s\n  depfile = %s\n  deps = gcc\nbuild %s: gen %s\n' "$(nj "$tmp/odd_gen.sh")" \
    "$(nj "$odd/copy.d")" "$(nj "$odd/copy.stamp")" "$(nj "$odd/copy.lua")" >"$tmp/nj/build.ninja"
  rm -f "$odd/copy.stamp"
  (cd "$tmp/nj" && ninja >/dev/null 2>&1)
  out=$(cd "$tmp/nj" && ninja -n 2>&1)
  check "Ninja reads the depfile: nothing to do after a build" 'echo "$out" | grep -q "no work to do"'
  touch -d '-60 seconds' "$odd/copy.stamp"
  out=$(cd "$tmp/nj" && ninja -n 2>&1)
  check "Ninja reads the depfile: a template newer than the stamp reruns ndgen" \
    '! echo "$out" | grep -q "no work to do" && echo "$out" | grep -q "odd_gen.sh"'
else
  echo "SKIP: no ninja here; the depfile was read by Make only"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
