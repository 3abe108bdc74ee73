#!/usr/bin/env bash
# test_calls_def.sh ACCESSOR_H CALLS_DEF MODEL_H DOC - gen/calls.def, with the dtypes' conversions that
# ND_DTYPES in MODEL_H names (columns 6 and 7 of its rows), lists every function of the accessor API once,
# and nothing else: a function added to nd_accessor.h without a row would be refused in templates, and a
# row without a function would be a call ndgen thinks it can rewrite. DOC (docs/accessor.md, the API's
# reference page) names every one of them.
set -u
api=$(grep -oE '^(static inline|NDA_CONVERSION) [^(]*\bnda_[a-z0-9_]+\(' "$1" | grep -oE 'nda_[a-z0-9_]+\($' | tr -d '(' |
  sort)
conversions=$(grep -E '^ *X\(ND_[A-Z0-9]+, ' "$3" | awk -F, '{print $6; print $7}' | grep -oE 'nda_[a-z0-9_]+')
def=$( (grep -E '^NDG_(SPECIALIZED|LOOP|KEPT)\(' "$2" | grep -oE 'nda_[a-z0-9_]+'; echo "$conversions") | sort)
dups=$(echo "$def" | uniq -d)
undocumented=$(for f in $api; do grep -q "\b$f(" "$4" || echo "$f"; done)
if [ -n "$undocumented" ]; then
  echo "$4 does not name: $undocumented" >&2
  echo "0 passed, 1 failed"; exit 1
fi
if [ "$api" = "$def" ] && [ -z "$dups" ] && [ -n "$api" ]; then
  echo "$(echo "$api" | wc -l) functions agree; 1 passed, 0 failed"
else
  echo "nd_accessor.h and calls.def disagree (< header only, > calls.def only):" >&2
  diff <(echo "$api") <(echo "$def") >&2
  [ -n "$dups" ] && echo "listed twice: $dups" >&2
  echo "0 passed, 1 failed"; exit 1
fi
