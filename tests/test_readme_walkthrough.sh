#!/usr/bin/env bash
# test_readme_walkthrough.sh README SPEC - the README's "Adding an op" spec is the file the walkthrough
# test builds, word for word.
set -u
readme=$1 spec=$2
shown=$(awk '/^## Adding an op/{s=1} s&&/^```lua/{p=1; next} p&&/^```/{exit} p' "$readme")
if [ "$shown" = "$(cat "$spec")" ]; then echo "1 passed, 0 failed"; else
  echo "README's spec differs from $spec:" >&2; diff <(echo "$shown") "$spec" >&2; echo "0 passed, 1 failed"; exit 1; fi
