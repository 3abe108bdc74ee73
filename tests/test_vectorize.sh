#!/usr/bin/env bash
# test_vectorize.sh CC "KERNEL_CFLAGS" TEMPLATES INCLUDE ELTWISE_SPEC RESHARD_SPEC - the vector-math blocks
# of the templates become vector code, for every vector width: each loop marked VMATH_KEEP_LOOP in
# eltwise_unary.c (for every unary op of ELTWISE_SPEC and the reshard of RESHARD_SPEC, each with its own
# expression) and in softmax.c, compiled
# by CC with the kernels' flags, for the machine's own target and, on x86-64, for SSE2, AVX2 and AVX-512
# (-march=x86-64, x86-64-v3, x86-64-v4 in place of the flags' -march). A block left scalar costs up to 10x
# and every result still agrees, so no other test sees it: gelu's erf stayed scalar without AVX-512
# (82 ms against oneDNN's 8.8 on an AVX2 EPYC), sqrtf whenever it may set errno.
#
# Nor may a block's loop become a call to memcpy, memmove or memset: GCC made the identity's (the
# reshard's) a memcpy call per 64 bytes until the kernels' flags said -fno-tree-loop-distribute-patterns
# (cmake/NdgenKernels.cmake). Asked of the object, compiled with -g: the source line of every such call
# (objdump -dlr), none on a marked loop or its first body line. A run's padded tail may call them.
#
# Asked of the compiler itself: GCC's -fopt-info-vec ("loop vectorized" at the loop's line), Clang's
# -Rpass (the loop vectorized, or its body SLP-vectorized after unrolling, or, for a copy, turned into
# llvm.memcpy, which the object check above sees lowered to vector moves). Calls to libm's expf, logf
# and tanhf are vector calls only with GCC and glibc's libmvec (VMATH_LIBMVEC, eltwise_rows.h): elsewhere
# the ops using them are not asked. Another compiler, or flags that vectorize nothing at all (a
# sanitized build's -O0), skip (77).
set -u
cc=$1 flags=$2 templates=$3 include=$4 spec=$5 reshard_spec=$6

kind=
if "$cc" --version 2>/dev/null | grep -qi clang; then kind=clang
elif "$cc" --version 2>/dev/null | grep -qiE 'gcc|free software foundation'; then kind=gcc
fi
[ -n "$kind" ] || { echo "$cc is neither GCC nor Clang: skipped"; exit 77; }

