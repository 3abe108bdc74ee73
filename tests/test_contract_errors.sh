#!/usr/bin/env bash
# test_contract_errors.sh NDGEN TEMPLATES CONTRACT_DIR - an op's contract is checked when generating:
# every target against the operands' index notation (ranks, axis sizes, broadcasting) and against what
# the template requires (requires = "same_paging(in, out)"), and each element type against its
# operand's dtype. Each case is refused with its spec file:line message, exit 1 and nothing written.
set -u
ndgen=$1 templates=$2 dir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

expect() {
  local spec=$1 want=$2
  rm -rf "$tmp/out" && mkdir "$tmp/out"
  "$ndgen" generate --templates "$templates" --output "$tmp/out/k.c" "$dir/$spec" >/dev/null 2>"$tmp/stderr"
  local rc=$?
  if [ $rc -ne 1 ]; then fail=$((fail + 1)); echo "FAIL $spec: exit $rc, want 1" >&2; return; fi
  if [ -n "$(ls -A "$tmp/out")" ]; then fail=$((fail + 1)); echo "FAIL $spec: left $(ls "$tmp/out")" >&2; return; fi
  if ! head -n 1 "$tmp/stderr" | grep -qE -- "$want"; then
    fail=$((fail + 1)); echo "FAIL $spec: got '$(head -n 1 "$tmp/stderr")', want /$want/" >&2; return
  fi
  pass=$((pass + 1))
}

s='[^ ]*contract/'
expect index_mismatch.lua    "^${s}index_mismatch.lua:1: op 'mm': target 1: axis 'k' is 6 in operand 'a' but 5 in operand 'b'$"
expect rank_mismatch.lua     "^${s}rank_mismatch.lua:1: op 'mm': target 1: operand 'b' has rank 1, but its index 'kj' needs 2 axes$"
expect broadcast.lua         "^${s}broadcast.lua:1: op 'add': target 1: output 'out' has '...' dims \[4,7\], but the result's are \[4,6\]$"
expect requires_violated.lua "^${s}requires_violated.lua:1: op 'copy': target 2: operands 'in' and 'out' must have the same shape and page box \(the op requires same_paging\(in,out\)\)$"
expect requires_unknown.lua  "^${s}requires_unknown.lua:1: op 'copy': requires 'same_grid\(in, out\)': unknown relation 'same_grid'; known: same_paging$"
expect requires_operand.lua  "^${s}requires_operand.lua:1: op 'copy': requires 'same_paging\(in, result\)': 'result' is not an operand$"
expect type_disagrees.lua    "^${s}type_disagrees.lua:1: op 'relu': parameter T is 'float', but operand 'a' is bf16, stored as uint16_t; leave T out and ndgen derives it from the dtype$"
expect mixed_dtypes.lua      "^${s}mixed_dtypes.lua:1: op 'add': operands 'a' \(f32\) and 'b' \(u8\) differ in dtype, but template .*eltwise_binary.c declares one element type NDT_T; declare NDT_T1 \(and NDT_T0, ...\) for operands of their own type$"

expect via_include.lua       "^${s}via_include.lua:3: op 'mm': target 1: axis 'k' is 6 in operand 'a' but 5 in operand 'b'$"

expect scalars_twice.lua     "^${s}scalars_twice.lua:1: op 'scale': scalars 'alpha, beta, alpha': 'alpha' is declared twice$"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
