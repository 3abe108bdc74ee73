#!/usr/bin/env bash
# test_readme_walkthrough.sh ROOT SPEC - the pages that show the adding-an-op project show it as it is:
# every file docs/adding-an-op.md and the README's "A first op" show (a fenced block after a line
# "<!-- file: PATH -->", PATH from ROOT, the repository's top folder) is that file, word for word;
# SPEC, the walkthrough's first spec, is among them; and every command of the README's "A first op" is
# one of the walkthrough's, which test_install runs in order.
set -u
root=$1 spec=$2
doc=$root/docs/adding-an-op.md readme=$root/README.md
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# check_files NAME TEXT: the file blocks of TEXT against the files
check_files() {
  local name=$1 text=$2 files f shown
  files=$(echo "$text" | sed -n 's/^<!-- file: \(.*\) -->$/\1/p')
  [ -n "$files" ] || { bad "no '<!-- file: PATH -->' blocks in $name"; return; }
  for f in $files; do
    shown=$(echo "$text" | awk -v f="$f" '$0 == "<!-- file: " f " -->" {m=1; next} m&&/^```/{if (p) exit; p=1; next} p')
    if [ ! -f "$root/$f" ]; then bad "$name shows $f, which does not exist"
    elif [ "$shown" = "$(cat "$root/$f")" ]; then ok
    else bad "$name's $f differs from the file: $(diff <(echo "$shown") "$root/$f")"; fi
  done
}
walk=$(cat "$doc")
first=$(awk '/^## A first op/{s=1; print; next} s&&/^## /{exit} s' "$readme")
check_files docs/adding-an-op.md "$walk"
check_files "README's A first op" "$first"
spec_rel=${spec#"$root"/}
if echo "$walk" | grep -qxF "<!-- file: $spec_rel -->"; then ok; else bad "docs/adding-an-op.md does not show $spec_rel"; fi

# the README's commands are the walkthrough's
cmds=$(echo "$first" | awk '/^```sh$/{p=1; next} p&&/^```$/{p=0; next} p')
[ -n "$cmds" ] || bad "no sh block in README's A first op"
walk_cmds=$(echo "$walk" | awk '/^```sh$/{p=1; next} p&&/^```$/{p=0; next} p')
while IFS= read -r c; do
  [ -z "$c" ] && continue
  if echo "$walk_cmds" | grep -qxF -- "$c"; then ok; else bad "README's command is not in the walkthrough: $c"; fi
done <<<"$cmds"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