# "name<TAB>expression" for each op of op_family("eltwise_unary.c", {...}) in the spec.
ops=$(awk '/op_family\("eltwise_unary.c"/ {on = 1; next}
           on && /^}/ {exit}
           on && match($0, /^ *[a-z_0-9]+ *= *"/) {
             name = $0; sub(/^ */, "", name); sub(/ *=.*/, "", name)
             expr = $0; sub(/^[^"]*"/, "", expr); sub(/",? *$/, "", expr)
             print name "\t" expr }' "$spec")
[ "$(echo "$ops" | grep -c .)" -ge 5 ] || { echo "no unary ops read from $spec" >&2; echo "0 passed, 1 failed"; exit 1; }
# The reshard's: name = "reshard", template = "eltwise_unary.c", params = { EXPR = "(x)", ... }.
reshard=$(grep -E 'name = "reshard".*eltwise_unary\.c' "$reshard_spec" | sed -nE 's/.*EXPR = "([^"]*)".*/\1/p' | head -1)
[ -n "$reshard" ] || { echo "no reshard expression read from $reshard_spec" >&2; echo "0 passed, 1 failed"; exit 1; }
ops=$(printf '%s\nreshard\t%s' "$ops" "$reshard")

targets=("$flags")
if [ "$(uname -m)" = x86_64 ]; then
  for m in x86-64 x86-64-v3 x86-64-v4; do
    t=$(echo " $flags " | sed -E "s/ -march=[^ ]+ / /g")
    t="$t -march=$m"
    echo 'int x;' | "$cc" $t -x c -c -o /dev/null - 2>/dev/null && targets+=("$t")
  done
fi

# The line after each VMATH_KEEP_LOOP: a loop that must vectorize.
loops() { grep -n 'VMATH_KEEP_LOOP' "$1" | grep -v define | cut -d: -f1 | while read -r l; do echo $((l + 1)); done; }

work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT

# compile FILE FLAGS... : the lines of FILE (basename) whose loop vectorized, sorted, one per line; the
# object, with line tables, in $work/k.o.
vectorized() {
  local file=$1 base
  base=$(basename "$file")
  shift
  if [ $kind = gcc ]; then
    "$cc" "$@" -g -fopt-info-vec-optimized -I"$templates" -I"$include" -c "$file" -o "$work/k.o" 2>&1 |
      grep -E "$base:[0-9]+:[0-9]+: optimized: loop vectorized" | sed -E "s/.*$base:([0-9]+):.*/\1/"
  else
    "$cc" "$@" -g -Rpass='loop-vectorize|slp-vectorizer|loop-idiom' -I"$templates" -I"$include" -c "$file" -o "$work/k.o" 2>&1 |
      grep -E "$base:[0-9]+:[0-9]+: remark: (vectorized loop|Stores SLP vectorized|Formed a call to llvm.mem)" |
      sed -E "s/.*$base:([0-9]+):.*remark: (.).*/\1 \2/" |
      awk '{print ($2 == "v") ? $1 : $1 - 1}' # SLP and idiom remarks name the body, a line below the loop
  fi | sort -u
}

# The lines of FILE (basename) holding a call to memcpy, memmove or memset in $work/k.o, one per line.
library_calls() {
  objdump -dlr --no-show-raw-insn "$work/k.o" | awk -v base="/$(basename "$1"):" '
    /^\/.*:[0-9]+/ { loc = $1 }
    /\t(call|callq|bl|jmp|b) / { at = loc; pending = 1; next }
    pending && /R_[A-Z0-9_]+[ \t]+(memcpy|memmove|memset)/ && index(at, base) { sub(/.*:/, "", at); print at }
    { pending = 0 }' | sort -u
}

pass=0 fail=0
# check LABEL FILE WANTED-LINES FLAGS...
check() {
  local label=$1 file=$2 want=$3 got missing called
  shift 3
  got=$(vectorized "$file" "$@")
  missing=$(comm -23 <(echo "$want" | sort -u) <(echo "$got"))
  called=$(comm -12 <(echo "$want" | awk '{print; print $1 + 1}' | sort -u) <(library_calls "$file"))
  [ -z "$missing" ] || echo "FAIL $label: the loops at $(basename "$file") line(s) $(echo $missing) stay scalar ($*)" >&2
  [ -z "$called" ] ||
    echo "FAIL $label: $(basename "$file") line(s) $(echo $called) call memcpy, memmove or memset per block ($*)" >&2
  if [ -n "$missing$called" ]; then fail=$((fail + 1)); else pass=$((pass + 1)); fi
}

unary=$templates/eltwise_unary.c softmax=$templates/softmax.c
unary_loops=$(loops "$unary") softmax_loops=$(loops "$softmax")
[ "$(echo "$unary_loops" | grep -c .)" -ge 2 ] || { echo "no VMATH_KEEP_LOOP in $unary" >&2; echo "0 passed, 1 failed"; exit 1; }

# Flags that vectorize nothing, not even a negation, are not the case this test is for.
read -ra tf <<< "${targets[0]}"
probe=$(vectorized "$unary" "${tf[@]}" '-DNDT_EXPR(x)=(-(x))' | wc -l)
[ "$probe" -gt 0 ] || { echo "the kernel flags ($flags) vectorize no loop: skipped"; exit 77; }

for t in "${targets[@]}"; do
  read -ra tf <<< "$t"
  libmvec=$(printf '#include "eltwise_rows.h"\nVMATH_LIBMVEC\n' |
    "$cc" "${tf[@]}" -I"$templates" -I"$include" -E -x c - 2>/dev/null | tail -1 | tr -d ' ')
  while IFS=$'\t' read -r name expr; do
    if [ "$libmvec" != 1 ] && echo "$expr" | grep -qE '\b(expf|logf|tanhf)\('; then continue; fi
    check "$name" "$unary" "$unary_loops" "${tf[@]}" "-DNDT_EXPR(x)=$expr"
  done <<< "$ops"
  [ "$libmvec" = 1 ] && check softmax "$softmax" "$softmax_loops" "${tf[@]}"
done
echo "$pass passed, $fail failed ($kind, ${#targets[@]} targets)"
[ $fail -eq 0 ]
