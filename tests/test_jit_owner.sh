#!/usr/bin/env bash
# test_jit_owner.sh NDRUN - a JIT cache only its owner can plant. A valid entry whose library runs a
# constructor (a stand-in for a planted one) is loaded from the user's own cache, but refused, with
# the reason, when its folder is writable by others (0777, 0770), belongs to another user (as root:
# nobody), is reached through a symbolic link to such a folder, or lies below a folder others can
# write without the sticky bit; a library file of another user's is never loaded; nothing is compiled
# from a spec, template or header (what the generator read) another user owns or can write. Each
# refused run still succeeds through the generic kernel. The default folder: $NDGEN_CACHE_DIR, $XDG_CACHE_HOME/ndgen,
# ~/.cache/ndgen; with none set, a private temporary folder with a notice, removed at exit.
set -u
. "$(dirname "$0")/jqe.sh"
ndrun=$1
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
realcc=${CC:-cc}

# a compiler that links a constructor into every library: loading it writes $PLANT_MARK
cat >"$tmp/planted.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void planted(void)
{
    const char *p = getenv("PLANT_MARK");
    FILE *fp = p ? fopen(p, "w") : NULL;
    if (fp)
        fclose(fp);
}
EOF
cat >"$tmp/plantcc" <<EOF
#!/bin/sh
case " \$* " in *" -shared "*) exec $realcc "\$@" "$tmp/planted.c";; esac
exec $realcc "\$@"
EOF
chmod +x "$tmp/plantcc"
export PLANT_MARK=$tmp/mark CC=$tmp/plantcc
case_args=(--op sub --shape 24,40 --shard 8,40 --grid 3x1 --min-time 0 --repeats 1 --no-probes --json)

# run NAME CACHE EXPECTED_JIT [REASON]: one compare; REASON, a pattern of the warning when refused
run() {
  local name=$1 cache=$2 want=$3 reason=${4:-} out rc
  rm -f "$PLANT_MARK"
  out=$("$ndrun" compare --cache-dir "$cache" "${case_args[@]}" 2>"$tmp/err")
  rc=$?
  if [ $rc != 0 ] || ! echo "$out" | jqe --arg j "$want" '.match and .jit == $j' >/dev/null; then
    bad "$name: rc $rc, expected jit '$want': $(echo "$out" | jq -c '{match, jit}' 2>/dev/null) $(cat "$tmp/err")"
    return
  fi
  if [ "$want" = fallback ]; then
    if [ -e "$PLANT_MARK" ]; then bad "$name: the planted library was loaded"; return; fi
    if ! echo "$out" | jqe '.specialized_symbol == .generic_symbol' >/dev/null; then bad "$name: not generic"; return; fi
    if ! grep -q "^ndrun: warning: jit: cache folder .* refused: $reason; the generic kernel runs" "$tmp/err"; then
      bad "$name: the warning does not say why: $(cat "$tmp/err")"; return
    fi
  elif [ ! -e "$PLANT_MARK" ]; then
    bad "$name: the library was not loaded"; return
  fi
  ok
}

c=$tmp/home/cache
mkdir -p "$tmp/home"
run "first build" "$c" built
run "own cache" "$c" cache
[ "$(stat -c %a "$c")" = 700 ] && ok || bad "a new cache folder is mode $(stat -c %a "$c"), not 700"

chmod 777 "$c"
run "mode 0777" "$c" fallback "$c is writable by group and others (mode 0777)"
chmod 770 "$c"
run "mode 0770" "$c" fallback "$c is writable by its group (mode 0770)"
chmod 700 "$c"
run "mode 0700 again" "$c" cache

# another user's folder: as root, nobody's; else a folder of root's, when there is one to use
if [ "$(id -u)" = 0 ]; then
  chown nobody "$c"
  run "owned by nobody" "$c" fallback "$c belongs to uid [0-9]* (nobody), not to you, uid 0 (root)"
  chown root "$c"
else
  run "owned by root" / fallback "/ belongs to uid 0 (root), not to you, uid $(id -u).*"
fi

# a link to a folder others can write: the real folder is checked
mkdir -p "$tmp/open"
cp -a "$c" "$tmp/open/cache"
chmod 777 "$tmp/open/cache"
ln -s "$tmp/open/cache" "$tmp/home/link"
run "link to a 0777 folder" "$tmp/home/link" fallback "$tmp/open/cache is writable by group and others (mode 0777)"

# a folder above the cache that others can write: refused without the sticky bit, accepted with it
chmod 700 "$tmp/open/cache"
chmod 777 "$tmp/open"
run "below a 0777 folder" "$tmp/open/cache" fallback \
  "the folder above it, $tmp/open, is writable by group and others (mode 0777) without the sticky bit"
chmod 1777 "$tmp/open"
run "below a sticky folder" "$tmp/open/cache" cache
chmod 755 "$tmp/open"

