#!/usr/bin/env bash
# test_tune.sh NDRUN NDGEN - ndrun tune (and ndgen tune, which runs it): its candidates and its cost model
# against a brute force written here, over the whole candidate space of small cases; a measured run; and
# the inputs it refuses.
#
# The model, as documented in bench/tune.c and docs/tune.md, recomputed here: every ways vector (g0, g1)
# with g_d at most its dim and g0 * g1 one of N, 2N, 4N; shard s_d = ceil(dim / g_d); shards dealt round
# robin, so the busiest core holds ceil(g0 g1 / N); for add it moves that many shards of each of its 3
# operands (4-byte elements); for a reduction over dim 1 each of its output rows reads its whole line,
# the share of other cores (g1 - 1) / g1 counted twice, and writes its output; for a softmax each row
# piece it holds (s0 of them a shard) reads its whole row the same way, and it writes its shards.
set -u
ndrun=$1 ndgen=$2
. "$(dirname "$0")/cli.sh"

# brute SHAPE0 SHAPE1 CORES KIND: "candidate bytes" lines, KIND add, reduce1 (sum over dim 1) or softmax
brute() {
  local d0=$1 d1=$2 n=$3 kind=$4 g0 g1 s0 s1 per bytes
  {
  for ((g0 = 1; g0 <= d0; ++g0)); do
    for ((g1 = 1; g1 <= d1; ++g1)); do
      local p=$((g0 * g1))
      ((p == n || p == 2 * n || p == 4 * n)) || continue
      s0=$(((d0 + g0 - 1) / g0)) s1=$(((d1 + g1 - 1) / g1)) per=$(((p + n - 1) / n))
      if [ "$kind" = add ]; then
        bytes=$((per * s0 * s1 * 4 * 3))
      elif [ "$kind" = reduce1 ]; then # per rows * d1 * 4 * (1 + (g1-1)/g1) + per rows * 4, times g1 exactly
        bytes=$(((per * s0 * d1 * 4 * (2 * g1 - 1) + per * s0 * 4 * g1) / g1))
      else # softmax: per * s0 row pieces, each reading its row as above, plus per shards written
        bytes=$(((per * s0 * d1 * 4 * (2 * g1 - 1) + per * s0 * s1 * 4 * g1) / g1))
      fi
      echo "--shard $s0,$s1 $bytes"
      if [ "$kind" != reduce1 ] && ((s0 % 32 == 0 && s1 % 32 == 0)); then echo "--shard $s0,$s1 --tile 32x32 $bytes"; fi
    done
  done
  # a reduction's output may be Partial: dim 1 split over every core, each core folding its own chunk into
  # a whole copy of the output (d0 elements), then the reduce_scatter writes its ceil(d0/n) rows, reading
  # them from every part (the n - 1 others' counted twice)
  if [ "$kind" = reduce1 ] && ((n > 1 && d1 >= n)); then
    s1=$(((d1 + n - 1) / n))
    echo "--shard $d0,$s1, out Partial(sum) $((4 * (d0 * s1 + d0 + (d0 + n - 1) / n * 2 * n)))"
  fi
  } | sort
}

# model_matches NAME NFIELDS FIELDS WANT TUNE-ARGS...: ndrun tune --predict-only's ranked list, each
# candidate with the jq FIELDS (NFIELDS numbers), against the brute force's lines in WANT, and its first
# against the least of them (by the fields in order)
model_matches() {
  local name=$1 k=$2 fields=$3 want=$4
  shift 4
  if ! "$ndrun" tune --predict-only --top 16 --json-out "$tmp/$name.json" "$@" >"$tmp/out" 2>"$tmp/err"; then
    bad "$name: exit $?: $(head -c 300 "$tmp/err")"; return
  fi
  jq -r ".ranked[] | \"\\(.candidate) $fields\"" "$tmp/$name.json" | sort >"$tmp/got"
  if cmp -s "$want" "$tmp/got"; then ok; else bad "$name: candidates and model differ from the brute force:
$(diff "$want" "$tmp/got" | head -10)"; fi
  local least first
  least=$(awk -v k="$k" '{s = $(NF - k + 1); for (i = NF - k + 2; i <= NF; ++i) s = s " " $i; print s}' "$want" |
          sort -n -k1,1 -k2,2 | head -1)
  first=$(jq -r ".ranked[0] | \"$fields\"" "$tmp/$name.json")
  [ "$first" = "$least" ] && ok || bad "$name: the first ranked has $first, the least is $least"
}

check_model() { # NAME SHAPE0 SHAPE1 GRID CORES KIND ARGS...
  local name=$1 d0=$2 d1=$3 grid=$4 n=$5 kind=$6
  shift 6
  brute "$d0" "$d1" "$n" "$kind" >"$tmp/want.$name"
  model_matches "$name" 1 '\(.model_bytes)' "$tmp/want.$name" --shape "$d0,$d1" --grid "$grid" "$@"
}

