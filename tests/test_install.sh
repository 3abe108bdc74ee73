#!/usr/bin/env bash
# test_install.sh SOURCE PROJECT - an install that stands alone. Copies the source tree SOURCE to a
# scratch folder and runs there, with HOME a scratch folder, every command of docs/adding-an-op.md's
# walkthrough in order: ndgen configured, built and installed to ~/ndgen, then (the copied source
# and build trees deleted) the project PROJECT (docs/adding-an-op, copied to ~/myops: softplus by spec
# alone and without a reference, silu and square with references derived from their EXPR, square on
# f32, bf16, i32 and u8, rms_norm on a template of its own that includes the installed eltwise_rows.h,
# with a launch scalar eps and a C reference) built through find_package(ndgen) and through a plain
# Makefile using pkg-config, and run; ndrun compare --kernels; on-demand specialization; the project's
# install. Then checks what is installed and that no installed file names the trees; ndrun compare
# --kernels on each op of both libraries, with and without a reference; on-demand specialization of a
# target no spec lists, for user ops and a bundled one, and from the installed user library with the
# project deleted; bad --scalars refused; ndgen and ndrun alone saying what they miss; and the prefix moved.
# SOURCE itself is only read. TEST_INSTALL_LOG=FILE keeps the walkthrough's output.
set -u
. "$(dirname "$0")/jqe.sh"
src=$1 project=$2
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export NDGEN_CACHE_DIR=$tmp/cache
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
die() { echo "FAIL: $*" >&2; echo "test_install: $pass passed, $((fail + 1)) failed"; exit 1; }
t0=$SECONDS

# 1. a copy of the source (the files git knows, as they are now, or the whole tree without build folders)
mkdir -p "$tmp/src"
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1; then
  (cd "$src" && git ls-files --cached --others --exclude-standard | while IFS= read -r f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
     tar --null -T - -cf -) | tar -C "$tmp/src" -xf - || die "copying $src"
else
  (cd "$src" && tar --exclude='./build*' -cf - .) | tar -C "$tmp/src" -xf - || die "copying $src"
fi
cp -r "$project" "$tmp/proj" || die "copying $project"
rm -rf "$tmp/proj"/build*

# 2. the walkthrough of docs/adding-an-op.md: every sh block of the page, in order, in one shell,
# from the copied source tree, with HOME a scratch folder. The first block installs ndgen to
# ~/ndgen; after it the copied source and build trees are deleted, and the rest runs from the install.
export HOME=$tmp/home
mkdir -p "$HOME"
awk '/^```sh$/{b++; print "# block " b; p=1; next} p&&/^```$/{p=0; if (b==1) print "rm -rf \"$WALK_TREES\"  # the trees go"; next} p' \
  "$tmp/src/docs/adding-an-op.md" >"$tmp/walk.sh"
nblocks=$(grep -c '^# block' "$tmp/walk.sh")
# ndgen's own configure (block 1) gets its kernels at -O1: this test checks what the install holds and
# does, not the kernels' speed, which the rest of the tests build at -O3, and at -O3 the bundled library
# was most of the test's time (93 s on 2 cores, which it holds alone).
conf='cmake -S . -B build -DBUILD_TESTING=OFF '
if grep -qF -- "$conf" "$tmp/walk.sh"; then ok; else bad "docs/adding-an-op.md no longer configures ndgen with: $conf"; fi
sed -i "s|^${conf}|${conf}'-DNDGEN_KERNEL_CFLAGS=-O1 -march=native' |" "$tmp/walk.sh"
if [ "$nblocks" -ge 5 ]; then ok; else bad "docs/adding-an-op.md has $nblocks sh blocks"; fi
(cd "$tmp/src" && WALK_TREES=$tmp/src bash -ex "$tmp/walk.sh") >"$tmp/walk.log" 2>&1 || { tail -60 "$tmp/walk.log"; die "the walkthrough of docs/adding-an-op.md"; }
echo "test_install: walkthrough done in $((SECONDS - t0)) s"
if [ ! -e "$tmp/src" ]; then ok; else bad "the copied source tree is still there"; fi
p=$HOME/ndgen proj=$HOME/myops
if [ "$(grep -c '^17 passed, 0 failed' "$tmp/walk.log")" = 2 ]; then ok; else bad "run_softplus, CMake and Makefile builds: $(grep passed "$tmp/walk.log")"; fi
if grep -q "NO REFERENCE CHECKED: op 'softplus'" "$tmp/walk.log"; then ok; else bad "walkthrough: softplus compare does not say NO REFERENCE CHECKED"; fi
if grep -q "the reference (rms_norm_ref)" "$tmp/walk.log"; then ok; else bad "walkthrough: rms_norm not checked against rms_norm_ref"; fi
if [ "$(grep -c "built: built" "$tmp/walk.log")" = 2 ]; then ok; else bad "walkthrough: two kernels specialized on demand: $(grep "^kernels:" "$tmp/walk.log")"; fi
if ! grep -q "ndgen generate " "$tmp/walk.log"; then bad "walkthrough: no ndgen generate command of the Makefile"
elif grep "ndgen generate " "$tmp/walk.log" | grep -q -- "--include"; then bad "the Makefile build passed --include"; else ok; fi
[ -n "${TEST_INSTALL_LOG:-}" ] && cp "$tmp/walk.log" "$TEST_INSTALL_LOG"

