#!/usr/bin/env bash
# The GPU specs and the compile variants of each, one home for every script
# that builds them (bench/gpu/prepare.sh: objects for the device;
# scripts/generated_code.sh: the PTX and host code, to compare two builds):
#   bench/gpu/variants.sh SPEC_DIR
# writes the specs into SPEC_DIR and prints one variant per line,
#   NAME SPEC [linattn-compile options...]
# One spec per family x {bf16 K=V=128 (the examples), bf16 K=V=64, f32
# K=V=64, bf16 K=V=32, 96, 160, 192, 224 and 256 (the head sizes the chunked kernels
# take besides), bf16 K=V=48 and 80 (run zero-padded to 64 and 96)}, H = HV = 8, dynamic B and T, each strategy with a GPU mapping:
# recurrent for all; scan (the token scan, one thread per state element) for
# the families with diagonal transitions; chunked (tensor cores) and
# segment-scan (the chunk states by a scan, the chunk kernels around it) for
# the 16-bit and f32 specs of every family (f32 split into bf16 hi + lo
# parts; negeig's f32 specs auto only).
# Variants are named <family>_<dtype>_<K>_<strategy>; gated_deltanet_l2norm
# and gla_l2norm are Gated DeltaNet and GLA with {qk_l2norm},
# gated_deltanet_f16_128 the example in f16, kda_h32 KDA with H = HV = 32; <strategy>-c128 variants are
# the chunked strategies with 128-token chunks, chunked-sN ones the chunked
# strategy with the state pass cut into segments of N chunks (N from
# LINATTN_SEGMENT_VARIANTS, default "16 32 64"; 4 for the dense
# transitions' segment maps), <strategy> auto the default
# (recurrent up to the fitted model's T limit, chunked beyond; segments at run time for the
# scalar kinds).
set -euo pipefail
cd "$(dirname "$0")/../.."
specs=${1:?usage: bench/gpu/variants.sh SPEC_DIR}
mkdir -p "$specs"
families="identity:linear_attention constant_decay:retnet scalar_gate:simple_gla key_gate:gla delta:deltanet gated_delta:gated_deltanet negeig_delta:deltanet_negeig kda:kda"
for pair in $families; do
  kind=${pair%%:*} name=${pair##*:}
  cp "examples/$name.mlir" "$specs/${name}_bf16_128.mlir"
  for variant in bf16:64 f32:64 bf16:32 bf16:96 bf16:160 bf16:192 bf16:224 bf16:256 bf16:48 bf16:80; do
    dtype=${variant%%:*} size=${variant##*:}
    /usr/bin/python3 - "$kind" "$name" "$dtype" "$size" "$specs/${name}_${dtype}_${size}.mlir" <<'PY'
import sys
sys.path.insert(0, "test/lib")
import linattn_ref as ref
kind, name, dtype, size, path = sys.argv[1:]
decay = ref.retnet_decay(8) if kind == "constant_decay" else None
ref.write_spec(path, kind, name, dtype, 1, 1, 8, 8, int(size), int(size), decay=decay)
PY
  done
done
# The delta rules and the per-key gates in f32 at the head size of their
# models (K = V = 128): the split operands' error grows with K.
for pair in delta:deltanet gated_delta:gated_deltanet key_gate:gla kda:kda; do
  kind=${pair%%:*} name=${pair##*:}
  /usr/bin/python3 - "$kind" "$name" "$specs/${name}_f32_128.mlir" <<'PY'
import sys
sys.path.insert(0, "test/lib")
import linattn_ref as ref
kind, name, path = sys.argv[1:]
ref.write_spec(path, kind, name, "f32", 1, 1, 8, 8, 128, 128)
PY
done
# K != V: V = 224, where the wide state-pass blocks' last one is half past
# V and K <= 128 gives them producer warps, and V = 160 (32-column blocks):
# libraries <name>_bf16_KxV.
for shape in gated_delta:gated_deltanet:128:224 delta:deltanet:128:160; do
  IFS=: read -r kind name K V <<< "$shape"
  /usr/bin/python3 - "$kind" "$name" "$K" "$V" "$specs/${name}_bf16_${K}x${V}.mlir" <<'PY'
import sys
sys.path.insert(0, "test/lib")
import linattn_ref as ref
kind, name, K, V, path = sys.argv[1:]
ref.write_spec(path, kind, name, "bf16", 1, 1, 8, 8, int(K), int(V))
PY
done
# Gated DeltaNet with q and k normalised in the call (qk_l2norm, factored:
# q and k reach the tensor cores as they come, their reciprocal norms in
# the UT transform's coefficients and on the output's rows), at K = V =
# 128 and at the other head sizes the chunked kernels take.
sed 's/state(%s0)$/state(%s0) {qk_l2norm}/' examples/gated_deltanet.mlir \
  > "$specs/gated_deltanet_l2norm_bf16_128.mlir"
grep -q qk_l2norm "$specs/gated_deltanet_l2norm_bf16_128.mlir"
for size in 64 192 256; do
  sed 's/state(%s0)$/state(%s0) {qk_l2norm}/' "$specs/gated_deltanet_bf16_$size.mlir" \
    > "$specs/gated_deltanet_l2norm_bf16_$size.mlir"
  grep -q qk_l2norm "$specs/gated_deltanet_l2norm_bf16_$size.mlir"
done
# And in f32, whose keys the kernels hold split (the row norms formed from
# hi + lo).
sed 's/state(%s0)$/state(%s0) {qk_l2norm}/' "$specs/gated_deltanet_f32_128.mlir" \
  > "$specs/gated_deltanet_l2norm_f32_128.mlir"
grep -q qk_l2norm "$specs/gated_deltanet_l2norm_f32_128.mlir"
# The other delta kinds likewise at K = V = 128 (negeig's rank-1 scale 2,
# KDA's per-key gates).
for name in deltanet deltanet_negeig kda; do
  sed 's/state(%s0)$/state(%s0) {qk_l2norm}/' "examples/$name.mlir" \
    > "$specs/${name}_l2norm_bf16_128.mlir"
  grep -q qk_l2norm "$specs/${name}_l2norm_bf16_128.mlir"
done
# GLA (per-key gates, no rank-1 term: two l2norm kernels write q and k
# normalised in the inputs' type for the tensor-core ones).
sed 's/state(%s0)$/state(%s0) {qk_l2norm}/' examples/gla.mlir \
  > "$specs/gla_l2norm_bf16_128.mlir"
grep -q qk_l2norm "$specs/gla_l2norm_bf16_128.mlir"
# KDA at H = HV = 32 (the 32-head layer of Kimi Linear's shape in the
# KDA benchmark of issue 25): libraries kda_h32_...
sed 's/x8x/x32x/g' examples/kda.mlir > "$specs/kda_h32_bf16_128.mlir"
grep -q 'x32x128xbf16' "$specs/kda_h32_bf16_128.mlir"
# And in f16 (the tensor cores' other 16-bit type).
sed 's/bf16/f16/g' examples/gated_deltanet.mlir > "$specs/gated_deltanet_f16_128.mlir"

for spec in "$specs"/*.mlir; do
  base=$(basename "$spec" .mlir)
  echo "${base}_recurrent $spec --strategy=recurrent"
  case "$base" in
    # f32 inputs of negeig (whose reflections carry the split's error past
    # 1e-4: bench/NOTES.md f2) have no chunked kernels: auto alone
    # (recurrent, and --linattn-explain says why).
    deltanet_negeig_f32_*) echo "${base}_auto $spec" ;;
    # Above 128 the chunked kernels take a spec only where their tiles fit
    # (negeig's split W at 256 since its state pass may take one input
    # stage, bench/NOTES.md ws2): auto alone, which keeps recurrent where
    # they do not (linattn-fit-chunked-kernels).
    *_160|*_192|*_224|*_256|*x160|*x224) echo "${base}_auto $spec" ;;
    *) echo "${base}_chunked $spec --strategy=chunked"
       echo "${base}_segment-scan $spec --strategy=segment-scan"
       # strategy=auto: recurrent for short T (decode; the fitted model's limit), chunked beyond,
       # dispatched at run time; for the kinds with scalar transitions the
       # state pass also cut into segments at run time when B is small.
       echo "${base}_auto $spec" ;;
  esac
  case "$base" in
    linear_attention_*|retnet_*|simple_gla_*|gla_*)
      echo "${base}_scan $spec --strategy=scan" ;;
  esac
  case "$base" in
    *_160|*_192|*_224|*_256|*x160|*x224) ;;
    linear_attention_*|retnet_*|simple_gla_*)
      # The chunk states' segments (linattn-segment-chunk-states) of the
      # kinds whose transitions are scalars.
      for segments in ${LINATTN_SEGMENT_VARIANTS:-16 32 64}; do
        echo "${base}_chunked-s${segments} $spec --strategy=chunked --segment-chunks=$segments"
      done
      # The long chunk (128 tokens) of the kinds without a rank-1 term and
      # with row gates, forced.
      for strategy in chunked segment-scan; do
        echo "${base}_${strategy}-c128 $spec --strategy=$strategy --chunk-size=128"
      done ;;
    *_160|*_192|*_224|*_256|*_48|*_80) ;;
    deltanet_negeig_f32_*) ;;
    gla_*|deltanet_*|gated_deltanet_*|kda_*)
      # The dense transitions' segments (linattn.segment_maps, the entering
      # states, the state pass again from them), forced: 4 chunks a
      # segment, so that T = 1000 has four and T = 16384 sixty-four.
      echo "${base}_chunked-s4 $spec --strategy=chunked --segment-chunks=4" ;;
  esac
done
