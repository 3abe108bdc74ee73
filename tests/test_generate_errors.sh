#!/usr/bin/env bash
# test_generate_errors.sh NDGEN BAD_DIR - every malformed spec or template is refused with its own
# file:line (spec) or file:line:col (template) message and exit code 1, and leaves no output, depfile,
# stamp or temporary file behind.
set -u
ndgen=$1
bad=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# expect SPEC REGEX: the first stderr line must match REGEX (extended), anchored at the file:line.
expect() {
  local spec=$1 want=$2
  rm -rf "$tmp/out" && mkdir "$tmp/out"
  "$ndgen" generate --templates "$bad/templates" --output "$tmp/out/k.c" --depfile "$tmp/out/k.d" \
    --stamp "$tmp/out/k.stamp" "$bad/specs/$spec" >"$tmp/stdout" 2>"$tmp/stderr"
  local rc=$?
  if [ $rc -ne 1 ]; then fail=$((fail + 1)); echo "FAIL $spec: exit $rc, want 1" >&2; return; fi
  if [ -n "$(ls -A "$tmp/out")" ]; then fail=$((fail + 1)); echo "FAIL $spec: left $(ls "$tmp/out")" >&2; return; fi
  if ! head -n 1 "$tmp/stderr" | grep -qE -- "$want"; then
    fail=$((fail + 1)); echo "FAIL $spec: got '$(head -n 1 "$tmp/stderr")', want /$want/" >&2; return
  fi
  pass=$((pass + 1))
}

s='[^ ]*specs/'   # spec paths as given
t='[^ ]*templates/'
expect syntax.lua           "^${s}syntax.lua:4: unexpected symbol near <eof>$"
expect missing_template.lua "^${s}missing_template.lua:2: op 'x': missing field 'template'$"
expect wrong_type.lua       "^${s}wrong_type.lua:2: op 'x': field 'inputs' must be a list of operands"
expect unknown_template.lua "^${s}unknown_template.lua:2: op 'x': unknown template 'nope.c': not found in "
expect unknown_param.lua    "^${s}unknown_param.lua:2: op 'x': unknown parameter 'FOO'; template .*ok_unary.c declares: EXPR$"
expect bad_target.lua       "^${s}bad_target.lua:2: op 'x': target 1: operand 'a': shard 0,8: dim 0 is 0, but every dim must be positive$"
expect shard_pages.lua      "^${s}shard_pages.lua:2: op 'x': target 1: operand 'a': shard 3,8: dim 0 \(3\) is not a whole number of pages of 2,8$"
expect typo_field.lua       "^${s}typo_field.lua:2: op 'x': target 1: operand 'a': unknown distribution field 'shrad'$"
expect unknown_operand.lua  "^${s}unknown_operand.lua:2: op 'x': target 1: 'c' is not an operand of op 'x'$"
expect operand_count.lua    "^${s}operand_count.lua:2: op 'x': declares 3 operands, but template .*ok_unary.c binds 2"
expect bad_dtype.lua        "^${s}bad_dtype.lua:1: op 'x': operand 'a': dtype f64: unknown value; expected one of f32, bf16, f16, i32, u8$"
expect bad_name.lua         "^${s}bad_name.lua:2: op 'not-an-identifier': the name must be a C identifier$"
expect moves_data_type.lua  "^${s}moves_data_type.lua:2: op 'x': field 'moves_data' must be true or false$"
expect dup_op.lua           "^${s}dup_op.lua:3: op 'x' with these dtypes is declared twice \(first at line 2\)$"
expect no_op.lua            "^${s}no_op.lua:1: the spec declares no op"
expect runtime_error.lua    "^${s}runtime_error.lua:2: no targets for you$"
expect no_io.lua            "^${s}no_io.lua:1: attempt to index a nil value \(global 'io'\)$"
expect no_os.lua            "^${s}no_os.lua:1: attempt to index a nil value \(global 'os'\)$"
expect no_load.lua          "^${s}no_load.lua:1: attempt to call a nil value \(global 'load'\)$"
expect include_escape.lua   "^${s}include_escape.lua:1: include '../../CMakeLists.txt': only files inside the spec folder"
expect endless.lua          "^${s}endless.lua:1: the spec ran for more than [0-9]+ Lua instructions"
expect missing.lua          "^${s}missing.lua:1: cannot open "
expect index_only_output.lua "^${s}index_only_output.lua:1: op 'x': operand 'out': index 'z' appears only in the output$"
expect index_repeat.lua     "^${s}index_repeat.lua:1: op 'x': operand 'a': index 'iji' repeats 'i'; each axis appears once per operand$"
expect index_two_dots.lua   "^${s}index_two_dots.lua:1: op 'x': operand 'a': index 'i...j...' has more than one '...'$"
expect indices_param.lua    "^${s}indices_param.lua:2: op 'x': parameter 'INDICES' comes from the operands' index notation"
expect scalars_output.lua   "^${s}scalars_output.lua:2: op 'x': scalars 'perm\(out\)': the list's input 'out' must be an input of op 'x'$"
# Names that reach C, and parameter values that must stay one line of C (issue 11, item 7).
expect name_digit.lua       "^${s}name_digit.lua:2: op '1x': the name must be a C identifier$"
expect name_long.lua        "^${s}name_long.lua:2: op 'x{65}': the name is 65 characters long; at most 64 fit in a kernel's symbol$"
expect name_nul.lua         "^${s}name_nul.lua:2: field 'name' holds a NUL character$"
expect operand_name.lua     "^${s}operand_name.lua:1: op 'x': operand 'a\.b': the name must be a C identifier$"
expect operand_long.lua     "^${s}operand_long.lua:1: op 'x': operand 'a{64}': the name is 65 characters long; at most 64 fit in a kernel's symbol$"
expect operand_all.lua      "^${s}operand_all.lua:1: op 'x': operand 'all': the name is reserved for a target's 'all' key$"
expect operand_twice.lua    "^${s}operand_twice.lua:1: op 'x': operand 'a': the name is used twice$"
expect param_name.lua       "^${s}param_name.lua:2: op 'x': parameter 'EX PR': the name must be a C identifier$"
expect param_newline.lua    "^${s}param_newline.lua:2: op 'x': parameter 'EXPR': character 0x0a at column 4; the value must be one line of C$"
expect param_return.lua     "^${s}param_return.lua:2: op 'x': parameter 'EXPR': character 0x0d at column 6; the value must be one line of C$"
expect param_vtab.lua       "^${s}param_vtab.lua:2: op 'x': parameter 'EXPR': character 0x0b at column 4; the value must be one line of C$"
expect param_formfeed.lua   "^${s}param_formfeed.lua:2: op 'x': parameter 'EXPR': character 0x0c at column 4; the value must be one line of C$"
expect param_backslash.lua  "^${s}param_backslash.lua:2: op 'x': parameter 'EXPR': a trailing backslash would join the next line$"
expect param_comment.lua    "^${s}param_comment.lua:2: op 'x': parameter 'EXPR': a /\* comment is not closed$"
expect param_string.lua     "^${s}param_string.lua:2: op 'x': parameter 'EXPR': a string literal is not closed$"
expect param_nul.lua        "^${s}param_nul.lua:2: op 'x': parameter 'EXPR': the value holds a NUL character$"
expect no_parse.lua         "^${t}no_parse.c:5:13: error: expected expression$"
expect undeclared_call.lua  "^${t}undeclared_call.c:9:46: error: implicit declaration of function .half_of."
expect in_macro.lua         "^${t}in_macro.c:10:26: nda_page_read is called inside a macro expansion"
expect loop_break.lua       "^${t}loop_break.c:9:13: 'break' leaves an nda_iter loop"
expect unbound.lua          "^${t}unbound.c:6:11: nda_page_read's tensor must be a variable bound with nda_operand"
expect two_kernels.lua      "^${t}two_kernels.c:9:6: a second external function"
expect direct_model.lua     "^${t}direct_model.c:7:16: nd_layout_locate_id: templates reach distributions only through nda_"
expect iter_misuse.lua      "^${t}iter_misuse.c:8:23: use the iterator only as nda_iter_page"

