#!/usr/bin/env bash
# test_peers.sh NDRUN "PEERS" - the peer libraries are checked, not trusted: on a case of every op family,
# at sizes crossing the peers' own blocking (odd extents, broadcast, a transposed b, batches), ndrun
# compare runs every peer library built in (PEERS, as CMake found them) on the case's dense arrays and
# holds its answer to the op's plain reference (compare.c); each expected library must be there, must
# agree, and its rate must not exceed the row's limit (limit.c: the limit is the best of the probes,
# the plain loop and the peers).
set -u
ndrun=$1 built=" ${2//;/ } "
. "$(dirname "$0")/harness.sh"

# case | libraries expected to do it (those of them built in must appear) | probes: the limit measured
# (slower, so on one case of each kind of limit) | ndrun compare options
cases=(
  "matmul|OpenBLAS BLIS oneDNN LIBXSMM|probes|--op matmul --shape 37,53,29 --shard 19,53 --grid 2x1 --operand b --shard 53,29 --operand out --shard 19,29"
  "bmm|OpenBLAS BLIS oneDNN LIBXSMM|--no-probes|--op bmm --shape 3,17,40,9 --shard 2,17,40 --grid 2x1 --operand b --shard 2,40,9 --operand out --shard 2,17,9"
  "scores|OpenBLAS BLIS oneDNN|--no-probes|--op scores --shape 2,3,20,16,24 --shard 1,3,20,16 --grid 2x1 --operand out --shard 1,3,20,24"
  "matvec|OpenBLAS BLIS oneDNN|--no-probes|--op matvec --shape 70,130 --shard 35,130 --grid 2x1 --operand b --shard 130 --operand out --shard 35"
  "add|oneDNN|probes|--op add --shape 33,70 --shard 17,70 --grid 2x1"
  "mul, broadcast|oneDNN|--no-probes|--op mul --shape 30,70 --shard 15,70 --grid 2x1 --operand b --shape 70 --shard 35"
  "gelu|oneDNN|--no-probes|--op gelu --shape 33,70 --shard 17,70 --grid 2x1"
  "softmax|oneDNN|--no-probes|--op softmax --shape 9,130 --shard 5,130 --grid 2x1"
  "reduce_sum rows|oneDNN|probes|--op reduce_sum --shape 33,70 --shard 17,70 --grid 2x1 --axes 1 --operand out --shard 17"
  "reduce_max 0,2|oneDNN|--no-probes|--op reduce_max --shape 6,10,12 --shard 3,5,12 --grid 2x2 --axes 0,2 --operand out --shard 5"
  "permute 2,0,1|oneDNN|probes|--op permute --shape 5,12,34 --shard 3,12,34 --grid 2x1 --perm 2,0,1 --operand out --shape 34,5,12 --shard 17,5,12"
  "reshard|oneDNN|--no-probes|--op reshard --shape 40,64 --shard 20,64 --grid 2x1 --operand out --shard 40,32"
)
for c in "${cases[@]}"; do
  IFS='|' read -r label want probes args <<<"$c"
  [ "$probes" = probes ] && probes=""
  # shellcheck disable=SC2086
  if ! $ndrun compare $args $probes --repeats 2 --min-time 0 --json >"$tmp/c.json" 2>"$tmp/c.err"; then
    bad "$label: ndrun compare failed: $(tail -n 2 "$tmp/c.err")"; continue
  fi
  if jqe '.match == true' "$tmp/c.json" >/dev/null; then ok; else bad "$label: $(jq -r .mismatch "$tmp/c.json")"; fi
  for lib in $want; do
    case "$built" in *" $lib "*) ;; *) continue ;; esac
    if jqe --arg l "$lib" 'any(.peers[]; .name | startswith($l + " "))' "$tmp/c.json" >/dev/null; then ok
    else bad "$label: no $lib peer (peers: $(jq -c '[.peers[].name]' "$tmp/c.json"))"; fi
  done
  if [ -n "$probes" ]; then # no probes: the limit is not measured, and says so
    if jqe '.limit == "not measured" and .verdict == "not measured" and (.limit_candidates | length) == 0' \
         "$tmp/c.json" >/dev/null; then ok; else bad "$label: --no-probes, yet a limit"; fi
  elif jqe '. as $r | all(.peers[]; .rate > 0 and .rate <= $r.limit_value * 1.0000001) and .limit_value > 0
              and any(.limit_candidates[]; .name == "plain loop")' "$tmp/c.json" >/dev/null; then ok
  else bad "$label: a peer above the limit, or the limit without the plain loop"; fi
done

# bf16 has no peer here, and says so rather than failing
if $ndrun compare --op add --dtype bf16 --shape 16,32 --shard 8,32 --grid 2x1 --no-probes --repeats 2 --min-time 0 --json >"$tmp/b.json" 2>/dev/null &&
   jqe '.match == true and (.peers | length) == 0 and .best_peer == null' "$tmp/b.json" >/dev/null; then ok
else bad "bf16 add: expected no peer"; fi

# a reduction over axes of one index is a copy, which oneDNN refuses as a reduction (it stopped the whole
# compare with "status 2"): no oneDNN peer then, and the row still runs and agrees
for c in "reduce_sum --shape 1 --axes 0 --shard 1" "reduce_max --shape 1,5 --axes 0 --shard 1,5 --operand out --shard 5"; do
  # shellcheck disable=SC2086 # the case's words
  if $ndrun compare --grid 2x1 --no-probes --repeats 1 --min-time 0 --json --op $c >"$tmp/r1.json" 2>"$tmp/r1.err" &&
     jqe '.match and .reference_checked and ([.peers[].name] | all(startswith("oneDNN") | not))' "$tmp/r1.json" >/dev/null
  then ok; else bad "$c: $(head -c 300 "$tmp/r1.err")"; fi
done

echo "test_peers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
