#!/bin/sh
# fuzz.sh CLANG SOURCE_DIR WORK_DIR SECONDS: builds the sharding parsers' fuzz target with libFuzzer,
# ASan and UBSan, and fuzzes them for SECONDS, starting from the kept corpus (tests/fuzz/corpus), which
# it does not modify. New inputs go to WORK_DIR/new; merge the interesting ones into the kept corpus
# with:  WORK_DIR/fuzz_sharding -merge=1 SOURCE_DIR/tests/fuzz/corpus WORK_DIR/new
# Exits nonzero on a crash, leak or failed round trip, leaving the input as WORK_DIR/crash-*.
set -eu
clang=$1 src=$2 work=$3 seconds=$4
mkdir -p "$work/new"
"$clang" -g -O1 -std=c17 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -I"$src/runtime/include" -I"$src/runtime/model" -o "$work/fuzz_sharding" \
  "$src/tests/fuzz/fuzz_sharding.c" "$src"/runtime/model/*.c
cd "$work"
./fuzz_sharding -max_total_time="$seconds" -max_len=512 -print_final_stats=1 new "$src/tests/fuzz/corpus"
