# callgrind_build.sh - sourced by the scripts that count instructions with valgrind's callgrind
# (instructions.sh, partial.sh), with NAME set to the script's name and $1 its BUILD_DIR argument: checks
# the tools, makes a scratch folder $tmp (removed at exit), and builds ndrun (and ndgen) in $build
# (default build-instructions), configured if needed with kernels for x86-64-v3 (AVX2), since valgrind
# 3.19 cannot decode AVX-512. Sets src, build, tmp and ndrun.
set -eu
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-build-instructions}
for tool in valgrind callgrind_annotate; do
  command -v $tool >/dev/null || { echo "$NAME: $tool is not installed (apt-get install valgrind)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -x "$build/bin/ndrun" ]; then
  cmake -S "$src" -B "$build" -DBUILD_TESTING=OFF -DNDGEN_KERNEL_CFLAGS="-O3 -march=x86-64-v3" >/dev/null
fi
cmake --build "$build" -j2 --target ndrun >/dev/null
ndrun=$build/bin/ndrun
# ndrun executes itself again to set OpenBLAS's variables for its peer (bench/machine.c), which valgrind
# cannot follow: set them first (the CPU valgrind emulates has no AVX-512)
export OPENBLAS_THREAD_TIMEOUT=4 OPENBLAS_CORETYPE=Haswell
