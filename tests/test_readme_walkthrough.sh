#!/usr/bin/env bash
# test_readme_walkthrough.sh README SPEC - every file the README's "Adding an op" shows (a fenced block
# after a line "<!-- file: PATH -->", PATH from the README's folder) is that file, word for word; SPEC,
# the walkthrough's first spec, is among them. test_install runs the section's commands.
set -u
readme=$1 spec=$2
root=$(cd "$(dirname "$readme")" && pwd)
pass=0 fail=0
section=$(awk '/^## Adding an op/{s=1; print; next} s&&/^## /{exit} s' "$readme")
files=$(echo "$section" | sed -n 's/^<!-- file: \(.*\) -->$/\1/p')
[ -n "$files" ] || { echo "no '<!-- file: PATH -->' blocks in README's Adding an op" >&2; echo "0 passed, 1 failed"; exit 1; }
for f in $files; do
  shown=$(echo "$section" | awk -v f="$f" '$0 == "<!-- file: " f " -->" {m=1; next} m&&/^```/{if (p) exit; p=1; next} p')
  if [ ! -f "$root/$f" ]; then fail=$((fail + 1)); echo "README shows $f, which does not exist" >&2
  elif [ "$shown" = "$(cat "$root/$f")" ]; then pass=$((pass + 1))
  else fail=$((fail + 1)); echo "README's $f differs from the file:" >&2; diff <(echo "$shown") "$root/$f" >&2; fi
done
spec_rel=${spec#"$root"/}
if echo "$files" | grep -qxF "$spec_rel"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "README does not show $spec_rel" >&2; fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
