#!/usr/bin/env bash
# test_sharding_cli.sh NDGEN DOC - the mesh-level front ends from the command line: ndgen show with
# --einshard, --pspec and --placements (JSON checked with jq), ndgen plan on the einshard tutorial's MLP
# (data parallel, tensor parallel, hybrid; the Megatron sharding needs exactly one all-reduce), and bad
# input: one line on stderr, exit status 1 (2 for usage), nothing written.
set -u
ndgen=$1 doc=$2
TOOL=$ndgen
. "$(dirname "$0")/cli.sh"
check() { json_ok "$1" "$2"; }
refuse() { refused "$1" "$2" "$3"; }

show="show --format json --grid 8x1"
check "$show --einshard 'a b -> * a* b*' --shape 4,4" '.mesh == [2,2,2] and .shard_shape == [2,2] and .replicas == 2'
check "$show --einshard 'a b -> * a* b*' --shape 4,4" '.groups == [[[0,0],[1,0],[2,0],[3,0]],[[4,0],[5,0],[6,0],[7,0]]]'
check "$show --einshard 'x y -> x y*' --shape 128,256" '.mesh == [1,8] and .shard_shape == [128,32] and .replicas == 1'
# einshard gives every '...' dim a mesh axis of size 1 (src/einshard/einshard.py)
check "$show --einshard '... -> * ...' --shape 8,128" '.mesh == [8,1,1] and .shard_shape == [8,128] and .replicas == 8'
# einshard and JAX refuse a split that does not divide; --uneven allows a short last shard
refuse "show --einshard 'a -> a*' --shape 13 --grid 6x1" 1 "size 13 does not divide into 6 shards; einshard builds a JAX NamedSharding"
check "$show --einshard 'a -> a*' --shape 13 --grid 6x1 --uneven" '.shard_shape == [3] and .distribution.data_pages_per_core == [1,1,1,1,1]'
refuse "show --pspec \"P('a')\" --mesh a=4 --shape 13 --grid 4x1" 1 "JAX requires a PartitionSpec to divide every dim it shards"
check "$show --pspec \"P('a')\" --mesh a=8 --shape 13 --uneven" '.shard_shape == [2]'
check "$show --placements '[Shard(0)]' --mesh 8 --shape 13" '.shard_shape == [2] and .pspec == null and (.pspec_error | test("JAX requires")) and .einshard == null'
refuse "show --einshard 'a -> a*' --shape 13 --grid 6x1 --even --uneven" 1 "--even, --uneven: give one of them"
check "$show --einshard 'a b -> a2 b*' --shape 8,8 --grid 4x2" '.mesh == [2,4] and .pspec == "P('"'a'"', '"'b'"')"'
# JAX's reduced and unreduced sets, and unreduced_kind (jax/_src/partition_spec.py)
check "$show --pspec \"P('dp', reduced={'tp'})\" --mesh dp=2,tp=4 --shape 8,6" '.placements == "[Shard(0), Replicate()]" and .replicas == 4 and .parts == 1'
check "$show --pspec \"P('dp', None, unreduced={'tp'}, unreduced_kind=max)\" --mesh dp=2,tp=4 --shape 8,6" '.placements == "[Shard(0), Partial(max)]" and .parts == 4'
# a mesh-level sharding is about devices: the einshard tutorial's Llama weight, L1 checked only on request
check "$show --einshard 'f m -> f* m' --shape 14336,4096" '.shard_shape == [1792,4096]'
refuse "show --einshard 'f m -> f* m' --shape 14336,4096 --grid 8x1 --l1-size 1536K" 1 "but each holds 1572864"
check "$show --pspec \"P('dp', None)\" --mesh dp=2,tp=4 --shape 8,6" '.placements == "[Shard(0), Replicate()]" and .replicas == 4'
check "$show --placements '[Shard(0), Partial(sum)]' --mesh dp=2,tp=4 --shape 8,6" '.parts == 4 and .einshard == null and (.einshard_error | test("Partial"))'
check "$show --einshard 'a b c -> a* b* c*' --shape 8,8,8 --grid 64x1" '.mesh == [4,4,4] and .shard_shape == [2,2,2]'
"$ndgen" show --einshard 'a b -> * a* b*' --shape 4,4 --grid 8x1 --format svg --output "$tmp/m.svg" && grep -q '<svg' "$tmp/m.svg" && ok || bad "svg"
"$ndgen" show --einshard 'a b -> * a* b*' --shape 4,4 --grid 8x1 | grep -q "^copy 1 .*(4,0) (5,0) (6,0) (7,0)" && ok || bad "text groups"

