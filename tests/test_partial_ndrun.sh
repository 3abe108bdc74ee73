#!/usr/bin/env bash
# test_partial_ndrun.sh NDRUN - ndrun compare --fixed SET: the specialized variant is a kernel of SET, built
# on demand once per pattern: another size of it, in a new process, is a cache hit (nothing compiled), while
# another grid is built anew for "pattern" and a hit for "shard"; the report names the set; bad sets are
# usage errors.
TOOL="$1 compare"
. "$(dirname "$0")/cli.sh"
opts="--op add --shard 32,64 --no-probes --repeats 1 --min-time 0 --cache-dir $tmp/cache --json"

# case SET SHAPE GRID JIT: the JSON names SET and the JIT outcome JIT ("built" or "cache")
case_is() {
  json_ok "$opts --fixed $1 --shape $2 --grid $3" \
    ".match and .specialized_fixed == \"$1\" and .jit == \"$4\" and (.specialized_symbol | test(\"__t0\$\"))"
}
libs() { find "$tmp/cache" -name '*.so' | wc -l; }

case_is pattern 300,200 2x2 built
case_is pattern 517,77 2x2 cache  # another size: the same entry
case_is pattern 33,700 3x1 built  # the grid is fixed in a pattern kernel
[ "$(libs)" -eq 2 ] && ok || bad "pattern: $(libs) libraries in the cache, want 2"
case_is shard 300,200 2x2 built
case_is shard 517,77 3x2 cache    # another size and grid: the same entry
[ "$(libs)" -eq 3 ] && ok || bad "shard: $(libs) libraries in the cache, want 3"
case_is all 300,200 2x2 built     # exact, as without --fixed
case_is all 517,77 2x2 built

# the table names the set
if $TOOL ${opts/--json/} --fixed pattern --shape 40,64 --grid 2x2 | grep -q '^fixed: the specialized kernel fixes "pattern": all but the shape$'; then
  ok
else
  bad "the table does not name the set"
fi

refused "--op add --shape 8,8 --shard 8,8 --grid 1x1 --fixed shape,grid" 2 '--fixed shape,grid: expected all, pattern or shard'
$TOOL --op add --shape 8,8 --shard 8,8 --grid 1x1 --fixed pattern --no-jit >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] && grep -q 'the bundled library has no partial kernels' "$tmp/err" && ok ||
  bad "--fixed pattern --no-jit: exit $rc: $(cat "$tmp/err")"
finish
