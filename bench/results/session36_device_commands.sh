#!/usr/bin/env bash
# Session 36's device calls (H200): the backward with S_n stored in bf16
# (bench/NOTES.md b22). Objects prepared here (the first call's .carry/bwd36
# and .carry/bb36 came from the first form, S_n and H_n both bf16; the
# second and third calls' from the kept form, S_n alone; same commands):
#   LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/check_backward.py variants" bench/gpu/prepare.sh .carry/bwd36b \
#     '^(deltanet_bf16_k128v128|deltanet_l2norm_bf16_k128v128|gated_deltanet_bf16_k128v128|gated_deltanet_bf16_k128v128_hv2|gated_deltanet_l2norm_bf16_k128v128|gated_deltanet_l2norm_bf16_k128v128_hv2|gated_deltanet_bf16_k64v128|gated_deltanet_bf16_k96v128|gated_deltanet_bf16_k256v256|deltanet_negeig_bf16_k128v128|kda_bf16_k128v128|kda_l2norm_bf16_k128v128|gla_bf16_k128v128|gla_l2norm_bf16|simple_gla_bf16_k128v128|linear_attention_bf16|retnet_bf16|gated_deltanet_bf16)$'
#   LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/bench_backward.py variants" bench/gpu/prepare.sh .carry/bb36 \
#     '^(gated_deltanet_h8|gated_deltanet_h8_l2norm|gated_deltanet_h8_hv16|deltanet_h8|deltanet_negeig_h8|kda_h8|gla_h8)$'
#   .carry/bbf: bb36's gated_deltanet_h8, deltanet_h8 and gated_deltanet_h8_hv16 objects;
#   .carry/triton-gdn: session 35's Triton cache (.carry/triton-bwd) without its l2norm,
#   chunk_fwd_kernel_h and vector-cumsum entries (so that the call's carry fits 64 MiB).
# and session 35's .carry/bb35 (HEAD 729aa30's objects, the "before"). The first call ran
# check-and-times with CHECKS=.carry/bwd36 and its new rows also "simple_gla_h8 4 4096".
# Each case below was one call.
set -e
OUT=${OUT:-/tmp/o}
ROWS='^(gated_deltanet_h8 4 (1024|4096|16384)|deltanet_h8 4 4096|gated_deltanet_h8_l2norm 4 4096|deltanet_negeig_h8 4 4096|kda_h8 4 4096|gla_h8 4 4096)$'
CHECKS=${CHECKS:-.carry/bwd36b} NEW=${NEW:-.carry/bb36}
case "${1:-}" in
  check-and-times) # gpu_check_backward_narrow_states_h200.{json,log}, ..._T16384_h200.json,
                   # narrow_states_backward_times_{base,new}_h200_nofla.json
    OBJECTS=$CHECKS OUT=$OUT/check timeout 240 bench/gpu/device.sh backward --T 1,17,65,1000 --B 2 --hard-T 1000 --memory-T 0 || true
    OBJECTS=$CHECKS OUT=$OUT/check16k timeout 90 bench/gpu/device.sh backward --only '^gated_deltanet(_l2norm)?_bf16_k128v128$' \
        --T 16384 --B 1 --hard-T 16384 --memory-T 0 || true
    OBJECTS=.carry/bb35 OUT=$OUT/base timeout 110 bench/gpu/device.sh bench-backward --no-fla --kernel-times --rows "$ROWS" || true
    OBJECTS=$NEW OUT=$OUT/new timeout 140 bench/gpu/device.sh bench-backward --no-fla --kernel-times \
        --rows "$ROWS|^gated_deltanet_h8_hv16 1 32768$" || true ;;
  fla) # narrow_states_backward_times_fla_h200.{json,log}
    eval "$(bench/gpu/triton_cache.sh restore .carry/triton-gdn)"
    PYTHONPATH=$PWD/.carry OBJECTS=.carry/bbf timeout 480 bench/gpu/device.sh bench-backward \
        --rows '^(gated_deltanet_h8 4 (4096|1024|16384)|deltanet_h8 4 4096|gated_deltanet_h8_hv16 1 32768)$' || true ;;
esac
# A fourth call (no code change of the forward this session: session 35's
# .carry/mm-new objects, byte-identical to HEAD's by scripts/compare_kernels.py),
# the prefill rows not timed beside fla since ut1, slowest first
# (model_matrix_session36_retimed.{json,log}):
if [ "${1:-}" = retime ]; then
  eval "$(bench/gpu/triton_cache.sh restore .carry/triton)"
  PYTHONPATH=$PWD/.carry OBJECTS=.carry/mm-new timeout 470 bench/gpu/device.sh matrix \
      --rows '^(gdn_k48_v48|gdn_k128_v256|gla_h8_f32|kda_h8_f32|linear_attention_h8|gdn_k256_v128|gdn_k80_v80|gdn_k64_v128|simple_gla_h8|mamba2) ' \
      --json "$OUT/mm.json" || true
  bench/gpu/triton_cache.sh save "$OUT/triton"
fi