# 3. what is installed, and nothing in it names the trees it came from
for f in bin/ndgen bin/ndrun include/ndgen/nd_runtime.h include/ndgen/nd_accessor.h include/ndgen/nd_dist.h \
         include/ndgen/nd_dist/model.h lib/libnd_runtime.a lib/libnd_dist.a lib/libndgen_ops.so \
         share/ndgen/templates/eltwise_rows.h share/ndgen/templates/eltwise_unary.c share/ndgen/specs/eltwise.lua \
         share/ndgen/specs/reference/reduce.c lib/cmake/ndgen/ndgenConfig.cmake lib/cmake/ndgen/NdgenKernels.cmake \
         lib/pkgconfig/ndgen.pc lib/libmyops.so share/myops/rms_norm.lua share/myops/templates/rms_norm.c; do
  if [ -e "$p/$f" ]; then ok; else bad "not installed: $f"; fi
done
if [ -e "$p/share/ndgen/specs/CMakeLists.txt" ]; then bad "the specs' CMakeLists.txt is installed"; else ok; fi
leaks=$(grep -rlaF "$tmp/src" "$p")
if [ -z "$leaks" ]; then ok; else bad "installed files name the source or build tree: $leaks"; fi
export PATH=$p/bin:$PATH PKG_CONFIG_PATH=$p/lib/pkgconfig