check_model add_96x64 96 64 2x2 4 add --op add
check_model add_64x96 64 96 4x1 4 add --op add
check_model reduce_64x96 64 96 2x1 2 reduce1 --op reduce_sum --axes 1
check_model reduce_40x24 40 24 3x1 3 reduce1 --op reduce_sum --axes 1
check_model softmax_64x96 64 96 2x2 4 softmax --op softmax

# An einsum, matmul ik,kj->ij: every (wi, wj) with wi <= I, wj <= J and wi * wj one of N, 2N, 4N; output
# shard s (row-major over wi x wj) on core s mod N; each core's multiply-adds are si * sj * K per shard,
# its bytes the output block, a's block (si x K, a's shard qi on core qi mod N) and b's (K x sj, b's
# shard qj on core qj mod N), each counted twice when another core holds it; the model's pair is the
# largest multiply-adds and the largest bytes over the cores; 32x32 tiles where a, b and out all hold
# whole ones.
brute_matmul() { # I K J CORES
  local I=$1 K=$2 J=$3 n=$4 wi wj
  for ((wi = 1; wi <= I; ++wi)); do
    for ((wj = 1; wj <= J; ++wj)); do
      local p=$((wi * wj))
      ((p == n || p == 2 * n || p == 4 * n)) || continue
      local si=$(((I + wi - 1) / wi)) sj=$(((J + wj - 1) / wj)) c s
      local -a fl=() by=()
      for ((c = 0; c < n; ++c)); do fl[c]=0 by[c]=0; done
      for ((s = 0; s < p; ++s)); do
        local core=$((s % n)) qi=$((s / wj)) qj=$((s % wj)) a=$((si * K * 4)) b=$((K * sj * 4))
        ((qi % n == core)) || a=$((2 * a))
        ((qj % n == core)) || b=$((2 * b))
        fl[core]=$((fl[core] + si * sj * K)) by[core]=$((by[core] + si * sj * 4 + a + b))
      done
      local mf=0 mb=0
      for ((c = 0; c < n; ++c)); do ((fl[c] > mf)) && mf=${fl[c]}; ((by[c] > mb)) && mb=${by[c]}; done
      echo "--split i=$wi,j=$wj $mf $mb"
      if ((si % 32 == 0 && sj % 32 == 0 && K % 32 == 0)); then echo "--split i=$wi,j=$wj --tile 32x32 $mf $mb"; fi
    done
  done
  # k over every core, a pending sum (matmul's output may be Partial): each core multiplies its k slice of
  # a and b into a whole output part, then the reduce_scatter writes its ceil(I/N) rows, reading them
  # from every part, the N - 1 other cores' counted twice
  if ((n > 1 && K % n == 0)); then
    local rows=$((((I + n - 1) / n) * J * 4))
    echo "--sum-over k=$n $((I * J * K / n)) $((I * (K / n) * 4 + (K / n) * J * 4 + I * J * 4 + rows * (2 * n - 1) + rows))"
  fi
}
check_einsum() { # NAME I K J GRID CORES
  local name=$1 I=$2 K=$3 J=$4 grid=$5 n=$6
  brute_matmul "$I" "$K" "$J" "$n" | sort >"$tmp/want.$name"
  model_matches "$name" 2 '\(.model_multiply_adds) \(.model_bytes)' "$tmp/want.$name" --op matmul --shape "$I,$K,$J" \
    --grid "$grid"
}
check_einsum matmul_64x32x96 64 32 96 2x2 4
check_einsum matmul_40x64x24 40 64 24 3x1 3

# measured: the model's best 2 timed, the chosen one marked, its median in the JSON; ndgen tune runs it
if "$ndgen" tune --op add --shape 256,256 --grid 2x1 --top 2 --repeats 3 --json-out "$tmp/m.json" >"$tmp/out" 2>"$tmp/err" &&
   grep -q '<- chosen' "$tmp/out" && grep -q '^target: ndrun compare --op add --shape 256,256 --grid 2x1 --shard ' "$tmp/out" &&
   jqe '[.ranked[0:2][] | .median_seconds > 0] == [true, true] and (.ranked[2] | has("median_seconds") | not)' \
     "$tmp/m.json" >/dev/null; then ok; else bad "measured run: $(cat "$tmp/out" "$tmp/err" | head -c 600)"; fi

# every timed candidate is checked against the op's reference first, one of two launches end to end (the
# op's Partial output carried part by part into its reduce_scatter): uneven chunks over 3 cores, a pending
# sum of a matmul; and the same tune with a reduce_scatter that skips part 0 (its template, specialized
# by the JIT from a folder of ours) stops at that candidate instead of ranking it
for run in "reduce_sum --axes 0,1 --shape 67,97 --grid 3x1" "matmul --shape 40,96,24 --grid 2x1"; do
  # shellcheck disable=SC2086 # the run's words
  if "$ndrun" tune --op $run --top all --repeats 3 --json-out "$tmp/chk.json" >"$tmp/out" 2>"$tmp/err" &&
     grep -q '^checked first: every timed candidate' "$tmp/out" && grep -q 'Partial\|--sum-over' "$tmp/out" &&
     jqe '.checked == true' "$tmp/chk.json" >/dev/null
  then ok; else bad "checked: $run: $(cat "$tmp/out" "$tmp/err" | head -c 600)"; fi
