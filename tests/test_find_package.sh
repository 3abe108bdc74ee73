#!/usr/bin/env bash
# test_find_package.sh BUILD_DIR CONSUMER_DIR - install ndgen into a scratch prefix, then configure,
# build and run a separate project that finds it with find_package(ndgen) and generates its own kernels.
set -eu
build=$1 consumer=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$consumer" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/build" -j2 >/dev/null
"$tmp/build/consumer" "$tmp/build/libconsumer_kernels.so"
