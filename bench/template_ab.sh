#!/usr/bin/env bash
# template_ab.sh [-r ROUNDS] [-b BUILD_DIR] COMMIT FILTER - the templates of COMMIT against the tree's, on
# the bench cases whose label or family contains FILTER (ndrun bench --list): each round runs every
# case's ndrun compare once with COMMIT's templates (searched first, --template-dir) and once with the
# tree's, alternating, each with its own JIT cache, so both specialized kernels are built the same way and
# timed in the same period. Prints one line per run: case, which, the specialized kernel's median and
# the best peer's median, in ms. Medians of --repeats 7 rounds each; rerun on a quiet machine to read
# small differences.
set -eu
rounds=3 build=build
while getopts r:b: o; do case $o in r) rounds=$OPTARG;; b) build=$OPTARG;; *) exit 2;; esac; done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { echo "usage: $0 [-r ROUNDS] [-b BUILD_DIR] COMMIT FILTER" >&2; exit 2; }
commit=$1 filter=$2
root=$(cd "$(dirname "$0")/.." && pwd)
ndrun=$root/$build/bin/ndrun
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$root" archive "$commit" templates | tar -x -C "$tmp"
chmod -R go-w "$tmp/templates" # the JIT compiles no file others could have written (docs/build-component.md)
mapfile -t cases < <("$ndrun" bench --list --filter "$filter")
printf 'case\twhich\tspecialized ms\tbest peer ms\n'
for ((round = 1; round <= rounds; ++round)); do
  for line in "${cases[@]}"; do
    label=${line:0:30} args=${line:44}
    label=${label%"${label##*[! ]}"} # without its padding
    for which in "$commit" tree; do
      extra=() cache=$tmp/cache-tree
      [ "$which" = tree ] || { extra=(--template-dir "$tmp/templates"); cache=$tmp/cache-old; }
      # shellcheck disable=SC2086 # args are the case's words
      "$ndrun" compare $args --repeats 7 --cache-dir "$cache" "${extra[@]}" --json |
        jq -r --arg l "$label" --arg w "$which" \
          '[$l, $w, (.specialized.median_s * 1000 | . * 100 | round / 100),
            ((.peers | map(.median_s) | min // null) | if . then . * 1000 * 100 | round / 100 else "-" end)] | @tsv'
    done
  done
done