done
# a pending candidate's target is two ndrun compare commands, the op into its Partial output and the
# reduce_scatter that resolves it: both run as printed (shell-quoted) and agree with their references
"$ndrun" tune --op matmul --shape 40,96,24 --grid 2x1 --predict-only --top all >"$tmp/pend.out" 2>&1
pending_ok=$(grep -c "^target: ndrun compare --op matmul .*--placements '\[Partial(sum)\]' --mesh 2$\|^then: ndrun compare --op reduce_scatter " "$tmp/pend.out")
for line in "$(sed -n 's/^target: ndrun //p' "$tmp/pend.out")" "$(sed -n 's/^then: ndrun //p' "$tmp/pend.out")"; do
  eval "\"\$ndrun\" $line --no-probes --min-time 0 --repeats 1 --json" 2>/dev/null | jqe '.match' >/dev/null &&
    pending_ok=$((pending_ok + 1))
done
if [ "$pending_ok" = 4 ]; then ok; else bad "a pending target's commands: $(head -c 600 "$tmp/pend.out")"; fi
mkdir -p "$tmp/broken" && cp -r "$(dirname "$0")/../templates" "$tmp/broken/" && chmod -R go-w "$tmp/broken"
sed -i 's/for (int64_t q = 0; q < parts; ++q)/for (int64_t q = 1; q < parts; ++q)/' "$tmp/broken/templates/all_reduce.c"
if grep -q 'q = 1; q < parts' "$tmp/broken/templates/all_reduce.c" &&
   ! "$ndrun" tune --op reduce_sum --axes 0,1 --shape 67,97 --grid 3x1 --top all --repeats 3 --cache-dir "$tmp/jit-broken" \
     --template-dir "$tmp/broken/templates" >"$tmp/out" 2>"$tmp/err" &&
   grep -q "out Partial(sum): does not agree with the op's reference: its result element" "$tmp/err"
then ok; else bad "a broken reduce_scatter was not caught: $(cat "$tmp/out" "$tmp/err" | head -c 600)"; fi

# the check runs under --watchdog too: a reduction that never returns stops the tune with a message
mkdir -p "$tmp/spin" && cp -r "$(dirname "$0")/../templates" "$tmp/spin/" && chmod -R go-w "$tmp/spin"
sed -i '/^void reduce(/{n;a\    for (volatile int spin_ = 1; spin_;) { }
}' "$tmp/spin/templates/reduce.c"
if grep -q 'spin_' "$tmp/spin/templates/reduce.c" &&
   ! timeout 60 "$ndrun" tune --op reduce_sum --axes 1 --shape 64,96 --grid 2x1 --top 2 --repeats 3 --watchdog 2 \
     --template-dir "$tmp/spin/templates" --cache-dir "$tmp/jit-spin" >"$tmp/out" 2>"$tmp/err" &&
   grep -q 'has not returned after 2 s (--watchdog)' "$tmp/err"
then ok; else bad "a looping candidate under --watchdog: $(cat "$tmp/out" "$tmp/err" | head -c 600)"; fi

# the spec target round-trips: pasted into a spec, ndgen generates a kernel for exactly the distribution
# the `target:` line gave ndrun, its signature written out here from those flags (row pages are one row
# of the shard's width, tiles 32x32; two cores (0,0)-(1,0), row-major, round robin, L1).
# spec_roundtrip NAME OP-LINES SIG... : tune's spec target in a spec with the op, then each signature
# expected in the registry ndgen writes.
spec_roundtrip() {
  local name=$1 op=$2
  shift 2
  local target
  target=$(sed -n 's/^spec target: //p' "$tmp/$name.out")
  printf '%s\n  targets = { %s },\n}\n' "$op" "$target" >"$tmp/$name.lua"
  if ! "$ndgen" generate --templates "$templates" --output "$tmp/$name.c" "$tmp/$name.lua" 2>"$tmp/err"; then
    bad "spec target of $name does not generate: $target: $(head -c 300 "$tmp/err")"; return
  fi
  local sig
  for sig in "$@"; do
    grep -qF "\"$sig\"" "$tmp/$name.c" || { bad "spec target of $name: no kernel for [$sig] ($target)"; return; }
  done
  ok
}
templates=$(dirname "$0")/../templates
"$ndrun" tune --op add --shape 512,512 --grid 2x1 --predict-only >"$tmp/add.out" 2>&1
flags=$(sed -n 's/^target: .* --grid 2x1 //p' "$tmp/add.out")
shard=$(echo "$flags" | sed -n 's/.*--shard \([0-9,]*\).*/\1/p')
page="1,${shard#*,}"
case $flags in *"--tile 32x32"*) page=32,32 ;; esac
spec_roundtrip add 'op {
  name = "add", template = "eltwise_binary.c", params = { EXPR = "((x) + (y))" },
  inputs = { { name = "a", dtype = "f32", index = "..." }, { name = "b", dtype = "f32", index = "..." } },
  outputs = { { name = "out", dtype = "f32", index = "..." } },' \
  "f32 shape=512,512 page=$page shard=$shard cores=(0,0)-(1,0) row_major round_robin l1"