# 6. ndrun compare --kernels on every op of both libraries: with a reference, and saying when there is none
ndrun=$p/bin/ndrun
cmp() { "$ndrun" compare --min-time 0 --repeats 1 --no-probes --json "$@"; }
d="--shape 64,64 --shard 16,64 --grid 2x2"
for lib in "$proj/build/libmyops.so" "$proj/build-make/libmyops.so"; do
  export NDGEN_CACHE_DIR=$tmp/cache-${lib//\//_} # each library's on-demand kernels built anew
  if cmp --kernels "$lib" --op softplus $d | jqe '.match and .reference_checked == false and .jit == "prebuilt"' >/dev/null
  then ok; else bad "softplus (no reference) in $lib"; fi
  if "$ndrun" compare --kernels "$lib" --min-time 0 --repeats 1 --no-probes --op softplus $d 2>&1 | grep -q "NO REFERENCE CHECKED"
  then ok; else bad "softplus table does not say NO REFERENCE CHECKED in $lib"; fi
  if cmp --kernels "$lib" --op silu $d | jqe '.match and .reference_checked and .reference_name == "from EXPR"' >/dev/null
  then ok; else bad "silu against its derived reference in $lib"; fi
  for dt in f32 bf16 i32 u8; do
    if cmp --kernels "$lib" --op square --dtype $dt $d | jqe '.match and .reference_checked and .jit == "prebuilt"' >/dev/null
    then ok; else bad "square $dt in $lib"; fi
  done
  if cmp --kernels "$lib" --op rms_norm --scalars eps=1e-5 $d |
       jqe '.match and .reference_checked and .reference_name == "rms_norm_ref" and .jit == "prebuilt"' >/dev/null
  then ok; else bad "rms_norm against its C reference in $lib"; fi
  # a target no spec lists, for a user op on its own template: specialized on demand from the spec and
  # templates the library records (eltwise_rows.h from the installed templates on the include path)
  if cmp --kernels "$lib" --op rms_norm --scalars eps=0.5 --shape 48,80 --shard 16,80 --grid 3x1 |
       jqe '.match and .reference_checked and .jit == "built"' >/dev/null
  then ok; else bad "on-demand rms_norm from $lib"; fi
done
# and for a bundled op, from the installed specs and templates the bundled library records
if cmp --op relu --shape 48,80 --shard 16,80 --grid 3x1 | jqe '.match and .jit == "built"' >/dev/null
then ok; else bad "on-demand relu with the installed ndrun and bundled library"; fi

# 7. bad scalars are refused with a clear error
check_err() { # expected message, ndrun arguments
  local want=$1; shift
  if msg=$("$ndrun" compare --kernels "$proj/build/libmyops.so" --min-time 0 --repeats 1 --no-probes $d "$@" 2>&1); then
    bad "accepted: $*"
  elif echo "$msg" | grep -q -- "$want"; then ok; else bad "for '$*': got '$msg', expected '$want'"; fi
}
check_err "op 'rms_norm' takes the launch scalars eps: f32 in (0, 1]: give their values with --scalars" --op rms_norm
check_err "scalar 'eps' = 2 is outside (0, 1], the range its spec declares" --op rms_norm --scalars eps=2
check_err "'abc' is not a finite number" --op rms_norm --scalars eps=abc
check_err "has no scalar 'alpha'" --op rms_norm --scalars eps=1,alpha=2
check_err "gives twice the scalar 'eps'" --op rms_norm --scalars eps=1,eps=2
check_err "op 'softplus' takes no launch scalars" --op softplus --scalars eps=1

# 8. ndgen without the rest of the install says where it looked and what to give
mkdir -p "$tmp/alone" && cp "$p/bin/ndgen" "$tmp/alone/"
if msg=$("$tmp/alone/ndgen" generate --templates "$p/share/ndgen/templates" --output "$tmp/x.c" "$tmp/proj/softplus.lua" 2>&1); then
  bad "ndgen alone found nd_accessor.h somewhere"
elif echo "$msg" | grep -q "no nd_accessor.h in .*give --include DIR"; then ok; else bad "ndgen alone: $msg"; fi
cp "$p/bin/ndrun" "$tmp/alone/" && rm "$tmp/alone/ndgen"
if msg=$("$tmp/alone/ndrun" compare --op relu $d 2>&1); then bad "ndrun alone found a kernel library somewhere"
elif echo "$msg" | grep -q "the bundled kernel library, looked for beside ndrun; give one with --kernels FILE"; then ok
else bad "ndrun alone: $msg"; fi
if msg=$("$tmp/alone/ndrun" compare --kernels "$p/lib/libndgen_ops.so" --op relu $d 2>&1); then bad "ndrun alone found ndgen"
elif echo "$msg" | grep -q "runs ndgen, looked for beside ndrun as $tmp/alone/ndgen: .*give --no-jit"; then ok
else bad "ndrun alone, JIT on: $msg"; fi

# 9. the installed user library specializes on demand with its project gone (the walkthrough's last command)
rm -rf "$proj"
export NDGEN_CACHE_DIR=$tmp/cache-installed
if cmp --kernels "$p/lib/libmyops.so" --op rms_norm --scalars eps=1e-5 --shape 40,80 --shard 8,80 --grid 5x1 |
     jqe '.match and .reference_checked and .jit == "built"' >/dev/null
then ok; else bad "on-demand rms_norm from the installed libmyops.so, the project deleted"; fi

# 10. the prefix moved elsewhere still works: nothing in it knows where it was
mv "$p" "$tmp/moved"
p=$tmp/moved ndrun=$p/bin/ndrun
export PKG_CONFIG_PATH=$p/lib/pkgconfig
if [ "$(pkg-config --variable=templatedir ndgen)" -ef "$p/share/ndgen/templates" ]; then ok; else bad "ndgen.pc after the move"; fi
if cmp --op relu --shape 40,80 --shard 8,80 --grid 5x1 | jqe '.match and .jit == "built"' >/dev/null
then ok; else bad "on-demand relu after moving the prefix"; fi
make -C "$tmp/proj" B="$tmp/make2" >"$tmp/log" 2>&1 && out=$("$tmp/make2/run_softplus" "$tmp/make2/libmyops.so" 2>&1) &&
  echo "$out" | grep -q "^17 passed, 0 failed" && ok || bad "Makefile build after moving the prefix: $(tail -5 "$tmp/log") $out"

echo "test_install: $pass passed, $fail failed in $((SECONDS - t0)) s"
[ "$fail" = 0 ]
