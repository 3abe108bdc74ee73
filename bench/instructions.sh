#!/usr/bin/env bash
# instructions.sh [BUILD_DIR] - instructions per page of address generation and iteration, generic
# against specialized, at ranks 1 to 8, counted by valgrind's callgrind (counts do not depend on
# machine noise).
#
# The kernel is page_copy with one-element pages, so a page's own work is one 4-byte load and store
# and nearly everything counted is finding the page and moving on to the next. Each rank's shards
# have uneven edges (3 split as 2+1) on every leading axis, so rank squeezing cannot merge them away.
# Per page = (I(large) - I(small)) / (pages(large) - pages(small)) over the same number of launches,
# which cancels every per-launch cost; counts are inclusive of what the kernel calls.
#
# valgrind 3.19 cannot decode AVX-512, so this uses its own build, with kernels (and ndrun's own
# loops) compiled for x86-64-v3 (AVX2): BUILD_DIR, default build-instructions, configured if needed.
NAME=instructions.sh
. "$(dirname "$0")/callgrind_build.sh"
opts="--no-probes --cache-dir $tmp/cache --repeats 1 --min-time 0"

# flags RANK LAST: shape 3,..,3,LAST, shard 2,..,2,LAST/2, one-element pages, on 2x1 cores
flags() {
  local r=$1 last=$2 shape="" shard="" page="" i
  for ((i = 1; i < r; ++i)); do shape+="3,"; shard+="2,"; page+="1,"; done
  echo "--op page_copy --shape ${shape}${last} --shard ${shard}$((last / 2)) --page ${page}1 --grid 2x1 --threads 1"
}

# count RANK LAST SYMBOL: instructions executed inside SYMBOL and what it calls, over every launch
count() {
  local args; args=$(flags "$1" "$2")
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" --toggle-collect="$3" \
    $ndrun compare $args $opts >/dev/null 2>"$tmp/vg" || { cat "$tmp/vg" >&2; exit 1; }
  awk '/^totals:/ { print $2 }' "$tmp/cg"
}

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
