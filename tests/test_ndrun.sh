#!/usr/bin/env bash
# test_ndrun.sh NDRUN WRONG_LIB WRONG_SPEC_DIR - ndrun compare and bench end to end, on small sizes:
# every suite case agrees with the plain reference, the JSON is valid and complete, the chart is
# written, a wrong kernel is caught, and bad input gives one clear line and a non-zero exit.
set -u
ndrun=$1 wrong_lib=$2 wrong_specs=$3
. "$(dirname "$0")/harness.sh"

# Every suite case, tiny: all agree (exit 0), and the result file says so for each case.
ncases=$($ndrun bench --list --tiny | wc -l)
if $ndrun bench --tiny --json-out "$tmp/b.json" --svg-out "$tmp/b.svg" >"$tmp/bench.out" 2>"$tmp/bench.err"; then ok
else bad "bench --tiny failed: $(tail -n 3 "$tmp/bench.err")"; fi
if jqe --argjson n "$ncases" '(.cases | length) == $n and $n >= 12 and all(.cases[]; .match == true)' "$tmp/b.json" >/dev/null
then ok; else bad "bench JSON: not $ncases matching cases"; fi
for field in generic_s specialized_s reference_s speedup bandwidth_gbs stream_add_gbs memcpy_gbs; do
  if jqe --arg f "$field" 'all(.cases[]; (.[$f] | type) == "number" and .[$f] > 0)' "$tmp/b.json" >/dev/null
  then ok; else bad "bench JSON: field $field missing or not positive"; fi
done
if jqe '[.cases[].family] | (index("aligned") and index("misaligned") and index("interleaved") and index("small pages")
          and index("large pages") and index("rank 6") and index("cores 64x64"))' "$tmp/b.json" >/dev/null
then ok; else bad "bench JSON: a distribution family is missing"; fi
if jqe '[.cases[].op] | (index("add") and index("reduce_sum") and index("matmul") and index("permute") and index("reshard"))' \
     "$tmp/b.json" >/dev/null; then ok; else bad "bench JSON: an op family is missing"; fi
if head -c 4 "$tmp/b.svg" | grep -q '<svg' && tail -n 1 "$tmp/b.svg" | grep -q '</svg>' &&
   [ "$(grep -c '<rect x=.300' "$tmp/b.svg")" -ge $((ncases * 3)) ]; then ok; else bad "bench SVG: bars missing"; fi
if grep -q "^$ncases cases in" "$tmp/bench.out" && grep -q '\[1/' "$tmp/bench.err"; then ok; else bad "bench: table or progress"; fi

# compare --json: one object with the documented fields
if $ndrun compare --op matmul --shape 32,48,16 --shard 16,48 --grid 2x1 --operand b --shard 48,16 --operand out \
     --shard 16,16 --min-time 0 --repeats 2 --json >"$tmp/c.json" &&
   jqe '.match == true and .op == "matmul" and .shapes == "32x48,48x16->32x16" and .flops == 2*32*48*16
          and (.generic_s > 0) and (.specialized_s > 0) and (.reference_s > 0) and (.speedup > 0)
          and (.bandwidth_gbs > 0) and (.gflops > 0)' "$tmp/c.json" >/dev/null; then ok
else bad "compare --json matmul"; fi
# Rounds after the minimum leave out what the verdict does not rest on: a plain loop of ~50 ms beside
# kernels and peers of well under 1 ms stays at its 5 rounds while the kernels go on to a believed median
# (each round was as long as the plain loop, so such rows stopped at 5, always "noisy").
if $ndrun compare --op scores --shape 1,2,256,64,256 --shard 1,1,256,64 --grid 2x1 --operand out --shard 1,1,256,256 \
     --min-time 0.05 --repeats 5 --json >"$tmp/r.json" &&
   jqe '(.peers | length) > 0 and .reference.repeats < .specialized.repeats and .specialized.repeats >= 8
          and .generic.repeats == .specialized.repeats' "$tmp/r.json" >/dev/null; then ok
else bad "compare: rounds past the minimum without the slow plain loop: $(jq -c '[.reference.repeats, .specialized.repeats, .verdict]' "$tmp/r.json")"; fi
if $ndrun compare --op reduce_max --shape 6,10,12 --shard 3,5,12 --grid 2x2 --axes 0,2 --operand out --shard 5 \
     --dtype bf16 --min-time 0 --repeats 1 --json | jqe '.match and .shapes == "6x10x12->10"' >/dev/null
