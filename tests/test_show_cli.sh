#!/usr/bin/env bash
# test_show_cli.sh NDGEN - ndgen show end to end: the seed pictures in JSON (checked with jq), SVG and
# text output, and every bad input: one line on stderr naming the flag, non-zero exit, nothing written.
set -u
ndgen=$1 TOOL=$1
. "$(dirname "$0")/cli.sh"

expect_json() { json_ok "show $1 --format json" "$2"; }

expect_json '--shape 3,7,5 --shard 2,2,2 --grid 2x3' '.shards_per_core == [4,4,4,4,4,4]'
expect_json '--shape 3,7,5 --shard 2,2,2 --grid 2x3' '.cores == [[0,0],[1,0],[0,1],[1,1],[0,2],[1,2]]'
expect_json '--shape 3,7,5 --shard 2,2,2 --grid 2x3' '.pages_per_core == [16,16,16,16,16,16] and (.pages | length) == 63'
# hand-computed: page 62 is (2,6,2) -> shard 23 -> core 5, slot 3 of 4-page shards; page 3 is (0,1,0).
expect_json '--shape 3,7,5 --shard 2,2,2 --grid 2x3' '.pages[62] == {"core":5,"offset":12} and .pages[3] == {"core":0,"offset":1}'
expect_json '--shape 10,10,10 --shard 1,10,10 --grid 2x3' '.shards_per_core == [2,2,2,2,1,1]'
expect_json '--shape 10,10,10 --shard 10,1,1 --grid 2x3' '.shards_per_core == [17,17,17,17,16,16]'
expect_json '--shape 3,7,5 --shard 2,2,2 --grid 2x3 --orientation col' '.cores == [[0,0],[0,1],[0,2],[1,0],[1,1],[1,2]]'
expect_json '--shape 3,7,5 --shard 2,2,2 --grid 2x3 --strategy contiguous' '.shards[0:5] | map(.core) == [0,0,0,0,1]'
expect_json '--shape 64,64 --interleaved --tile 32x32 --buffer dram --banks 3' '.pages | map(.core) == [0,1,2,0]'
expect_json '--shape 4,4,6 --shard 1,2,2 --page 1,1,1 --grid 2x2' '.squeezed_tensor_pages == [16,6] and .squeezed_shard_pages == [2,2]'
expect_json "--shape 8,8 --shard 2,8 --grid 4x4 --cores '(0,0)-(1,0); (3,3)'" '.cores == [[0,0],[1,0],[3,3]] and .shards_per_core == [2,1,1]'

# text and svg render, and --output writes the file whole
if $ndgen show --shape 3,7,5 --shard 2,2,2 --grid 2x3 | grep -q '^  5 (1,2): 4 shards \[5 11 17 23\]; 9 of 16 pages$'; then ok; else bad "text per-core line"; fi
if $ndgen show --shape 10,10,10 --shard 10,1,1 --grid 2x3 --format svg --output "$tmp/a.svg" &&
   head -c 4 "$tmp/a.svg" | grep -q '<svg' && tail -n 1 "$tmp/a.svg" | grep -q '</svg>' &&
   [ "$(grep -c '>shard ' "$tmp/a.svg")" = 100 ]; then ok; else bad "svg output"; fi
if $ndgen show --help | grep -q -- '--strategy round_robin|contiguous'; then ok; else bad "--help"; fi

expect_error() { refused "show $1" nonzero "$2" -E; }

base='--grid 2x3'
expect_error "--shape 3,0,5 --shard 2,2,2 $base"        '^ndgen show: --shape 3,0,5: dim 1 is 0, but every dim must be positive$'
expect_error "--shape 3,-7,5 --shard 2,2,2 $base"       '--shape 3,-7,5: dim 1 is -7'
expect_error "--shape 3,7,5 --shard 2,0,2 $base"        '--shard 2,0,2: dim 1 is 0'
expect_error "--shape 3,7,x --shard 2,2,2 $base"        '--shape 3,7,x: expected a comma-separated list'
expect_error "--shape 1,1,1,1,1,1,1,1,1 --shard 1 $base" '--shape 1,1,1,1,1,1,1,1,1: more than 8 dims'
expect_error "--shape 3,7,5 --shard 2,2 $base"          '--shard 2,2: rank 2 does not match the rank 3 of --shape 3,7,5'
expect_error "--shape 3,7,5 --shard 2,2,2 --page 1,2 $base" '--page 1,2: rank 2 does not match'
expect_error "--shape 3,7,5 --shard 2,2,3 --page 1,1,2 $base" 'shard 2,2,3: dim 2 \(3\) is not a whole number of pages of 1,1,2'
expect_error "--shape 64,64 --shard 48,32 --tile 32x32 $base" 'shard 48,32: dim 0 \(48\) is not a whole number of pages'
expect_error "--shape 64,64 --shard 32,32 --tile 8x8 $base" '--tile 8x8: no such tile shape'
expect_error "--shape 64 --shard 32 --tile 32x32 $base"  'tile 32x32: tile pages need rank 2 or more'
expect_error "--shape 3,7,5 --shard 2,2,2 --grid 0x3"    '--grid 0x3: needs at least one core in each direction'
expect_error "--shape 3,7,5 --shard 2,2,2 --grid 2by3"   '--grid 2by3: expected COLSxROWS'
expect_error "--shape 3,7,5 --shard 2,2,2"               '--grid: required'
expect_error "--shape 3,7,5 --grid 2x3"                  '--shard: required unless --interleaved'
expect_error "--shape 3,7,5 --shard 2,2,2 --interleaved $base" '--shard 2,2,2: an interleaved tensor has one page per shard'
expect_error "--shape 3,7,5 --shard 2,2,2 $base --cores '(0,0)-(1,1); (1,1)'" 'cores: ranges 0 and 1 share cores'
expect_error "--shape 3,7,5 --shard 2,2,2 $base --cores '(0,0)-(2,0)'" 'cores \(0,0\)-\(2,0\): range 0 leaves the 2x3 core grid'
expect_error "--shape 3,7,5 --shard 2,2,2 $base --cores '(1,0)-(0,0)'" 'range 0 is reversed'
expect_error "--shape 3,7,5 --shard 2,2,2 $base --cores '(0,0)-'" '--cores \(0,0\)-: expected the range.s second corner'
expect_error "--shape 4294967296,4294967296 --shard 1,1 $base" 'shape 4294967296,4294967296: the f32 tensor.s byte size overflows 64 bits'
expect_error "--shape 3,7,5 --shard 2,2,2 --shard 99999999999999999999 $base" '--shard 99999999999999999999: expected a comma-separated list'
expect_error "--shape 4096,4096 --shard 4096,4096 --grid 1x1" 'l1: the tensor needs 67108864 bytes per core .* but each holds 1572864'
expect_error "--shape 64,64 --shard 64,64 --grid 1x1 --l1-size 1K" 'but each holds 1024'
expect_error "--shape 3,7,5 --shard 2,2,2 $base --dtype f64" '--dtype f64: unknown value; expected one of f32, bf16, f16, i32, u8'
expect_error "--shape 3,7,5 --shard 2,2,2 $base --strategy zigzag" '--strategy zigzag: unknown value'
expect_error "--shape 3,7,5 --shard 2,2,2 $base --format png" '--format png: unknown format'
expect_error "--shape 3,7,5 --shard 2,2,2 $base --bogus" '--bogus: unknown option'
expect_error "--shape 4096,4096 --shard 8,8 --grid 8x8 --format svg" '--format svg: .* too much to draw'

finish
