#!/usr/bin/env bash
# instructions.sh [BUILD_DIR] - instructions counted by valgrind's callgrind (counts do not depend on
# machine noise), generic kernel against specialized, in two tables:
#
# 1. Per page of address generation and iteration, at ranks 1 to 8. The kernel is page_copy with
#    one-element pages, so a page's own work is one 4-byte load and store and nearly everything counted
#    is finding the page and moving on to the next. Each rank's shards have uneven edges (3 split as
#    2+1) on every leading axis, so rank squeezing cannot merge them away.
# 2. Per element, for the ops of issue 16 at bench-like distributions: vector math, softmax, reductions
#    over each axis set, permutes.
#
# Per page (per element) = (I(large) - I(small)) / (pages (elements) of large - of small) over the same
# number of launches, which cancels every per-launch cost; counts are inclusive of what the kernel calls
# (libmvec's functions included).
#
# valgrind 3.19 cannot decode AVX-512, so this uses its own build, with kernels (and ndrun's own
# loops) compiled for x86-64-v3 (AVX2): BUILD_DIR, default build-instructions, configured if needed.
# There, eltwise_rows.h's VMATH_WIDE is off and libmvec's 8-lane variants run: on an AVX-512 build the
# math ops take fewer instructions than table 2 shows.
NAME=instructions.sh
. "$(dirname "$0")/callgrind_build.sh"
opts="--no-probes --cache-dir $tmp/cache --repeats 1 --min-time 0"

# flags RANK LAST: shape 3,..,3,LAST, shard 2,..,2,LAST/2, one-element pages, on 2x1 cores
flags() {
  local r=$1 last=$2 shape="" shard="" page="" i
  for ((i = 1; i < r; ++i)); do shape+="3,"; shard+="2,"; page+="1,"; done
  echo "--op page_copy --shape ${shape}${last} --shard ${shard}$((last / 2)) --page ${page}1 --grid 2x1 --threads 1"
}

# counted SYMBOL ARGS..: instructions executed inside SYMBOL and what it calls, over every launch of
# ndrun compare ARGS
counted() {
  local sym=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" --toggle-collect="$sym" \
    $ndrun compare "$@" $opts >/dev/null 2>"$tmp/vg" || { cat "$tmp/vg" >&2; exit 1; }
  awk '/^totals:/ { print $2 }' "$tmp/cg"
}

# count RANK LAST SYMBOL: counted for page_copy at flags RANK LAST
count() { counted "$3" $(flags "$1" "$2"); }

# pages RANK LAST
pages() { local r=$1 n=$2 i; for ((i = 1; i < r; ++i)); do n=$((n * 3)); done; echo "$n"; }

launches=3 # ndrun compare --repeats 1: the check, the warm-up round and one timed round
printf "%-5s %12s %12s %10s\n" rank generic specialized ratio
for r in 1 2 3 4 5 6 7 8; do
  small=64 large=128
  [ "$r" -ge 6 ] && small=16 large=32 # keep the largest case small under valgrind
  for last in "$small" "$large"; do # specialize on demand outside valgrind
    $ndrun compare $(flags "$r" "$last") $opts >/dev/null
  done
  g1=$(count "$r" "$small" nd_page_copy__f32__generic) g2=$(count "$r" "$large" nd_page_copy__f32__generic)
  s1=$(count "$r" "$small" 'nd_page_copy__f32__t*') s2=$(count "$r" "$large" 'nd_page_copy__f32__t*')
  dp=$(( $(pages "$r" "$large") - $(pages "$r" "$small") ))
  awk -v r="$r" -v g1="$g1" -v g2="$g2" -v s1="$s1" -v s2="$s2" -v dp="$dp" -v l="$launches" 'BEGIN {
    g = (g2 - g1) / (dp * l); s = (s2 - s1) / (dp * l)
    printf "%-5d %12.2f %12.2f %9.1fx\n", r, g, s, g / s }'
done