then ok; else bad "compare reduce_max bf16 over axes 0,2"; fi
# Every axis reduced: one element, kept at the input's rank (issue 16), rows past 256.
if $ndrun compare --op reduce_sum --shape 6,300 --shard 3,300 --grid 2x1 --axes 0,1 --no-probes \
     --min-time 0 --repeats 1 --json | jqe '.match and .reference_checked and .shapes == "6x300->1x1"' >/dev/null
then ok; else bad "compare reduce_sum over every axis"; fi
# Probes off: the table says the limit was not measured and prints no rate for it (issue 25)
out=$($ndrun compare --op add --shape 16,64 --shard 8,64 --grid 2x1 --no-probes --min-time 0 --repeats 1 2>&1)
if grep -q '^limit: not measured (probes off)$' <<<"$out" && ! grep -q ' 0\.00 GB/s' <<<"$out"
then ok; else bad "compare --no-probes prints a limit: $(grep -E 'limit|GB/s' <<<"$out" | head -3)"; fi
if $ndrun compare --op permute --shape 4,6,8 --shard 2,6,8 --grid 2x1 --perm 2,0,1 --operand out --shard 4,4,6 \
     --min-time 0 --repeats 1 --json | jqe '.match and .shapes == "4x6x8->8x4x6"' >/dev/null
then ok; else bad "compare permute 2,0,1"; fi
if $ndrun compare --op add --shape 16,64 --shard 8,64 --grid 2x1 --operand b --shape 64 --shard 32 --min-time 0 \
     --repeats 1 --json | jqe '.match and .shapes == "16x64,64->16x64"' >/dev/null
then ok; else bad "compare add with a broadcast operand"; fi
# a Partial input's parts are each data the op reads: a reduce_scatter of 2 parts of one 4096-element page
# onto 2 output pages of 2048 reads half of each part per output page, 4 reads over 2 data pages
if $ndrun compare --op reduce_scatter --shape 4096 --grid 2x1 --operand in --placements "[Partial(sum)]" --mesh 2 \
     --operand out --shard 2048 --min-time 0 --repeats 1 --json |
   jqe '.match and .local_pages + .remote_pages == 4 and .input_pages == 2 and .reads_per_page == 2' >/dev/null
then ok; else bad "compare reduce_scatter: pages read per page of a Partial input's data"; fi
# a Partial output: its parts read one by one and combined on the host, then held to the op's reference
# (the whole product or reduction): a pending sum over 3 cores (a's rows in uneven blocks, b's k split),
# and a pending max in bf16 over 3 cores, whose combination selects a part's bits (15 elements a part, so
# that the parts' maxima differ: with a min taken instead, it fails)
if $ndrun compare --op matmul --shape 100,72,40 --grid 3x1 --operand a --shard 34,72 --operand b --einshard "k j -> k* j" \
     --operand out --placements "[Partial(sum)]" --mesh 3 --no-probes --min-time 0 --repeats 1 --json |
   jqe '.match and .reference_checked and .shapes == "100x72,72x40->100x40"' >/dev/null
then ok; else bad "compare matmul into a Partial(sum) output"; fi
if $ndrun compare --op reduce_max --shape 9,5 --axes 0,1 --grid 3x1 --operand a --shard 3,5 --operand out --shape 1,1 \
     --placements "[Partial(max)]" --mesh 3 --dtype bf16 --no-probes --min-time 0 --repeats 1 --json |
   jqe '.match and .reference_checked' >/dev/null
then ok; else bad "compare reduce_max into a Partial(max) output"; fi

# A wrong kernel is caught: exit 1 and MISMATCH in the table
out=$($ndrun compare --kernels "$wrong_lib" --spec-dir "$wrong_specs" --op add --shape 16,64 --shard 8,64 --grid 2x1 \
      --min-time 0 --repeats 1)
status=$?
if [ $status = 1 ] && echo "$out" | grep -q 'MISMATCH: generic element'; then ok; else bad "wrong add not caught ($status)"; fi

# Named indices without a summed letter are elementwise, not a contraction: --shape per letter, no
# GFLOP/s (tests/wrong/bias.lua: ij,j->ij)
if $ndrun compare --kernels "$wrong_lib" --spec-dir "$wrong_specs" --op bias_add --shape 64,256 --shard 32,256 \
     --grid 2x1 --operand b --shard 128 --no-probes --min-time 0 --repeats 1 --json |
   jqe '.match and .flops == 0 and .shapes == "64x256,256->64x256"' >/dev/null
