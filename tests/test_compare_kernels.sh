#!/usr/bin/env bash
# test_compare_kernels.sh NDRUN NDGEN USERLIB USERSPECS TEMPLATES - ndrun compare on a kernel library of a user's own
# (tests/userops): generic against specialized always, against the reference when the spec gives one,
# and plainly "no reference" in text and JSON when not; on-demand specialization of a target the spec
# does not list, the spec found where the library records it; and references refused when wrong.
set -u
ndrun=$1 ndgen=$2 lib=$3 specs=$4 templates=$5
. "$(dirname "$0")/harness.sh"
run() { $ndrun compare --kernels "$lib" --min-time 0 --repeats 1 --no-probes "$@"; }

# silu has no reference: exit 0, and both outputs say nothing was checked against one
out=$(run --op silu --shape 32,64 --shard 16,64 --grid 2x1 2>&1)
if [ $? = 0 ] && echo "$out" | grep -q "results: generic and specialized agree bit for bit; NO REFERENCE CHECKED: op 'silu' has no plain reference" &&
   ! echo "$out" | grep -q "^  reference "; then ok; else bad "silu text: $out"; fi
if run --op silu --shape 32,64 --shard 16,64 --grid 2x1 --json | jqe '.match == true and .reference_checked == false and
     .reference_name == null and (.reference_note | test("no plain reference")) and .reference_s == null' >/dev/null
then ok; else bad "silu JSON"; fi

# softplus: its reference derived from its EXPR; iabsdiff (u8): a C function of its own
if run --op softplus --shape 32,64 --shard 16,64 --grid 2x1 --json |
     jqe '.match and .reference_checked and .reference_name == "from EXPR" and .jit == "prebuilt"' >/dev/null
then ok; else bad "softplus against its derived reference"; fi
if run --op iabsdiff --dtype u8 --shape 32,64 --shard 16,64 --grid 2x1 --json |
     jqe '.match and .reference_checked and .reference_name == "ref_iabsdiff"' >/dev/null
then ok; else bad "iabsdiff u8 against its own reference"; fi

# contractions whose spec gives its own STORE or LOAD (scaled_ref.c): right where the tile stores the
# output itself and where a row is read in place (1x1: the library's kernel; 2x1: built on demand); no
# peer, whose product is not this op
for c in "matmul_x2 --shape 64,48,96 --shard 64,96 --grid 1x1" "matmul_x2 --shape 64,48,96 --shard 32,96 --grid 2x1" \
         "scores_x2 --shape 1,2,40,64,100 --shard 1,2,40,64 --grid 1x1" "scores_x2 --shape 1,2,40,64,100 --shard 1,1,40,64 --grid 2x1" \
         "matvec_x4 --shape 40,70 --shard 20,70 --grid 2x1 --operand b --shard 70 --operand out --shard 20"; do
  # shellcheck disable=SC2086 # the case's words
  if run --op $c --json | jqe '.match and .reference_checked and (.reference_name | startswith("ref_")) and
       (.peers | length) == 0' >/dev/null
  then ok; else bad "$c against its own reference: $(run --op $c 2>&1 | sed -n 2p)"; fi
done

# einsum.c into a Partial output with more parts than k has values: a part whose chunk of the sum is
# empty writes zeros (it packed past its buffer and crashed before); the library's target (k = 3 over 4
# parts) and one built on demand (k = 1 over 2), the parts combined by ndrun against the reference
for c in "--shape 3,8,8 --grid 4x1 --operand a --shard 3,8 --operand b --shard 3,8 --operand out --mesh 4" \
         "--shape 1,8,8 --grid 2x1 --operand a --shard 1,8 --operand b --shard 1,8 --operand out --mesh 2"; do
  # shellcheck disable=SC2086 # the case's words (the placements quoted: a bracket is a glob)
  if run --op kt_partial $c --placements '[Partial(sum)]' --json 2>"$tmp/kt.err" | jqe '.match and .reference_checked' >/dev/null
  then ok; else bad "kt_partial $c: $(head -c 300 "$tmp/kt.err")"; fi
done

# a target the spec does not list: specialized on demand from the spec where the library records it
if run --op softplus --shape 48,80 --shard 16,80 --grid 3x1 --json | jqe '.match and .jit == "built"' >/dev/null
then ok; else bad "on-demand specialization of a user op"; fi
cp -r "$specs" "$tmp/specs"
# --spec-dir comes first: an edited copy of the spec is what the JIT reads
sed -i 's/log1pf(expf(x))/log1pf(expf(x)) + this_is_not_declared/' "$tmp/specs/userops.lua"
out=$(run --spec-dir "$tmp/specs" --op softplus --shape 24,80 --shard 8,80 --grid 3x1 2>&1)
if echo "$out" | grep -q "this_is_not_declared"; then ok; else bad "--spec-dir not read first: $out"; fi

# references a spec gets wrong are refused, at the spec's line
cp "$specs/userops.lua" "$specs/iabsdiff_ref.c" "$tmp/"
check_err() { # spec text, expected message
  printf '%s\n' "$1" >"$tmp/bad.lua"
  if msg=$($ndgen generate --templates "$templates" --output "$tmp/bad.c" "$tmp/bad.lua" 2>&1); then bad "accepted: $1"
  elif echo "$msg" | grep -q -- "$2"; then ok; else bad "for '$1': got '$msg', expected '$2'"; fi
}
op='op { name = "r", template = "eltwise_unary.c", params = { EXPR = "(x)" }, inputs = { { name = "x", dtype = "f32" } }, outputs = { { name = "y", dtype = "f32" } }, targets = {},'
check_err "$op reference = \"derived\" }" 'bad.lua:1: op .r.: reference .derived.: expected "elementwise"'
check_err "$op reference = { source = \"nope.c\", name = \"f\" } }" "bad.lua:1: op 'r': reference source 'nope.c': no such file"
check_err "$op reference = { source = \"iabsdiff_ref.c\", name = \"ref_nothere\" } }" "bad.lua:1: op 'r': reference 'ref_nothere': no such name in"
check_err "$op reference = { source = \"iabsdiff_ref.c\" } }" "missing field 'name'"
check_err 'op { name = "r", template = "page_copy.c", inputs = { { name = "x", dtype = "f32" } }, outputs = { { name = "y", dtype = "f32" } }, targets = {}, reference = "elementwise" }' \
  "no EXPR parameter to derive it from"
check_err 'op { name = "m", template = "matmul.c", params = { STORE = "(v)", STORE_PLAIN = "1" }, inputs = { { name = "a", dtype = "f32", index = "ik" }, { name = "b", dtype = "f32", index = "kj" } }, outputs = { { name = "out", dtype = "f32", index = "ij" } }, targets = {} }' \
  "bad.lua:1: op 'm': parameter STORE_PLAIN is ndgen's to set"

echo "test_compare_kernels: $pass passed, $fail failed"
[ "$fail" = 0 ]
