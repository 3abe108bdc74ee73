#!/usr/bin/env bash
# test_ndrun_scalars.sh NDRUN LIB - ndrun compare --scalars on tests/scalars/scalars.lua's axpb: each value
# is read whole, however long its text (a number cut short would launch another value), and checked
# against the declaration by the launch.
set -u
ndrun=$1 lib=$2
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
run() { $ndrun compare --kernels "$lib" --op axpb --shape 300,200 --shard 64,64 --grid 2x2 --no-jit --min-time 0 \
          --repeats 1 --no-probes --threads 2 "$@" 2>&1; }

zeros=$(printf '0%.0s' $(seq 70))
# beta = 20, written long: outside [-10, 10], never read as its first 63 characters (2)
out=$(run --scalars "alpha=1,beta=2.${zeros}e1,times=3")
if [ $? != 0 ] && echo "$out" | grep -q "scalar 'beta' = 20 is outside \[-10, 10\]"; then ok; else bad "long beta: $out"; fi
# alpha = 0.2, written long: not the kernel fixing alpha = 2 and times = 3 (t0), but the one fixing none
out=$(run --scalars "alpha=2.${zeros}e-1,beta=1,times=3")
if [ $? = 0 ] && echo "$out" | grep -q "nd_axpb__f32__t1 (.*prebuilt)"; then ok; else bad "long alpha: $out"; fi
out=$(run --scalars "alpha=1,beta=1x,times=3")
if [ $? != 0 ] && echo "$out" | grep -q "beta: '1x' is not a finite number"; then ok; else bad "1x: $out"; fi
out=$(run --scalars "alpha=1,beta=,times=3")
if [ $? != 0 ] && echo "$out" | grep -q "beta: '' is not a finite number"; then ok; else bad "empty: $out"; fi
# an integer past 2^53: strtod would read 2^53 (a launch of another value); refused before any range
out=$(run --scalars "alpha=1,beta=1,times=9007199254740993")
if [ $? != 0 ] && echo "$out" | grep -q "times: 9007199254740993 is not exact in a double"; then ok; else bad "2^53+1: $out"; fi
out=$(run --scalars "alpha=1,beta=1,times=99999999999999999999")
if [ $? != 0 ] && echo "$out" | grep -q "times: 99999999999999999999 is not exact in a double"; then ok; else bad "ERANGE: $out"; fi

echo "test_ndrun_scalars: $pass passed, $fail failed"
[ "$fail" = 0 ]
