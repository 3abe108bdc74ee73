#!/usr/bin/env bash
# test_bounded.sh NDGEN NDRUN [SECONDS] - work bounded by what is asked: huge ndgen show and plan inputs
# answer within a second (SECONDS, for sanitizer builds) or are refused; long lists are summarized
# unless --all; ndrun refuses a case larger than the memory available, before allocating.
set -u
ndgen=$1 ndrun=$2 limit=${3:-1}
. "$(dirname "$0")/harness.sh"

# run SECONDS ARGS...: the command's exit status, its stdout in $tmp/out and stderr in $tmp/err; 124 on
# timeout.
run() { local t=$1; shift; timeout "$t" "$@" >"$tmp/out" 2>"$tmp/err"; }

# expect_fast 'DESCRIPTION' 'REGEX' ARGS...: answers (exit 0) within a second, stdout matching REGEX.
expect_fast() {
  local what=$1 re=$2; shift 2
  run "$limit" "$@"
  local rc=$?
  if [ $rc -ne 0 ]; then bad "$what: exit $rc $(head -c 300 "$tmp/err")"; return; fi
  if grep -qE -- "$re" "$tmp/out"; then ok; else bad "$what: no line matches '$re'"; fi
}

# expect_json 'DESCRIPTION' 'JQ' ARGS...: answers within a second with JSON for which JQ holds.
expect_json() {
  local what=$1 q=$2; shift 2
  run "$limit" "$@"
  local rc=$?
  if [ $rc -ne 0 ]; then bad "$what: exit $rc $(head -c 300 "$tmp/err")"; return; fi
  if jqe "$q" "$tmp/out" >/dev/null; then ok; else bad "$what: jq '$q' is false"; fi
}

# expect_refused 'DESCRIPTION' 'REGEX' ARGS...: exit 1 within a second, one stderr line matching REGEX.
expect_refused() {
  local what=$1 re=$2; shift 2
  run "$limit" "$@"
  local rc=$?
  if [ $rc -ne 1 ]; then bad "$what: exit $rc, want 1"; return; fi
  if [ "$(wc -l <"$tmp/err")" = 1 ] && grep -qE -- "$re" "$tmp/err"; then ok
  else bad "$what: stderr '$(cat "$tmp/err")' does not match '$re'"; fi
}

# ---- ndgen show: 10^18 shards on 2^20 cores (this walked every shard and never finished)
huge=(show --shape 1000000000,1000000000 --shard 1,1 --grid 1024x1024 --dtype u8 --l1-size 1024G)
expect_fast "show huge text" '^holding   953674316406 to 953674316407 shards and 953674316406 to 953674316407 data pages per core; 0 of 1048576 cores hold no shard$' \
  "$ndgen" "${huge[@]}"
expect_fast "show huge text lists 64 cores" '^  \.\.\. 1048512 more cores: --all lists every core$' "$ndgen" "${huge[@]}"
expect_fast "show huge text, no shard map" 'shard map: 1000000000000000000 shards, more than 4096: --all prints it' \
  "$ndgen" "${huge[@]}"
expect_json "show huge json" '.pages == null and .shards == null and .data_pages_per_core == null and
  .omitted == ["cores","shards_per_core","pages_per_core","data_pages_per_core","shards","pages"] and .limit == 100000 and
  .shards_per_core_range == [953674316406,953674316407] and .data_pages_per_core_range == [953674316406,953674316407]' \
  "$ndgen" "${huge[@]}" --format json
expect_json "show huge json, contiguous" '.shards_per_core_range == [953673529975,953674316407] and .data_pages_per_core_range == [953673529975,953674316407]' \
  "$ndgen" "${huge[@]}" --format json --strategy contiguous
# uneven edges in both dims: shard grid 142857143 x 76923078, the last row and column short
expect_json "show huge uneven json" '.data_pages_per_core_range[0] > 0 and .data_pages_per_core_range[0] < .data_pages_per_core_range[1]' \
  "$ndgen" show --shape 999999999,1000000007 --shard 7,13 --page 1,1 --grid 1024x1024 --dtype u8 --l1-size 1024G --format json
