#!/usr/bin/env bash
# test_plan.sh NDGEN - ndgen plan is right or refuses. Each case's bytes are worked out by hand below
# (f32: 4 bytes; 8 cores; "per core" is what the busiest core reads). The cost model: a core reads
# the input pages its block needs and does not hold, then, to resolve P parts, the other P-1 parts of
# every element of its result block (the direct algorithm ndgen's collectives use).
set -u
ndgen=$1
TOOL=$ndgen
. "$(dirname "$0")/cli.sh"
check() { json_ok "plan $1 --format json --alternatives" "$2"; }
refuse() { refused "plan $1" 1 "$2"; }

mm="--shape b=8,x=128,y=256 --grid 8x1"
sq="--mesh tp=8 --shape i=64,k=32,j=64 --grid 8x1"

# 1. A Partial input stays pending through a contraction. X [8,128] pending a sum over tp=8, W
#    replicated: no input page is remote; the result [8,256] (8192 bytes) is a pending sum of 8 parts;
#    all_reduce: each core reads 7 * 8192 = 57344 bytes, 458752 in all.
check "'bx,xy->by' --in \"X=pspec:P(None, None, unreduced={'tp'})\" --in 'W=pspec:P()' $mm --mesh tp=8" \
  '.steps[0].partial and .steps[0].reduce == "sum" and .steps[0].parts == 8 and .collectives == ["all_reduce"]
   and .bytes == 458752 and .steps[0].max_core_bytes == 57344 and .steps[0].input_bytes == 0'
#    The plan counts the direct algorithm and gives the two-phase one beside it: reduce_scatter then
#    all_gather reads 2 * 7/8 of the 8192-byte block per core, 14336, 114688 in all.
check "'bx,xy->by' --in \"X=pspec:P(None, None, unreduced={'tp'})\" --in 'W=pspec:P()' $mm --mesh tp=8" \
  '.steps[0].algorithm == "direct" and .steps[0].two_phase_max_core_bytes == 14336
   and .steps[0].two_phase_bytes == 114688'
#    A pending avg is linear too, and keeps its op: the all_reduce averages.
check "'bx,xy->by' --in 'X=placements:[Partial(avg)]' --in 'W=pspec:P()' $mm --mesh 8" \
  '.steps[0].reduce == "avg" and .bytes == 458752'
#    A pending max passes only through an einsum of one input that reduces nothing: a transpose of
#    [8,16] (512 bytes a part): 7 * 512 = 3584 per core.
check "'ij->ji' --in 'X=placements:[Partial(max)]' --mesh 8 --shape i=8,j=16 --grid 8x1" \
  '.steps[0].reduce == "max" and .steps[0].result == "[Replicate()]" and .steps[0].max_core_bytes == 3584'
refuse "'ij->i' --in 'X=placements:[Partial(max)]' --mesh 8 --shape i=8,j=16 --grid 8x1" \
  "input X is Partial(max); only a pending sum or avg, being linear, passes through a product or a reduction"
refuse "'bx,xy->by' --in 'X=placements:[Partial(max)]' --in W='x y -> x y*' --mesh 8 $mm" "input X is Partial(max)"
refuse "'bx,xy->by' --in 'X=placements:[Partial(sum)]' --in 'W=placements:[Partial(sum)]' --mesh 8 $mm" \
  "both inputs are Partial; a product of two pending sums is not a pending sum"

# 2. One mesh axis on two result dims: A [64,32] rows over tp, B [32,64] columns over tp. Keeping
#    both splits would leave core v only the diagonal block (v,v): never proposed. Gathering B's j
#    (8192 bytes, 1024 held) reads 7168 per core, 57344 in all; gathering A's i the same; both, 14336.
check "'ik,kj->ij' --in \"A=pspec:P('tp', None)\" --in \"B=pspec:P(None, 'tp')\" $sq" \
  '(.steps[0].alternatives | length) == 3 and .bytes == 57344 and .steps[0].max_core_bytes == 7168
   and .collectives == ["all_gather"] and ([.steps[0].alternatives[].max_core_bytes] == [7168, 7168, 14336])'

# 3. The reduced axis and a free axis on one mesh axis: A [64,32] splits k over tp, B [32,64] splits j
#    over tp. Core v would hold k-chunk v with j-chunk v only: never proposed. Following A's k with
#    j whole: v needs B's rows of its k-chunk (4 x 64, 1024 bytes), holds 4 x 8 of them (128): 896 per
#    core; the result [64,64] (16384 bytes) pends 8 parts: all_reduce 7 * 16384 + 896 = 115584 per core,
#    924672 in all. Gathering k (A whole: 8192 - 1024 = 7168 per core) keeps B's j split: 57344, chosen.
check "'ik,kj->ij' --in \"A=pspec:P(None, 'tp')\" --in \"B=pspec:P(None, 'tp')\" $sq" \
  '.collectives == ["all_gather"] and .bytes == 57344 and .steps[0].result == "P(None, \u0027tp\u0027)"
   and ([.steps[0].alternatives[] | select(.collective == "all_reduce")] | length == 1 and .[0].bytes == 924672
        and .[0].max_core_bytes == 115584)'