# Table 2: OP SMALL LARGE per row, each a shape (and the flags after it) whose element counts differ.
# Two threads' worth of cores (2x1) as the bench, one thread running them.
echo
printf "%-34s %12s %12s %10s\n" "op, per element" generic specialized ratio
ops=(
  "gelu|--shape 64,1024 --shard 32,1024|--shape 128,1024 --shard 64,1024"
  "exp|--shape 64,1024 --shard 32,1024|--shape 128,1024 --shard 64,1024"
  "sigmoid|--shape 64,1024 --shard 32,1024|--shape 128,1024 --shard 64,1024"
  "tanh|--shape 64,1024 --shard 32,1024|--shape 128,1024 --shard 64,1024"
  "softmax|--shape 64,1024 --shard 32,1024|--shape 128,1024 --shard 64,1024"
  "reduce_sum|--shape 64,1024 --shard 32,1024 --axes 1 --operand out --shard 32|--shape 128,1024 --shard 64,1024 --axes 1 --operand out --shard 64"
  "reduce_sum|--shape 64,1024 --shard 32,1024 --axes 0 --operand out --shard 512|--shape 128,1024 --shard 64,1024 --axes 0 --operand out --shard 512"
  "reduce_sum|--shape 8,64,256 --shard 4,64,256 --axes 0,2 --operand out --shard 32|--shape 16,64,256 --shard 8,64,256 --axes 0,2 --operand out --shard 32"
  "reduce_sum|--shape 64,1024 --shard 32,1024 --axes 0,1 --operand out --shape 1,1 --shard 1,1|--shape 128,1024 --shard 64,1024 --axes 0,1 --operand out --shape 1,1 --shard 1,1"
  "reduce_max|--shape 64,1024 --shard 32,1024 --axes 1 --operand out --shard 32|--shape 128,1024 --shard 64,1024 --axes 1 --operand out --shard 64"
  "reduce_max|--shape 64,1024 --shard 32,1024 --axes 0 --operand out --shard 512|--shape 128,1024 --shard 64,1024 --axes 0 --operand out --shard 512"
  "permute|--shape 256,1024 --shard 128,1024|--shape 512,1024 --shard 256,1024"
  "permute|--shape 32,64,64 --shard 16,64,64 --perm 2,0,1 --operand out --shard 32,32,64|--shape 64,64,64 --shard 32,64,64 --perm 2,0,1 --operand out --shard 32,64,64"
  "permute|--shape 32,64,64 --shard 16,64,64 --perm 0,2,1|--shape 64,64,64 --shard 32,64,64 --perm 0,2,1"
)
elements() { # the product of the first --shape's dims (the input's: an output may have its own)
  local shape; shape=$(grep -oE -- '--shape [0-9,]+' <<<"$1" | head -1 | cut -d' ' -f2)
  echo $(( ${shape//,/*} ))
}
for row in "${ops[@]}"; do
  IFS='|' read -r op small large <<<"$row"
  for a in "$small" "$large"; do # specialize on demand outside valgrind
    $ndrun compare --op "$op" --grid 2x1 $a --threads 1 $opts >/dev/null
  done
  g1=$(counted "nd_${op}__f32__generic" --op "$op" --grid 2x1 $small --threads 1)
  g2=$(counted "nd_${op}__f32__generic" --op "$op" --grid 2x1 $large --threads 1)
  s1=$(counted "nd_${op}__f32__t*" --op "$op" --grid 2x1 $small --threads 1)
  s2=$(counted "nd_${op}__f32__t*" --op "$op" --grid 2x1 $large --threads 1)
  de=$(( $(elements "$large") - $(elements "$small") ))
  label="$op $(grep -oE -- '--(axes|perm) [0-9,]+' <<<"$small" | head -1)"
  [ "$op" = permute ] && [ "$label" = "permute " ] && label="permute (transpose)"
  awk -v op="$label" -v g1="$g1" -v g2="$g2" -v s1="$s1" -v s2="$s2" -v de="$de" -v l="$launches" 'BEGIN {
    g = (g2 - g1) / (de * l); s = (s2 - s1) / (de * l)
    printf "%-34s %12.2f %12.2f %9.1fx\n", op, g, s, g / s }'
done