refuse "show --einshard 'a b' --shape 4,4 --grid 8x1" 1 "expected '->' at column 4"
refuse "show --einshard 'a b -> a* b*' --shape 4,4 --grid 6x1" 1 "6 cores do not factor"
refuse "show --einshard 'a b -> a*' --shape 4,4 --grid 8x1" 1 "left-hand axis 'b' is missing on the right side"
refuse "show --einshard '... a ... -> a* ...' --shape 4,4 --grid 8x1" 1 "more than one '...' on the left side at column 7"
refuse "show --pspec \"P('dp', 'tp', None)\" --mesh dp=2,tp=4 --shape 4,4 --grid 8x1" 1 "longer than the tensor's rank 2"
# a right-hand name given twice splits at its last element; the earlier one replicates (einshard's dict)
check "$show --einshard 'a b -> a* b a' --shape 4,4" '.mesh == [8,1,1] and .replicas == 8 and .shard_shape == [4,4]'
refuse "show --einshard 'a a -> a*' --shape 4,4 --grid 8x1" 1 "axis 'a' named twice on the left side"
refuse "show --pspec \"P('dp', 'dp')\" --mesh dp=2,tp=4 --shape 4,4 --grid 8x1" 1 "mesh axis 'dp' used twice"
refuse "show --einshard 'a -> a*' --shape 13 --grid 6x1 --even" 1 "axis 'a' (dim 0): size 13 does not divide into 6 shards"
refuse "show --einshard 'a b -> a* b' --shape 100,64 --tile 32x32 --grid 4x1" 1 "size 100 split 4 ways gives shards of 25"
refuse "show --pspec \"P('dp')\" --shape 4,4 --grid 8x1" 1 "--mesh: required with --pspec"
refuse "show --einshard 'a b -> a* b' --shard 2,2 --shape 4,4 --grid 8x1" 1 "drop it"
refuse "show --einshard 'a b -> a* b' --pspec 'P()' --mesh 8 --shape 4,4 --grid 8x1" 1 "give one of them"
refuse "show --placements '[Shard(0)]' --mesh 2,4 --shape 4,4 --grid 8x1" 1 "1 placements for a mesh of 2 axes"

# plan: the einshard tutorial's MLP, bx,xy->by then by,yz->bz, on 8 cores
mlp="plan 'bx,xy->by' 'by,yz->bz' --shape b=8,x=128,y=256,z=64 --grid 8x1 --format json"
check "$mlp --in X='... -> * ...' --in W1='x y -> x y*' --in W2='y z -> y* z'" \
  '.collectives == ["all_reduce"] and .bytes == 114688'
check "$mlp --in X='... -> * ...' --in W1='x y -> x y*' --in W2='y z -> y* z'" \
  '.steps[0].parallelism == "data parallel" and .steps[0].partial == false and .steps[1].parallelism == "tensor parallel" and .steps[1].partial == true and .steps[1].parts == 8'
check "$mlp --in X='... -> * ...' --in W1='x y -> x y*' --in W2='y z -> y* z'" \
  '.steps[1].axes == [{"axis":"b","role":"free","sharded":false},{"axis":"y","role":"reduced","sharded":true},{"axis":"z","role":"free","sharded":false}]'
check "$mlp --in X='b x -> b* x' --in W1='... -> * ...' --in W2='... -> * ...'" \
  '.collectives == [] and .bytes == 0 and ([.steps[].parallelism] | unique) == ["data parallel"]'
check "$mlp --in X='b x -> b2 x *' --in W1='x y -> 2 x y*' --in W2='y z -> 2 y* z'" \
  '.steps[1].parallelism == "hybrid (data and tensor parallel)" and .collectives == ["all_reduce"] and .steps[1].parts == 4'
check "$mlp --in X='pspec:P()' --in W1='pspec:P(None, \"tp\")' --in W2='pspec:P(\"tp\", None)' --mesh tp=8" \
  '.collectives == ["all_reduce"] and .bytes == 114688'