# 4. The operands split the reduced axis differently: X's x over all 8 cores (dp, tp), W's x over dp
#    only. Following X: W's rows are all local, the result pends 8 parts: 7 * 8192 = 57344 per core.
#    Following W: X's 64-column chunk (2048 bytes) of which 512 are held: 1536 per core; 2 parts:
#    8192 + 1536 = 9728 per core, 77824 in all, chosen whichever operand is written first.
check "'bx,xy->by' --in \"X=pspec:P(None, ('dp','tp'))\" --in \"W=pspec:P('dp', None)\" $mm --mesh dp=2,tp=4" \
  '.bytes == 77824 and .steps[0].max_core_bytes == 9728 and .steps[0].parts == 2
   and ([.steps[0].alternatives[] | select(.collective == "all_reduce") | .bytes] | sort == [77824, 458752])'
check "'xy,bx->by' --in \"W=pspec:P('dp', None)\" --in \"X=pspec:P(None, ('dp','tp'))\" $mm --mesh dp=2,tp=4" \
  '.bytes == 77824 and .steps[0].max_core_bytes == 9728'

# 5. A two-dim target by one reduce_scatter: the pending [8,256] result over 8 parts goes to
#    'b y -> b2 y4'; each core reads the 7 other parts of its [4,64] block: 7 * 1024 = 7168, 57344.
check "'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' $mm --out 'b y -> b2 y4'" \
  '.collectives == ["reduce_scatter"] and .bytes == 57344 and .steps[0].max_core_bytes == 7168
   and .steps[0].result == "b y -> b2 y4"'
#    A pending max is no plan's result here: refused. A split result reached by keeping part of a
#    whole one moves only the inputs gathered: X whole (256 bytes, 32 held), 224 a core, 1792 in all.
refuse "'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' $mm --mesh 8 --out 'placements:[Partial(max)]'" \
  "no plan here reaches that sharding with one collective"
check "'bx,xy->by' --in X='b x -> b* x' --in W='... -> * ...' --shape b=8,x=8,y=8 --grid 8x1 --out 'b y -> b y*'" \
  '.bytes == 1792 and .collectives == ["all_gather"] and .steps[0].result == "b y -> b y8"'

# 6. Ranked by the busiest core: b=2 rows reduce-scattered over 8 cores land on 2 of them (7 * 1024 =
#    7168 each), y=256 columns on all 8 (7 * 256 = 1792 each); both move 14336 in all. (2 rows over 8
#    cores do not divide: einshard's JAX sharding refuses that layout, so it takes --uneven; see 11.)
check "'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' --shape b=2,x=128,y=256 --grid 8x1 --uneven" \
  '[.steps[0].alternatives[] | select(.collective == "reduce_scatter") | [.bytes, .max_core_bytes]] == [[14336, 1792], [14336, 7168]]
   and ([.steps[0].alternatives[] | [.max_core_bytes, .bytes]] as $r | $r == ($r | sort))'

# 7. JAX and einshard splits must divide (JAX refuses them); --uneven allows a short last chunk.
refuse "'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' --shape b=8,x=100,y=8 --grid 8x1" \
  "size 100 does not divide into 8 shards; einshard builds a JAX NamedSharding"
check "'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' --shape b=8,x=100,y=8 --grid 8x1 --uneven" \
  '.collectives == ["all_reduce"]'

# 8. Placements compared by where the elements are. X splits i with y major (JAX: chunk y*2+x on
#    device (x,y)); P(('x','y')) puts chunks 1 and 2 on the other devices, so no plan keeps X's blocks:
#    each core reads the whole X (128 bytes) but its 32, 96 a core, and keeps its part.
check "'ij->ij' --in \"X=pspec:P(('y','x'))\" --mesh x=2,y=2 --shape i=8,j=4 --grid 4x1 --out \"pspec:P(('x','y'))\"" \
  '.bytes == 384 and .steps[0].max_core_bytes == 96 and .collectives == ["all_gather"]'
#    the same 8 pending parts written on another mesh are the same result: nothing to move
check "'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' $mm --mesh a=2,b=4 --out \"pspec:P(None, None, unreduced={'a','b'})\"" \
  '.bytes == 0 and .collectives == []'
