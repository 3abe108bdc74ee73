#!/usr/bin/env bash
# partial.sh [BUILD_DIR] - what each partial set buys (issue 17, docs/partial.md): for representative cases,
# instructions per page (valgrind's callgrind) and time of the generic kernel, each partial set
# ("pattern": the shape at run time; "shard": the shape and the cores) and the exact kernel, as one
# Markdown table.
#
# Instructions per page, as bench/instructions.sh counts them: the kernel's instructions (inclusive of
# what it calls) at two sizes of one pattern, (I(large) - I(small)) / (pages(large) - pages(small)) over the
# same launches, which cancels every per-launch cost. Pages are the output's, the kernels' loop. The
# page_copy cases have one-element pages, so a page's own work is a 4-byte load and store and the count
# is the address arithmetic and loop control per page.
#
# Time: one `ndrun compare --fixed SET` per set on the large size, which times the generic and the
# specialized kernel in interleaved rounds; "vs exact" is (SET / generic) / (exact / generic), each ratio
# of medians from its own run. Repeated REPEATS times (default 3): the table gives the median and the
# spread of those ratios.
#
# valgrind 3.19 cannot decode AVX-512, so kernels and ndrun are built for x86-64-v3 (AVX2) in BUILD_DIR
# (default build-instructions, shared with instructions.sh), configured if needed.
NAME=partial.sh
. "$(dirname "$0")/callgrind_build.sh"
repeats=${REPEATS:-3}
command -v jq >/dev/null || { echo "partial.sh: jq is not installed" >&2; exit 2; }
ndgen=$build/bin/ndgen
base="--no-probes --cache-dir $tmp/cache"

# The cases: name, op, flags with SIZE where the sizes differ, the small and large SIZE counted, the SIZE
# timed (operands of 4 to 32 MiB), and what a page is
cases=(
  "add, row pages|add|--shape SIZE,1024 --shard 64,256 --grid 4x2|96|192|4096|1 KiB rows"
  "relu, tile pages|relu|--shape SIZE,512 --shard 64,128 --tile 32x32 --grid 4x2|96|192|8192|4 KiB 32x32 tiles"
  "reshard, rows to columns on another grid|reshard|--shape SIZE,1024 --operand a --shard 64,1024 --grid 2x2 --operand out --shard 64,256 --grid 4x1|96|192|4096|4 KiB rows to 1 KiB rows"
  "matmul, 64x64 shards|matmul|--shape SIZE,256,256 --shard 64,64 --grid 2x2|128|256|1024|256 B rows"
  "relu, rank 5, uneven edges|relu|--shape 3,5,7,9,SIZE --shard 2,2,4,4,64 --grid 4x2|96|192|2000|256 B rows"
  "page_copy, rank 2|page_copy|--shape SIZE,64 --shard 2,32 --page 1,1 --grid 2x1|64|128|16384|one element (4 B)"
  "page_copy, rank 5, uneven edges|page_copy|--shape 3,3,3,3,SIZE --shard 2,2,2,2,8 --page 1,1,1,1,1 --grid 2x1|16|32|8192|one element (4 B)"
)
sets=(all pattern shard)

# flags CASE-FLAGS SIZE
flags() { echo "${1//SIZE/$2}"; }

# pages OP FLAGS: the output's pages (ndgen show of its distribution: the flags after --operand out, or all)
pages() {
  local f=$2 shape
  shape=$(echo "$f" | sed -E 's/.*--shape ([0-9,]+).*/\1/')
  if [ "$1" = matmul ]; then # I,K,J: the output is I x J
    IFS=, read -r i _ j <<<"$shape"
    f="${f/--shape $shape/--shape $i,$j}"
  fi
  f=$(echo "$f" | sed -E 's/--operand a .*--operand out//')
  $ndgen show $f --format json | jq .num_pages
}

# count OP FLAGS SET SYMBOL: instructions inside SYMBOL over the run's launches
count() {
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" --toggle-collect="$4" \
    $ndrun compare --op "$1" $2 --fixed "$3" $base --threads 1 --repeats 1 --min-time 0 >/dev/null 2>"$tmp/vg" ||
    { cat "$tmp/vg" >&2; exit 1; }
  awk '/^totals:/ { print $2 }' "$tmp/cg"
}
launches=3 # --repeats 1: the check, the warm-up round and one timed round

# median of the numbers on stdin, and (max - min) / median as a percentage
stats() { sort -g | awk '{ v[NR] = $1 } END { m = v[int((NR + 1) / 2)]; printf "%.3f %.0f", m, m ? 100 * (v[NR] - v[1]) / m : 0 }'; }

machine=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "machine: $machine, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) at the start; $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| case (pages) | pages counted | instructions per page: generic | exact | pattern | shard | time: exact / generic | pattern / exact | shard / exact |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for c in "${cases[@]}"; do
  IFS='|' read -r name op f small large timed kind <<<"$c"
  fs=$(flags "$f" "$small") fl=$(flags "$f" "$large") ft=$(flags "$f" "$timed")
  ps=$(pages "$op" "$fs") pl=$(pages "$op" "$fl") dp=$((pl - ps))
  declare -A per=()
  for s in "${sets[@]}"; do
    for f2 in "$fs" "$fl"; do # specialize on demand outside valgrind
      $ndrun compare --op "$op" $f2 --fixed "$s" $base --repeats 1 --min-time 0 >/dev/null
    done
    a=$(count "$op" "$fs" "$s" "nd_${op}__f32__t*") b=$(count "$op" "$fl" "$s" "nd_${op}__f32__t*")
    per[$s]=$(awk -v a="$a" -v b="$b" -v dp="$dp" -v l="$launches" 'BEGIN { printf "%.1f", (b - a) / (dp * l) }')
  done
  a=$(count "$op" "$fs" all "nd_${op}__f32__generic") b=$(count "$op" "$fl" all "nd_${op}__f32__generic")
  gen=$(awk -v a="$a" -v b="$b" -v dp="$dp" -v l="$launches" 'BEGIN { printf "%.1f", (b - a) / (dp * l) }')
  # time, on the timed size with 2 threads: REPEATS runs per set, ratios of medians within each run
  : >"$tmp/t"
  for ((r = 0; r < repeats; ++r)); do
    for s in "${sets[@]}"; do
      $ndrun compare --op "$op" $ft --fixed "$s" $base --repeats 10 --min-time 0.3 --json |
        jq -r --arg s "$s" --arg r "$r" '"\($r) \($s) \(.specialized_s / .generic_s)"' >>"$tmp/t"
    done
  done
  ratio() { awk -v s="$1" -v d="$2" '$2 == s { x[$1] = $3 } $2 == d { y[$1] = $3 } END { for (r in x) print x[r] / y[r] }' "$tmp/t" | stats; }
  eg=$(awk '$2 == "all" { print $3 }' "$tmp/t" | stats)
  pe=$(ratio pattern all) se=$(ratio shard all)
  fmt() { set -- $1; printf "%.2fx (spread %s%%)" "$1" "$2"; }
  echo "| $name ($kind) | $ps, $pl | $gen | ${per[all]} | ${per[pattern]} | ${per[shard]} | $(fmt "$eg") | $(fmt "$pe") | $(fmt "$se") |"
  unset per
done
echo
echo "load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