# Typed launch scalars (issue 15): declarations, names templates read, values targets fix.
expect scalar_unknown.lua   "^${t}scalar_unknown.c:10:31: nda_scalar: op 'x' declares no scalar 'gamma' \(it declares: eps: f32\)$"
expect scalar_nonliteral.lua "^${t}scalar_nonliteral.c:11:31: nda_scalar's name must be a string literal naming a declared scalar"
expect scalar_type.lua      "^${s}scalar_type.lua:2: op 'x': scalars 'eps: f16': unknown type \(f32, f64, i32, i64, bool, axes\(INPUT\), perm\(INPUT\)\) at ' f16'"
expect scalar_range.lua     "^${s}scalar_range.lua:2: op 'x': scalars 'eps: f32 in \(1, 0\)': the range of 'eps' holds no value$"
expect scalar_list_last.lua "^${s}scalar_list_last.lua:2: op 'x': scalars 'axes: axes\(a\), eps: f32': the list 'axes' takes the rest of a launch's values, so it must be the last scalar"
expect scalar_fixed_range.lua "^${s}scalar_fixed_range.lua:2: op 'x': target 1: scalars: scalar 'eps' = 0 is outside \(0, inf\), the range its spec declares$"
expect scalar_fixed_name.lua "^${s}scalar_fixed_name.lua:2: op 'x': target 1: scalars: 'epsilon' is not a scalar op 'x' declares$"
expect scalar_fixed_int.lua "^${s}scalar_fixed_int.lua:2: op 'x': target 1: scalars: scalar 'n' = 1.5 is not an integer of int32_t \(i32\)$"
expect scalar_fixed_string.lua "^${s}scalar_fixed_string.lua:2: op 'x': target 1: scalars: 'n' must be a number, not a string$"
expect scalar_fixed_inexact.lua "^${s}scalar_fixed_inexact.lua:2: op 'x': target 1: scalars: 'n' = 9007199254740993 is not exact in a double, as launch values travel$"
expect scalar_fixed_none.lua "^${s}scalar_fixed_none.lua:2: op 'x': target 1: scalars: op 'x' declares no scalars$"
expect scalar_fixed_axes.lua "^${s}scalar_fixed_axes.lua:2: op 'x': target 1: scalars: scalars \[0,0\] are not distinct axes of the 2 axes of 'a'$"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
