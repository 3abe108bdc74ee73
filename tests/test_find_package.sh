#!/usr/bin/env bash
# test_find_package.sh BUILD_DIR PROJECT_DIR PROGRAM LIBRARY - install ndgen into a scratch prefix, then
# configure, build and run a separate project that finds it with find_package(ndgen) and generates
# its own kernels: PROGRAM is run with the kernel library LIBRARY it built.
set -eu
build=$1 project=$2 program=$3 library=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$project" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/build" -j2 >/dev/null
"$tmp/build/$program" "$tmp/build/$library"
