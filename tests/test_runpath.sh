#!/usr/bin/env bash
# test_runpath.sh BUILD_DIR - no binary of the build tree looks for libraries in a folder named
# relative to wherever it is run: every RUNPATH or RPATH entry of every ELF executable and shared
# library under BUILD_DIR is absolute or starts with $ORIGIN (an empty entry means the current folder
# to the loader, as "." or "lib" would). At least ndgen and ndrun must be among those read.
set -u
build=$1
pass=0 fail=0 seen=0
while IFS= read -r -d '' f; do
  head -c 4 "$f" 2>/dev/null | grep -q 'ELF' || continue
  seen=$((seen + 1))
  paths=$(readelf -d "$f" 2>/dev/null | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p')
  [ -z "$paths" ] && continue
  bad_entry=$(printf '%s:' "$paths" | tr ':' '\n' | sed '$d' | grep -v -e '^/' -e '^\$ORIGIN' | head -n 1)
  if printf '%s' "$paths" | grep -q -e '^:' -e ':$' -e '::' || [ -n "$bad_entry" ]; then
    fail=$((fail + 1)); echo "FAIL: ${f#"$build"/}: RUNPATH [$paths] has an empty or relative entry" >&2
  else pass=$((pass + 1)); fi
done < <(find "$build" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) -not -path '*/CMakeFiles/*' -print0)
[ -x "$build/bin/ndgen" ] && [ -x "$build/bin/ndrun" ] && [ "$seen" -ge 2 ] && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL: no ndgen and ndrun under $build/bin ($seen binaries read)" >&2; }
echo "$pass passed, $fail failed ($seen binaries read)"
[ "$fail" = 0 ]