"$ndrun" tune --op reduce_sum --axes 1 --shape 512,512 --grid 2x1 --predict-only --dtype bf16 >"$tmp/red.out" 2>&1
shard=$(sed -n 's/^target: .* --grid 2x1 --dtype bf16 --shard \([0-9,]*\).*/\1/p' "$tmp/red.out")
spec_roundtrip red 'op {
  name = "reduce_sum", template = "reduce.c", params = {}, scalars = "axes(a)",
  inputs = { { name = "a", dtype = "bf16", index = "..." } }, outputs = { { name = "out", dtype = "bf16", index = "..." } },' \
  "bf16 shape=512,512 page=1,${shard#*,} shard=$shard cores=(0,0)-(1,0) row_major round_robin l1" \
  "bf16 shape=512 page=${shard%,*} shard=${shard%,*} cores=(0,0)-(1,0) row_major round_robin l1"
"$ndrun" tune --op matmul --shape 256,128,192 --grid 2x1 --predict-only >"$tmp/mm.out" 2>&1
flags=$(sed -n 's/^target: .* --grid 2x1 //p' "$tmp/mm.out")
mm_sig() { # OPERAND SHAPE: its signature from the target line's --operand OPERAND --shard [--tile]
  local s page
  s=$(echo "$flags" | sed -n "s/.*--operand $1 --shard \([0-9,]*\).*/\1/p")
  page="1,${s#*,}"
  case $flags in *"--tile 32x32"*) page=32,32 ;; esac
  echo "f32 shape=$2 page=$page shard=$s cores=(0,0)-(1,0) row_major round_robin l1"
}
spec_roundtrip mm 'op {
  name = "matmul", template = "matmul.c", params = {},
  inputs = { { name = "a", dtype = "f32", index = "ik" }, { name = "b", dtype = "f32", index = "kj" } },
  outputs = { { name = "out", dtype = "f32", index = "ij" } },' \
  "$(mm_sig a 256,128)" "$(mm_sig b 128,192)" "$(mm_sig out 256,192)"
# pending NAME KIND FIRST OP-LINES SIG... : tune's output in $tmp/NAME.out ranks FIRST first, a pending
# candidate whose op's output is Partial pending KIND; its spec target with the op (OP-LINES, up to the
# targets) and its `then reduce_scatter:` target with a reduce_scatter generate kernels for every
# signature SIG.
pending() {
  local name=$1 kind=$2 first=$3 op=$4 t1 t2 sig
  shift 4
  t1=$(sed -n 's/^spec target: //p' "$tmp/$name.out") t2=$(sed -n 's/^then reduce_scatter: //p' "$tmp/$name.out")
  printf '%s\n  targets = { %s },\n}\nop {
  name = "reduce_scatter", template = "all_reduce.c", params = {},
  inputs = { { name = "in", dtype = "f32", partial = { "%s" } } }, outputs = { { name = "out", dtype = "f32" } },
  targets = { %s },\n}\n' "$op" "$t1" "$kind" "$t2" >"$tmp/$name.lua"
  if ! sed -n 3p "$tmp/$name.out" | grep -qF "1  $first " || [ -z "$t2" ] ||
     ! "$ndgen" generate --templates "$templates" --output "$tmp/$name.c" "$tmp/$name.lua" 2>"$tmp/err"; then
    bad "$name: pending candidate: $(head -c 900 "$tmp/$name.out") $(head -c 300 "$tmp/err")"; return
  fi
  for sig in "$@"; do
    grep -qF "\"$sig\"" "$tmp/$name.c" || { bad "$name: no kernel for [$sig]: $t1 then $t2"; return; }
  done
  ok
}
# k over the cores, a pending sum, then a reduce_scatter: the model's best for this matmul (it reads a
# and b once and writes a part of the output); both spec targets generate kernels for their
# distributions (k split in a and b, the output Partial over 2, its rows over the 2 cores)
"$ndrun" tune --op matmul --shape 256,512,128 --grid 2x1 --predict-only >"$tmp/sum.out" 2>&1
pending sum sum "--sum-over k=2" 'op {
  name = "matmul", template = "matmul.c", params = {},
  inputs = { { name = "a", dtype = "f32", index = "ik" }, { name = "b", dtype = "f32", index = "kj" } },
  outputs = { { name = "out", dtype = "f32", index = "ij", partial = true } },' \
  "f32 shape=256,512 page=1,256 shard=256,256 cores=(0,0)-(1,0) row_major round_robin l1" \
  "f32 shape=512,128 page=1,128 shard=256,128 cores=(0,0)-(1,0) row_major round_robin l1" \
  "f32 shape=256,128 page=1,128 shard=128,128 cores=(0,0)-(1,0) row_major round_robin l1"