then ok; else bad "bias_add (ij,j->ij) taken for a contraction"; fi

# A kernel that never returns is stopped by the watchdog, which names it: exit 1 within seconds
timeout 60 $ndrun compare --kernels "$wrong_lib" --spec-dir "$wrong_specs" --op hang --shape 16,64 --shard 8,64 \
  --grid 2x1 --min-time 0 --repeats 1 --no-probes --watchdog 1 >/dev/null 2>"$tmp/err"
status=$?
if [ $status = 1 ] &&
   grep -q "^ndrun: op 'hang': the generic kernel nd_hang__f32__generic has not returned after 1 s (--watchdog); stopping$" "$tmp/err"
then ok; else bad "hanging kernel: status $status, $(cat "$tmp/err")"; fi

# expect_error 'ARGS' STATUS 'REGEX': that exit status, nothing on stdout, one stderr line matching REGEX
expect_error() {
  local out err status
  out=$(eval "$ndrun $1" 2>"$tmp/err"); status=$?
  err=$(cat "$tmp/err")
  if [ "$status" = "$2" ] && [ -z "$out" ] && [ "$(wc -l <"$tmp/err")" = 1 ] && echo "$err" | grep -Eq -- "$3"
  then ok; else bad "ndrun $1: status $status, stderr '$err'"; fi
}
expect_error 'compare --op nope --shape 8 --shard 4 --grid 2x1' 1 "--op nope: no such op in the kernel library$"
expect_error 'compare --op reduce_smu --shape 8 --shard 4 --grid 2x1' 1 "--op reduce_smu: no such op in the kernel library \(did you mean reduce_sum\?\)$"
expect_error 'compare --op add --shape 8 --shrad 4 --grid 2x1' 2 "--shrad: unknown option \(did you mean --shard\?\)"
expect_error 'compare --op add --shard 4 --grid 2x1' 1 "--shape: required"
expect_error 'compare --op add --shape 8,8 --shard 4 --grid 2x1' 1 "operand 'a' has shape 8,8, of another rank than --shard 4"
expect_error 'compare --op add --shape 8 --shard 4 --grid 2x1 --operand c --shard 2' 1 "--operand c: op 'add' has no such operand"
expect_error 'compare --op add --shape 8 --shard 4 --grid 2y1' 1 "operand 'a': --grid 2y1"
expect_error 'compare --op matmul --shape 8,8 --shard 4,8 --grid 2x1' 1 "needs one size per index letter, ikj"
expect_error 'compare --op permute --shape 8,4 --shard 4,4 --grid 2x1 --perm 0' 1 "--perm 0: needs 2 axes"
expect_error 'compare --op add --shape 8 --shard 4 --grid 2x1 --watchdog 1e9' 2 "--watchdog 1e9: expected seconds from 0 \(no limit\) to 86400"
expect_error 'compare --op add --shape 8 --shard 4 --grid 2x1 --watchdog nan' 2 "--watchdog nan: expected seconds"
expect_error 'compare --op reduce_sum --shape 8,4 --shard 4,4 --grid 2x1 --axes 5' 1 "--axes 5: axis 5 does not exist at rank 2"
expect_error 'compare --op add --shape 8 --shard 4 --grid 2x1 --dtype f64' 2 "--dtype f64"
expect_error 'compare --op add --shape 8 --shard 4 --grid 2x1 --threads 0' 2 "--threads 0"
expect_error 'compare --op add --shape 8 --shard 4 --grid 2x1 --bogus' 2 "--bogus: unknown option"
expect_error 'compare --op add --shape 8 --shard 4 --grid 2x1 --no-jit' 1 "no specialized kernel"
expect_error 'bench --tiny --bogus' 2 "--bogus: not an option of bench"
expect_error 'bench --tiny --grid 2x1' 2 "--grid: not an option of bench"
expect_error 'frobnicate' 2 "frobnicate: unknown command"
if $ndrun compare --help | grep -q -- '--operand NAME' && $ndrun bench --help | grep -q -- '--quick'; then ok; else bad "--help"; fi

echo "test_ndrun: $pass passed, $fail failed"
[ $fail = 0 ]
