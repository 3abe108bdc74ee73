#!/usr/bin/env bash
# test_adversarial.sh NDGEN ADVERSARIAL_DIR - the refused half of the adversarial template corpus: every
# spec adversarial/specs/no_*.lua is refused with exactly its message (the first stderr line, with the
# corpus folder's path written as "templates/..." or "specs/..."), exit code 1, and leaves no output,
# depfile, stamp or temporary file behind. The accepted half runs in test_adversarial.c.
set -u
ndgen=$1
adv=$2
real=$(cd "$adv" && pwd -P)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 seen=0

# expect SPEC MESSAGE: the first stderr line must be MESSAGE once the corpus folder's path is dropped.
expect() {
  local spec=$1 want=$2
  seen=$((seen + 1))
  rm -rf "$tmp/out" && mkdir "$tmp/out"
  "$ndgen" generate --templates "$adv/templates" --output "$tmp/out/k.c" --depfile "$tmp/out/k.d" \
    --stamp "$tmp/out/k.stamp" "$adv/specs/$spec" >"$tmp/stdout" 2>"$tmp/stderr"
  local rc=$?
  local got
  got=$(head -n 1 "$tmp/stderr" | sed -e "s#$real/##g" -e "s#$adv/##g")
  if [ $rc -ne 1 ]; then fail=$((fail + 1)); echo "FAIL $spec: exit $rc, want 1" >&2; return; fi
  if [ -n "$(ls -A "$tmp/out")" ]; then fail=$((fail + 1)); echo "FAIL $spec: left $(ls "$tmp/out")" >&2; return; fi
  if [ "$got" != "$want" ]; then
    fail=$((fail + 1)); printf 'FAIL %s:\n  got  %s\n  want %s\n' "$spec" "$got" "$want" >&2; return
  fi
  pass=$((pass + 1))
}

bound="use it only as the tensor argument of nda_* calls (never assign it, store it, pass it elsewhere or take its address)"
once="is named outside a macro body; a header is read once per generated file, in the first variant that includes it, so only its macro bodies may use parameters, the template's macros or, in directives, other headers' macros"

# Bindings: one name, one operand, for the whole kernel.
expect no_rebind.lua   "templates/rebind.c:8:5: 'a' is bound to operand 0: $bound"
expect no_swap.lua     "templates/swap_tmp.c:9:29: 'a' is bound to operand 0: $bound"
expect no_alias.lua    "templates/alias.c:8:27: 'a' is bound to operand 0: $bound"
expect no_addr_of.lua  "templates/addr_of.c:8:36: 'a' is bound to operand 0: $bound"
expect no_pass_bound.lua "templates/pass_bound.c:10:32: 'out' is bound to operand 1: $bound"
expect no_helper_accessor.lua "templates/helper_accessor.c:7:12: nda_page_read's tensor must be a variable bound with nda_operand(args, N)"
expect no_helper_binds.lua "templates/helper_binds.c:6:27: bind operands in the kernel, as nda_operand(args, K) with the kernel's own args"
expect no_operand_loop.lua "templates/operand_loop.c:8:31: nda_operand's index must be an integer constant from 0 to 7"
expect no_pick_oob.lua "specs/no_pick_oob.lua:3: op 'adv_pick_oob': declares 3 operands, but template templates/param_binding.c binds 6 (nda_operand 0..5)"
expect no_args.lua     "templates/args_misuse.c:8:9: use the kernel's args only as nda_operand(args, K), args->scalars and args->nscalars"
# Accessor functions: only direct calls, written in the template's own text.
expect no_fnptr.lua    "templates/fnptr.c:10:18: nda_page_read is used other than in a direct call; ndgen specializes only the calls it sees"
expect no_macro_arg.lua "templates/macro_arg.c:11:36: nda_page_read is called inside a macro expansion; ndgen cannot rewrite it there"
expect no_macro_loop.lua "templates/macro_loop.c:10:5: nda_iter_local is called inside a macro expansion; ndgen cannot rewrite it there"
expect no_param_call.lua "templates/param_static.c:17:16: nda_rank is called inside a macro expansion; ndgen cannot rewrite it there"
expect no_loop_goto.lua "templates/loop_goto.c:12:13: 'goto' inside an nda_iter loop; the specialized loop nest cannot honour it"
# Names: the generated code's, renamed ones, and those a parameter or a header brings in.
expect no_ndk_name.lua "templates/ndk_name.c:9:22: 'ndk0_x': names starting with ndk and a digit are the generated code's"
expect no_macro_base.lua "templates/macro_base.c:11:5: the macro 'base' (defined at templates/macro_base.c:5:9) is a name the code ndgen generates here uses; rename the macro"
expect no_hdr_stats.lua "templates/hdr_macro_stats.c:9:5: the macro 'owner_of' (defined at templates/adv_stats_macro.h:5:9) is a name the code ndgen generates here uses; rename the macro"
expect no_macro_shadow.lua "templates/macro_shadow.c:17:16: a macro body names 'scale', which here means a local declaration but is also a file-scope name of the template; rename one of them"
expect no_param_static.lua "templates/param_static.c:17:16: 'scale', a file-scope name of the template, comes from a macro that pastes it together or from a header; ndgen gives each kernel its own copy of such names and cannot rename it there: name it in the template itself"
# Text the generated file reads once: headers, and __COUNTER__.
expect no_hdr_eager.lua "templates/adv_eager.h:5:45: NDT_SCALE, a template parameter, $once"
expect no_hdr_cond.lua "templates/adv_cond.h:6:8: ADV_FAST, a macro of the template's own, $once"
expect no_hdr_order.lua "templates/adv_order_b.h:5:8: ADV_ORDER_A, a macro of the header templates/adv_order_a.h, $once"
expect no_counter.lua  "templates/counter.c:14:35: __COUNTER__ counts on through the generated file, so each kernel made from the template would see another value"
expect no_trigraph.lua "templates/trigraph.c:10:28: the trigraph ??/ means one thing in ISO C modes and another in GNU modes, so the compiler could read this text otherwise than ndgen; write it another way"
# Element types against dtypes.
expect no_type_bf16.lua "specs/no_type_bf16.lua:3: op 'adv_type_bf16': parameter T is 'float', but operand 'a' is bf16, stored as uint16_t; leave T out and ndgen derives it from the dtype"
expect no_type_mixed.lua "specs/no_type_mixed.lua:3: op 'adv_type_mixed': operands 'a' (u8) and 'out' (f32) differ in dtype, but template templates/one_type.c declares one element type NDT_T; declare NDT_T1 (and NDT_T0, ...) for operands of their own type"
expect no_hard_type.lua "templates/hard_type.c:6:9: NDT_T is defined without #ifndef NDT_T around it, so the spec's value for it would be replaced; give the template's default as #ifndef NDT_T / #define ... / #endif"
expect no_hardfloat.lua "templates/hardfloat_u8.c:12:26: nda_page_read reads operand 'a' as 4-byte floating elements, but op 'adv_hardfloat' (specs/no_hardfloat.lua:3) declares it u8, 1-byte integer; use NDT_T (or NDT_T0), which ndgen derives from the dtype, or read bytes"
expect no_undeclared_type.lua "specs/no_undeclared_type.lua:3: op 'adv_undeclared_type': unknown parameter 'T'; template templates/hardfloat_u8.c declares: none"

# Every refused spec of the corpus is checked here.
specs=$(ls "$adv"/specs/no_*.lua | wc -l)
if [ "$specs" -ne "$seen" ]; then fail=$((fail + 1)); echo "FAIL: $specs refused specs in $adv/specs, $seen checked" >&2; fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