# 9. The operands' order cannot change the plan (ties are broken by the result, not by the way's order)
order1=$("$ndgen" plan 'i,j->ij' 'ij,jk->ik' --in "X=pspec:P('a')" --in "Y=pspec:P('a')" --in "W=pspec:P('a',None)" \
  --mesh a=4 --shape i=8,j=8,k=64 --grid 4x1 --format json | jq -c '[.bytes, .steps[].result]')
order2=$("$ndgen" plan 'j,i->ij' 'ij,jk->ik' --in "Y=pspec:P('a')" --in "X=pspec:P('a')" --in "W=pspec:P('a',None)" \
  --mesh a=4 --shape i=8,j=8,k=64 --grid 4x1 --format json | jq -c '[.bytes, .steps[].result]')
[ -n "$order1" ] && [ "$order1" = "$order2" ] && ok || bad "operand order changed the plan: $order1 against $order2"
# 10. What the user wrote must mean one thing
refuse "'ij->i' --in X='j i -> j2 i' --shape i=4,j=8 --grid 2x1" "it names dim 0 'j', but the einsum calls it 'i'"
refuse "'ij,->i' --in X='i j -> i j' --shape i=4,j=8 --grid 1x1" "an input has no letters"
refuse "'ij->i' --in X='i j -> i j' --shape i=4,j=8,i=2 --grid 1x1" "'i' is given twice"

# 11. Every layout is one the user's system holds, in the user's notation. Without --uneven, a way whose
#     result splits a dim into pieces that do not divide it is never proposed (JAX and einshard refuse
#     it): b=4 and y=4 reduce-scattered over 8 cores; with --uneven both are.
check "'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' --shape b=4,x=64,y=4 --grid 8x1" \
  '[.steps[0].alternatives[] | .result] == ["[Partial(sum)]", "b y -> 8 b y", "b y -> 8 b y"]'
check "'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' --shape b=4,x=64,y=4 --grid 8x1 --uneven" \
  '[.steps[0].alternatives[] | .result] | index("b y -> b8 y") != null and index("b y -> y8 b") != null'
refuse "'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' --shape b=4,x=64,y=4 --grid 8x1 --out 'b y -> b* y'" \
  "size 4 does not divide into 8 shards; einshard builds a JAX NamedSharding"
#     PartitionSpec inputs give PartitionSpecs on the user's mesh, in its axis names: x split over
#     ('tp', 'dp') leaves parts pending over both, and scattering them along b gives P(('tp', 'dp'),
#     None), never ndgen's own m0, m1 (nor placements, which the plan printed before); placements
#     inputs give placements, the report naming the mesh.
pq="'bx,xy->by' --in \"X=pspec:P(None, ('tp', 'dp'))\" --in \"W=pspec:P(('tp', 'dp'), None)\" --mesh dp=2,tp=2 --shape b=8,x=16,y=4 --grid 4x1"
check "$pq" '.notation == "pspec" and .mesh == "dp=2,tp=2"
  and [.steps[0].alternatives[] | .result] == ["P(None, None, unreduced={\u0027dp\u0027, \u0027tp\u0027}, unreduced_kind=sum)",
    "P((\u0027tp\u0027, \u0027dp\u0027), None)", "P(None, (\u0027tp\u0027, \u0027dp\u0027))", "P(None, None)", "P(None, None)"]'
#     Each stated result parses back on the user's mesh as what it says (ndgen show, whose rules
#     test_notations checks against JAX's).
for r in $("$ndgen" plan 'bx,xy->by' --in "X=pspec:P(None, ('tp', 'dp'))" --in "W=pspec:P(('tp', 'dp'), None)" \
    --mesh dp=2,tp=2 --shape b=8,x=16,y=4 --grid 4x1 --alternatives --format json | jq -r '.steps[0].alternatives[] | .result | @base64'); do
  r=$(base64 -d <<<"$r")
  "$ndgen" show --pspec "$r" --mesh dp=2,tp=2 --shape 8,4 --grid 4x1 >/dev/null 2>&1 && ok || bad "plan result $r does not parse back"
done
check "'bx,xy->by' --in 'X=placements:[Shard(0), Shard(1)]' --in 'W=placements:[Replicate(), Shard(0)]' --mesh dp=2,tp=2 --shape b=8,x=16,y=4 --grid 4x1" \
  '.notation == "placements" and .mesh == "dp=2,tp=2" and .steps[0].output == "[Shard(0), Partial(sum)]"'
#     einshard inputs whose result only placements can state (Partial) print its mesh in text.
"$ndgen" plan 'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' --shape b=8,x=64,y=8 --grid 8x1 2>&1 \
  | grep -q 'output out: \[Partial(sum)\] on mesh m0=8 ' && ok || bad "a placements form of einshard inputs names no mesh"

finish