# x sharded in both: Partial; asking for a result split along y picks a reduce-scatter
check "plan 'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' --shape b=8,x=128,y=256 --grid 8x1 --out 'b y -> b y*' --format json" \
  '.collectives == ["reduce_scatter"] and .steps[0].result == "b y -> y8 b"'
# the alternatives come fewest bytes on the busiest core first, and include all_reduce and gathering the inputs
check "plan 'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' --shape b=8,x=128,y=256 --grid 8x1 --alternatives --format json" \
  '[.steps[0].alternatives[] | [.max_core_bytes, .bytes]] as $b | ($b == ($b | sort)) and ([.steps[0].alternatives[].collective] | index("all_reduce") != null) and ([.steps[0].alternatives[].gather] | index("all_gather") != null)'
# only the reduced axis of one operand sharded: gathering X's x (7/8 of 4096 bytes a core) beats the
# all_reduce of the pending sum (7 * 8192 bytes a core)
check "plan 'bx,xy->by' --in X='b x -> b x*' --in W='... -> * ...' --shape b=8,x=128,y=256 --grid 8x1 --format json" \
  '.steps[0].input_bytes == 28672 and .steps[0].partial == false and .collectives == ["all_gather"]'

refuse "plan 'bx,xy' --in X='b x -> b x*' --in W='x y -> x y*' --shape b=8,x=8,y=8 --grid 8x1" 1 "expected '->'"
refuse "plan 'bx,xy->bq' --in X='b x -> b x*' --in W='x y -> x y*' --shape b=8,x=8,y=8 --grid 8x1" 1 "output axis 'q' is in no input"
refuse "plan 'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x y*' --shape b=8,x=8 --grid 8x1" 1 "no size for axis 'y'"
refuse "plan 'bx,xy->by' --in X='b x -> b x*' --shape b=8,x=8,y=8 --grid 8x1" 1 "needs another --in"
refuse "plan 'bx,xy->by' --in 'X=placements:[Partial(max)]' --in W='x y -> x y*' --mesh 8 --shape b=8,x=8,y=8 --grid 8x1" 1 "input X is Partial(max); only a pending sum or avg"
refuse "$show --placements '[Partial(max), Partial(sum)]' --mesh 2,4 --shape 8,8" 1 "are Partial(max) and Partial(sum): parts pending different reductions cannot be held as one tensor"
check "$show --placements \"[Partial(reduce_op='product')]\" --mesh 8 --shape 8,8" '.replicas == 8'
check "$show --placements '[Shard(dim=0), Partial(avg)]' --mesh 2,4 --shape 8,8" '.replicas == 4'
refuse "plan 'bx,xy->by' --in X='b x -> b x2' --in W='x y -> x y*' --shape b=8,x=8,y=8 --grid 8x1" 1 "the mesh holds 2 devices, but there are 8 cores"
refuse "plan 'bx,xy->by' --in X='b x -> b x*' --in W='x y -> x* y' --shape b=8,x=8,y=8 --grid 8x1 --mesh 8 --out 'placements:[Partial(max)]'" 1 "no plan here reaches that sharding"
refuse "plan --in X='b x -> b* x' --shape b=8 --grid 8x1" 2 "give 1 to 8 einsums"

# the docs/front-ends.md's plan and show examples are what the commands print
shown=$(awk '/^\$ ndgen plan/{s=1; next} s&&/^    --shape/{p=1; next} p&&/^```/{exit} p' "$doc")
actual=$("$ndgen" plan 'bx,xy->by' 'by,yz->bz' --in X='... -> * ...' --in W1='x y -> x y*' --in W2='y z -> y* z' \
  --shape b=8,x=128,y=256,z=64 --grid 8x1 --alternatives)
[ -n "$shown" ] && [ "$shown" = "$actual" ] && ok || bad "docs/front-ends.md's plan example differs: $(diff <(echo "$shown") <(echo "$actual"))"
shown=$(awk '/^\$ ndgen show --einshard/{p=1; next} p&&/^\.\.\./{exit} p' "$doc")
actual=$("$ndgen" show --einshard 'a b -> * a* b*' --shape 4,4 --grid 8x1 | head -n "$(echo "$shown" | wc -l)")
[ -n "$shown" ] && [ "$shown" = "$actual" ] && ok || bad "docs/front-ends.md's show example differs: $(diff <(echo "$shown") <(echo "$actual"))"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