# a library file another user could have replaced: never loaded, rebuilt
chmod 666 "$c"/*.so
run "a 0666 library" "$c" rebuilt
[ "$(stat -c %a "$c"/*.so)" = 755 ] && ok || bad "the rebuilt library is mode $(stat -c %a "$c"/*.so)"

# what the generator read must be root's or this user's and not writable by others: a spec and
# templates another user can change would run that user's code as this one. Copies of the bundled
# specs and templates, given first (--spec-dir, --template-dir); each refused run still succeeds.
root_dir=$(cd "$(dirname "$ndrun")/.." && pwd)
inputs() {
  local name=$1 reason=$2 out rc
  rm -f "$PLANT_MARK"
  out=$("$ndrun" compare --cache-dir "$tmp/inputs-cache-$name" --spec-dir "$tmp/theirs/specs" \
        --template-dir "$tmp/theirs/templates" "${case_args[@]}" 2>"$tmp/err")
  rc=$?
  if [ $rc = 0 ] && echo "$out" | jqe '.match and .jit == "fallback"' >/dev/null && [ ! -e "$PLANT_MARK" ] &&
     grep -q "^ndrun: warning: jit: op 'sub': not compiling what the generator read: $reason; the generic kernel runs" "$tmp/err"
  then ok; else bad "inputs $name: rc $rc: $(echo "$out" | jq -c '{match, jit}' 2>/dev/null) $(cat "$tmp/err")"; fi
}
mkdir -p "$tmp/theirs"
cp -rL "$root_dir/share/ndgen/specs" "$root_dir/share/ndgen/templates" "$tmp/theirs/"
chmod -R go-w "$tmp/theirs"
out=$("$ndrun" compare --cache-dir "$tmp/inputs-cache-own" --spec-dir "$tmp/theirs/specs" \
      --template-dir "$tmp/theirs/templates" "${case_args[@]}" 2>"$tmp/err")
echo "$out" | jqe '.match and .jit == "built"' >/dev/null && [ -e "$PLANT_MARK" ] && ok ||
  bad "inputs of one's own: $(echo "$out" | jq -c '{match, jit}' 2>/dev/null) $(cat "$tmp/err")"
chmod o+w "$tmp/theirs/templates/eltwise_binary.c"
inputs "a template others can write" "$tmp/theirs/templates/eltwise_binary.c is writable by others (mode 0646)"
chmod o-w "$tmp/theirs/templates/eltwise_binary.c"
chmod 777 "$tmp/theirs/specs"
inputs "a spec below a folder others can write" \
  "the folder above it, $tmp/theirs/specs, is writable by group and others (mode 0777) without the sticky bit"
chmod 755 "$tmp/theirs/specs"
if [ "$(id -u)" = 0 ]; then
  chown -R nobody "$tmp/theirs"
  inputs "another user's spec" "$tmp/theirs/specs/eltwise.lua belongs to uid [0-9]* (nobody), not to you, uid 0 (root), nor to root"
  chown -R root "$tmp/theirs"
fi

# the default folder: $NDGEN_CACHE_DIR, else $XDG_CACHE_HOME/ndgen, else ~/.cache/ndgen
unset CC PLANT_MARK
dflt() { env -u NDGEN_CACHE_DIR -u XDG_CACHE_HOME -u HOME TMPDIR="$tmp/t" "$@" "$ndrun" compare "${case_args[@]}"; }
mkdir -p "$tmp/t"
out=$(dflt NDGEN_CACHE_DIR="$tmp/d1" XDG_CACHE_HOME="$tmp/x" HOME="$tmp/h" 2>"$tmp/err")
[ $? = 0 ] && ls "$tmp/d1"/*.manifest >/dev/null 2>&1 && [ ! -e "$tmp/x" ] && ok || bad "NDGEN_CACHE_DIR: $(cat "$tmp/err")"
out=$(dflt XDG_CACHE_HOME="$tmp/x" HOME="$tmp/h" 2>"$tmp/err")
[ $? = 0 ] && ls "$tmp/x/ndgen"/*.manifest >/dev/null 2>&1 && ok || bad "XDG_CACHE_HOME: $(cat "$tmp/err")"
out=$(dflt HOME="$tmp/h" 2>"$tmp/err")
[ $? = 0 ] && ls "$tmp/h/.cache/ndgen"/*.manifest >/dev/null 2>&1 && ok || bad "HOME: $(cat "$tmp/err")"
[ "$(stat -c %a "$tmp/h/.cache")" = 700 ] && ok || bad "~/.cache made with mode $(stat -c %a "$tmp/h/.cache")"

# none set (HOME unset, or empty): a private temporary folder, a one-line notice, removed at exit
for home in unset empty; do
  if [ $home = unset ]; then out=$(dflt 2>"$tmp/err"); else out=$(dflt HOME= 2>"$tmp/err"); fi
  rc=$?
  if [ $rc = 0 ] && echo "$out" | jqe '.match and .jit == "built"' >/dev/null &&
     [ "$(grep -c . "$tmp/err")" = 1 ] &&
     grep -q "^ndrun: note: jit: no cache folder (.*): kernels specialized on demand go to $tmp/t/ndgen-jit-[A-Za-z0-9]*, removed at exit$" "$tmp/err" &&
     [ -z "$(ls -A "$tmp/t")" ] && [ ! -e /tmp/ndgen-cache-"$(id -u)" ]; then ok
  else bad "HOME $home: rc $rc: $(echo "$out" | jq -c '{match, jit}' 2>/dev/null) $(cat "$tmp/err"); left: $(ls -A "$tmp/t")"; fi
done
# --no-jit: no notice, no folder
out=$(env -u NDGEN_CACHE_DIR -u XDG_CACHE_HOME -u HOME TMPDIR="$tmp/t" "$ndrun" compare --no-jit --op sub --shape 24,40 \
      --shard 8,40 --grid 3x1 --min-time 0 2>&1)
rc=$? # the library has no kernel for it and nothing may be built: refused, saying so (not any failure)
[ $rc = 1 ] && echo "$out" | grep -q "^ndrun compare: op 'sub': no specialized kernel for these distributions" &&
  ! echo "$out" | grep -q "note: jit" && [ -z "$(ls -A "$tmp/t")" ] && ok ||
  bad "--no-jit: rc $rc, another message, a notice, or a folder made: $out"

echo "test_jit_owner: $pass passed, $fail failed"
[ $fail = 0 ]