# a reduction to one element: the model's best splits the rows over the cores with the output a pending
# max over them (each core folds its own rows, not one core all of them), then a reduce_scatter
"$ndrun" tune --op reduce_max --axes 0,1 --shape 64,96 --grid 2x1 --predict-only >"$tmp/pm.out" 2>&1
pending pm max "--shard 32,96, out Partial(max)" 'op {
  name = "reduce_max", template = "reduce.c", scalars = "axes(a)",
  params = { INIT = "(-INFINITY)", ACC = "((x) > (acc) || (x) != (x) ? (x) : (acc))" },
  inputs = { { name = "a", dtype = "f32", index = "..." } },
  outputs = { { name = "out", dtype = "f32", index = "...", partial = { "max" } } },' \
  "f32 shape=64,96 page=1,96 shard=32,96 cores=(0,0)-(1,0) row_major round_robin l1" \
  "f32 shape=1,1 page=1,1 shard=1,1 cores=(0,0)-(1,0) row_major round_robin l1 replicas=2 parts=2 reduce=max" \
  "f32 shape=1,1 page=1,1 shard=1,1 cores=(0,0)-(1,0) row_major round_robin l1"
# no pending sum in bf16 (the runtime refuses it: each part would be rounded before they add up); a pending
# max selects a part, so bf16 keeps it
"$ndrun" tune --op reduce_sum --axes 0,1 --shape 64,96 --grid 3x1 --dtype bf16 --predict-only --top 16 >"$tmp/ps.out" 2>&1
"$ndrun" tune --op reduce_max --axes 0,1 --shape 64,96 --grid 3x1 --dtype bf16 --predict-only --top 16 >"$tmp/px.out" 2>&1
if grep -q ' candidates, ' "$tmp/ps.out" && ! grep -q 'Partial' "$tmp/ps.out" && grep -q 'out Partial(max)' "$tmp/px.out"
then ok; else bad "bf16 pending candidates: $(head -c 400 "$tmp/ps.out") $(head -c 400 "$tmp/px.out")"; fi
# the target line of a reduction to one element runs as printed: its axes and its output's shard
"$ndrun" tune --op reduce_max --axes 0,1 --shape 64,96 --grid 1x1 --predict-only >"$tmp/t1.out" 2>&1
read -ra words <<<"$(sed -n 's/^target: ndrun //p' "$tmp/t1.out")"
if [ ${#words[@]} -gt 0 ] && "$ndrun" "${words[@]}" --min-time 0 --repeats 1 --json 2>"$tmp/err" |
   jqe '.match and .shapes == "64x96->1x1"' >/dev/null
then ok; else bad "reduction target line: ${words[*]}: $(head -c 300 "$tmp/err")"; fi
# the target line keeps the dtype: a bf16 tune's target runs in bf16
"$ndrun" tune --op relu --shape 64,96 --grid 2x1 --dtype bf16 --predict-only >"$tmp/t2.out" 2>&1
read -ra words <<<"$(sed -n 's/^target: ndrun //p' "$tmp/t2.out")"
if [ ${#words[@]} -gt 0 ] && "$ndrun" "${words[@]}" --min-time 0 --repeats 1 --no-probes --json 2>"$tmp/err" |
   jqe '.match and .dtype == "bf16"' >/dev/null
then ok; else bad "bf16 target line: ${words[*]}: $(head -c 300 "$tmp/err")"; fi
# --fixed pattern: the candidates are timed with kernels that fix all but the tensor shape (the JIT
# builds them), the report says so, and the spec target carries fixed = "pattern", from which ndgen
# generates a pattern kernel
if "$ndrun" tune --op add --shape 256,256 --grid 2x1 --top 2 --repeats 3 --fixed pattern --json-out "$tmp/fx.json" \
     >"$tmp/fx.out" 2>"$tmp/err" && grep -q '^kernels fixing at most "pattern"' "$tmp/fx.out" &&
   jqe '[.ranked[0:2][] | .kernel_fixed] == ["pattern", "pattern"]' "$tmp/fx.json" >/dev/null &&
   grep -q '^spec target: .*, fixed = "pattern" }$' "$tmp/fx.out"; then
  t=$(sed -n 's/^spec target: //p' "$tmp/fx.out")
  printf 'op {\n  name = "add", template = "eltwise_binary.c", params = { EXPR = "((x) + (y))" },
  inputs = { { name = "a", dtype = "f32", index = "..." }, { name = "b", dtype = "f32", index = "..." } },
  outputs = { { name = "out", dtype = "f32", index = "..." } },\n  targets = { %s },\n}\n' "$t" >"$tmp/fx.lua"
  if "$ndgen" generate --templates "$templates" --output "$tmp/fx.c" "$tmp/fx.lua" 2>"$tmp/err" &&
     grep -q '"pattern"' "$tmp/fx.c"; then ok; else bad "--fixed pattern target: $t: $(head -c 300 "$tmp/err")"; fi
else bad "--fixed pattern: $(cat "$tmp/fx.out" "$tmp/err" | head -c 600)"; fi
# the timed set holds both page kinds: for these scores the model's three best with tiles would be
# the first three, and the best with row pages takes the third place
"$ndrun" tune --op scores --shape 2,2,64,32,64 --grid 2x1 --top 3 --predict-only --json-out "$tmp/kinds.json" \
  >/dev/null 2>&1
if jqe '[.ranked[0:3][] | .candidate | test("tile")] == [true, true, false] and
          ([.ranked[3:][] | .candidate | test("tile")] | index(true)) != null' "$tmp/kinds.json" >/dev/null
then ok; else bad "the timed set of scores holds one page kind: $(jq -c '[.ranked[0:4][] | .candidate]' "$tmp/kinds.json")"; fi
# the chosen distribution drawn: the output's, by ndgen show (its shard in the drawing's title)
if "$ndrun" tune --op matmul --shape 256,128,192 --grid 2x1 --predict-only --svg-out "$tmp/w.svg" >"$tmp/out" 2>&1 &&
   head -c 4 "$tmp/w.svg" | grep -q '<svg' && grep -qF 'shard [128,192]' "$tmp/w.svg"; then ok
else bad "--svg-out: $(head -c 300 "$tmp/out") $(head -c 300 "$tmp/w.svg")"; fi
# --top all: every candidate of the brute force timed (an exhaustive search), each with its median, and
# the JSON names the chosen one (which one is chosen within noise: test_limit, nr_pick_fastest)
want=$(brute 4 2 2 add | wc -l)
if "$ndrun" tune --op add --shape 4,2 --grid 2x1 --top all --repeats 3 --json-out "$tmp/all.json" >"$tmp/out" \
     2>"$tmp/err" && jqe --argjson n "$want" '(.ranked | length) == $n and .candidates == $n and
     ([.ranked[] | select(.median_seconds > 0)] | length) == $n and .chosen >= 0 and .chosen < $n' \
     "$tmp/all.json" >/dev/null &&
   grep -q "the model's best $want timed" "$tmp/out"; then ok
else bad "--top all: want $want timed: $(head -c 600 "$tmp/out" "$tmp/err")"; fi

# an einsum measured: the model's best 2 built on demand and timed
if "$ndrun" tune --op matmul --shape 128,64,96 --grid 2x1 --top 2 --repeats 3 --json-out "$tmp/mmt.json" \
     >"$tmp/out" 2>"$tmp/err" && grep -q '<- chosen' "$tmp/out" &&
   jqe '[.ranked[0:2][] | .median_seconds > 0] == [true, true]' "$tmp/mmt.json" >/dev/null; then ok
else bad "measured einsum: $(cat "$tmp/out" "$tmp/err" | head -c 600)"; fi

# a chain (an MLP: matmul, relu, matmul), measured: the plan is the least total over every path through
# the timed candidates, recomputed here by brute force from the JSON's medians (a step's own time plus
# the reshard into it, none where the result lies as taken), and so is the best total ending at each
# candidate of the last step; the plan's own total adds up; the steps' own fastest and the best plan
# without reshards are never below it
if "$ndrun" tune --chain bx,xy-\>by relu by,yz-\>bz --shape b=64,x=128,y=256,z=64 --grid 2x1 --top 2 --repeats 3 \
     --json-out "$tmp/chain.json" >"$tmp/out" 2>"$tmp/err" &&
   jqe 'def paths(s; p): if s == (.steps | length) then [[]]
            else [range(0; .steps[s].candidates | length) as $c | paths(s + 1; $c)[] | [$c] + .] end;
          def cost(path): [range(0; path | length) as $s | .steps[$s].candidates[path[$s]].step_seconds
            + (if $s > 0 then (.steps[$s].reshard_seconds[path[$s - 1]][path[$s]] // 0) else 0 end)] | add;
          . as $j | ([paths(0; 0)[] | . as $p | $j | cost($p)] | min) as $least
          | (.total_seconds - $least | fabs) < 1e-12 and (cost(.plan) - .total_seconds | fabs) < 1e-12
            and .greedy_seconds >= .total_seconds - 1e-12
            and (.aligned_seconds == null or .aligned_seconds >= .total_seconds - 1e-12)
            and (.steps | length) == 2 and .steps[0].eltwise == ["relu"]
            and ([range(0; .steps[-1].candidates | length) as $c
                  | ([paths(0; 0)[] | select(.[-1] == $c) | . as $p | $j | cost($p)] | min) as $m
                  | (.steps[-1].candidates[$c].best_seconds - $m | fabs) < 1e-12] | all)' "$tmp/chain.json" >/dev/null &&
   grep -q '^plan: step 1 candidate' "$tmp/out" && jqe '.checked == true' "$tmp/chain.json" >/dev/null &&
   grep -q '^checked first: every timed einsum candidate, elementwise op and reshard' "$tmp/out"; then ok
else bad "chain: $(cat "$tmp/out" "$tmp/err" | head -c 800)"; fi
# --bound: every candidate of each step timed (as many as a one-op tune of its op lists, counted by
# that command); the bound is the least total over every path through every candidate, recomputed here
# by brute force from the JSON (a step's own time, plus the reshard into it when both candidates were in
# the --top and it was timed, else nothing); the path it names costs it, and it is never above the plan
if "$ndrun" tune --chain bx,xy-\>by relu by,yz-\>bz --shape b=64,x=128,y=256,z=64 --grid 2x1 --top 2 --repeats 2 \
     --bound --json-out "$tmp/bound.json" >"$tmp/out" 2>"$tmp/err" &&
   "$ndrun" tune --op matmul --shape 64,128,256 --grid 2x1 --predict-only --json-out "$tmp/b1.json" >/dev/null &&
   "$ndrun" tune --op matmul --shape 64,256,64 --grid 2x1 --predict-only --json-out "$tmp/b2.json" >/dev/null &&
   n1=$(jq '.candidates | length' "$tmp/b1.json") && n2=$(jq '.candidates | length' "$tmp/b2.json") &&
   jqe --argjson n1 "$n1" --argjson n2 "$n2" '
          def paths(s): if s == (.steps | length) then [[]]
            else [range(0; .steps[s].all_step_seconds | length) as $c | paths(s + 1)[] | [$c] + .] end;
          def cost(path): [range(0; path | length) as $s | .steps[$s].all_step_seconds[path[$s]]
            + (if $s > 0 and path[$s - 1] < (.steps[$s - 1].candidates | length)
                  and path[$s] < (.steps[$s].candidates | length)
               then (.steps[$s].reshard_seconds[path[$s - 1]][path[$s]] // 0) else 0 end)] | add;
          . as $j | ([paths(0)[] | . as $p | $j | cost($p)] | min) as $least
          | (.steps[0].all_step_seconds | length) == $n1 and (.steps[1].all_step_seconds | length) == $n2
            and ([.steps[] | (.candidates | map(.candidate)) == .all_candidates[0:(.candidates | length)]
                  and ([range(0; .candidates | length) as $c
                        | (.candidates[$c].step_seconds - .all_step_seconds[$c] | fabs) < 1e-12] | all)] | all)
            and (.bound_seconds - $least | fabs) < 1e-12 and (cost(.bound_plan) - .bound_seconds | fabs) < 1e-12
            and .bound_seconds <= .total_seconds + 1e-12' "$tmp/bound.json" >/dev/null &&
   grep -q '^bound: every candidate of every einsum timed with its elementwise ops (16 + ' "$tmp/out" &&
   grep -q -E '^  (that is the plan|the plan is [0-9.]+ ms)' "$tmp/out"; then ok
else bad "chain --bound: $(cat "$tmp/out" "$tmp/err" | head -c 800)"; fi
# a chain checks what it times as a one-op tune does: with an elementwise template that adds 1 to what
# it stores (relu and reshard, specialized by the JIT from a folder of ours), it stops at the relu
mkdir -p "$tmp/off1" && cp -r "$(dirname "$0")/../templates" "$tmp/off1/" && chmod -R go-w "$tmp/off1"
sed -i '/= NDT_STORE(/s/;$/ + 1;/' "$tmp/off1/templates/eltwise_unary.c"
if [ "$(grep -c ') + 1;$' "$tmp/off1/templates/eltwise_unary.c")" = 3 ] &&
   ! "$ndrun" tune --chain bx,xy-\>by relu by,yz-\>bz --shape b=48,x=96,y=160,z=40 --grid 2x1 --top 2 --repeats 3 \
     --cache-dir "$tmp/jit-off1" --template-dir "$tmp/off1/templates" >"$tmp/out" 2>"$tmp/err" &&
   grep -q "candidate relu after step 1's .*: does not agree with the op's reference: its result element" "$tmp/err"
then ok; else bad "a chain's broken relu was not caught: $(cat "$tmp/out" "$tmp/err" | head -c 600)"; fi
# the steps that line up with a neighbour join the timed set: with --top 1 the model's own picks (step 1
# split over y in tiles, step 2 a pending sum over y in rows) never line up, and without the candidates
# added for alignment no plan avoids a reshard (checked: the JSON's aligned_seconds is then null); with
# them, a plan without reshards exists and step 1's b split is among those timed
if "$ndrun" tune --chain bx,xy-\>by relu by,yz-\>bz --shape b=64,x=128,y=256,z=64 --grid 2x1 --top 1 --repeats 2 \
     --json-out "$tmp/chain1.json" >/dev/null 2>"$tmp/err" &&
   jqe '.aligned_seconds != null and ([.steps[0].candidates[].candidate] | any(test("b=2,y=1")))' \
     "$tmp/chain1.json" >/dev/null; then ok; else bad "chain: no aligned plan timed: $(head -c 600 "$tmp/chain1.json")"; fi
# the chain's last matmul's spec target generates a kernel for its distribution
flags=$(jq -r '.steps[1].candidates[.plan[1]].spec_target' "$tmp/chain.json")
printf 'spec target: %s\n' "$flags" >"$tmp/chainmm.out"
if [ -n "$flags" ] && [ "$flags" != null ]; then
  spec_roundtrip chainmm 'op {
  name = "matmul", template = "matmul.c", params = {},
  inputs = { { name = "a", dtype = "f32", index = "ik" }, { name = "b", dtype = "f32", index = "kj" } },
  outputs = { { name = "out", dtype = "f32", index = "ij", partial = true } },'
else bad "chain: no spec target"; fi

# refused, with the reason
refuse() { # WANT-RC REGEX ARGS...
  local want=$1 re=$2
  shift 2
  "$ndrun" tune "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  if [ $rc -eq "$want" ] && grep -qE -- "$re" "$tmp/err"; then ok; else bad "tune $*: exit $rc, $(head -c 300 "$tmp/err")"; fi
}
refuse 1 "needs one size per index letter, ikj, in that order" --op matmul --shape 64,64 --grid 2x1
refuse 1 "--axes: op 'matmul' is an einsum" --op matmul --shape 64,64,64 --grid 2x1 --axes 1
refuse 1 "--also i=3,j=1: not a candidate" --op matmul --shape 64,64,64 --grid 2x1 --also i=3,j=1 --predict-only
refuse 1 "--axes is for reductions" --op add --shape 64,64 --grid 2x1 --axes 1
refuse 1 "a reduction: give --axes" --op reduce_sum --shape 64,64 --grid 2x1
refuse 1 "--axes 2: expected distinct dims of the rank-2 input" --op reduce_sum --shape 64,64 --grid 2x1 --axes 2
refuse 2 "--top 0: expected a number from 1 to 16" --op add --shape 64,64 --grid 2x1 --top 0
refuse 2 "--fixed most: expected all, pattern or shard" --op add --shape 64,64 --grid 2x1 --fixed most
refuse 2 "ndrun tune chooses the distributions itself" --op add --shape 64,64 --grid 2x1 --shard 32,64
refuse 2 "--grid: required" --op add --shape 64,64
refuse 1 "it is also --json-out" --op add --shape 64,64 --grid 2x1 --predict-only --json-out "$tmp/same" --svg-out "$tmp/same"
refuse 2 "a chain starts with an einsum" --chain relu 'ik,kj->ij' --shape i=8,k=8,j=8 --grid 2x1
refuse 1 "neither input is the previous result 'ij'" --chain 'ik,kj->ij' 'jk,kl->jl' --shape i=8,k=8,j=8,l=8 --grid 2x1
refuse 1 "no einsum op of two inputs" --chain 'ikl,kj->ij' --shape i=8,k=8,j=8,l=8 --grid 2x1
refuse 1 "no size for letter 'j'" --chain 'ik,kj->ij' --shape i=8,k=8 --grid 2x1
refuse 2 "'i' given twice" --chain 'ik,kj->ij' --shape i=8,i=4 --grid 2x1
refuse 2 "the size of 'k' is not a positive number" --chain 'ik,kj->ij' --shape "i=8,k= 8,j=8" --grid 2x1
# a step must keep the result as it lies: a permute (or an op of two inputs) is no elementwise step; a
# mistyped einsum is refused as one, before anything is timed
refuse 1 "chain permute: not an op of one input that keeps its dims" --chain 'ik,kj->ij' permute 'ij,jl->il' \
  --shape i=8,k=8,j=8,l=8 --grid 2x1
refuse 1 "chain add: not an op of one input" --chain 'ik,kj->ij' add --shape i=8,k=8,j=8 --grid 2x1
refuse 1 "chain nosuchop: no such op" --chain 'ik,kj->ij' nosuchop --shape i=8,k=8,j=8 --grid 2x1
refuse 1 "chain ij,jl-il: expected an einsum of two inputs" --chain 'ik,kj->ij' relu 'ij,jl-il' --shape i=8,k=8,j=8,l=8 \
  --grid 2x1
# a pending-sum candidate is no split of the output letters: --also cannot name it by ways of 1
refuse 1 "--also i=1,j=1: not a candidate" --op matmul --shape 32,64,64 --grid 2x1 --also i=1,j=1 --predict-only
mkfifo "$tmp/fifo"
refuse 1 "it is a named pipe" --op add --shape 64,64 --grid 2x1 --predict-only --json-out "$tmp/fifo"

finish