expect_refused "show huge svg" '^ndgen show: --format svg: .* too much to draw .*, or --all$' \
  "$ndgen" "${huge[@]}" --format svg --output "$tmp/huge.svg"
[ -e "$tmp/huge.svg" ] && bad "show huge svg: wrote a file" || ok

# ---- the limits, just past them, and --all
over=(show --shape 100001 --shard 1 --grid 1x1 --dtype u8)
expect_json "json just over the limit" '.pages == null and .shards == null and .omitted == ["shards","pages"] and
  (.cores | length) == 1 and .data_pages_per_core == [100001]' "$ndgen" "${over[@]}" --format json
expect_json "json --all" '(.pages | length) == 100001 and (.shards | length) == 100001 and .omitted == [] and .limit == null' \
  "$ndgen" "${over[@]}" --format json --all
expect_fast "text 256 cores" '^  \.\.\. 192 more cores: --all lists every core$' "$ndgen" show --shape 64,64 --shard 4,4 --grid 16x16
run 5 "$ndgen" show --shape 64,64 --shard 4,4 --grid 16x16 --all
if [ "$(grep -cE '^  [0-9]+ \([0-9]+,[0-9]+\): ' "$tmp/out")" = 256 ] && ! grep -q 'more cores' "$tmp/out"; then ok
else bad "text --all: not 256 core lines"; fi
expect_fast "text copies" '^\.\.\. 65472 more copies: --all lists every copy$' "$ndgen" show --einshard 'a b -> 65536 a b' \
  --shape 4,4 --grid 1024x64
expect_fast "svg --all past the page limit" '</svg>' "$ndgen" show --shape 20001 --shard 10001 --grid 2x1 --dtype u8 \
  --format svg --all
expect_fast "help names --all" '^  --all  ' "$ndgen" show --help

# ---- ndgen plan: letter sizes near 2^40 (this printed "bytes": 0 after a signed overflow)
p=(plan 'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y')
expect_refused "plan 2^40 letters" "^ndgen plan: --shape b=1099511627776,x=1099511627776,y=1099511627776: input 'bx' holds more bytes than 64 bits count$" \
  "$ndgen" "${p[@]}" --shape b=1099511627776,x=1099511627776,y=1099511627776 --grid 2x1 --format json
expect_refused "plan bytes moved overflow" "^ndgen plan: --shape .*: the bytes einsum 'bx,xy->by' moves overflow 64 bits$" \
  "$ndgen" "${p[@]}" --shape b=1073741824,x=65536,y=1073741824 --grid 256x256
expect_json "plan big but countable" '.bytes == 8796093022208 and .collectives == ["all_reduce"]' \
  "$ndgen" "${p[@]}" --shape b=1048576,x=1048576,y=1048576 --grid 2x1 --format json
# a rank-8 Partial result has 11 resolutions (this overflowed the list of alternatives); --uneven, since
# most scatter a dim of 2 over 8 cores, which einshard's JAX sharding would refuse
expect_fast "plan rank 8, 11 alternatives" '^    11\. ' "$ndgen" plan 'abcdefgh,hbcdefgp->abcdefgp' \
  --in 'A=a b c d e f g h -> a b c d e f g h*' --in 'W=h b c d e f g p -> h* b c d e f g p' \
  --shape a=4,b=2,c=2,d=2,e=2,f=2,g=2,h=8,p=8 --grid 8x1 --alternatives --uneven

# ---- ndrun: a case larger than the machine's memory is refused before anything is allocated
expect_refused "ndrun over memory" '^ndrun compare: memory: the case needs [0-9]+ MiB \(host [0-9]+ MiB, device [0-9]+ MiB\), but the machine has [0-9]+ MiB available \(' \
  "$ndrun" compare --op add --shape 1000000,1000000 --shard 1000,1000000 --grid 8x8 --no-probes

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
