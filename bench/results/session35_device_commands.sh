#!/usr/bin/env bash
# Session 35's device calls (one lease, H200): ut1's kept objects checked
# and timed beside fla, and the backward on them (bench/NOTES.md ut1,
# "Session 35's lease"). Objects prepared here at 754fb2e:
#   bench/gpu/prepare.sh .carry/chk \
#     '^(deltanet_bf16_128_chunked|deltanet_bf16_128x160_auto|deltanet_bf16_192_auto|deltanet_bf16_256_auto|deltanet_bf16_32_chunked|deltanet_bf16_48_chunked|deltanet_bf16_64_chunked|deltanet_bf16_96_chunked|deltanet_f32_128_chunked|deltanet_f32_64_chunked|deltanet_l2norm_bf16_128_chunked|deltanet_negeig_bf16_128_chunked|deltanet_negeig_bf16_192_auto|deltanet_negeig_bf16_256_auto|deltanet_negeig_bf16_32_chunked|deltanet_negeig_bf16_48_chunked|deltanet_negeig_bf16_64_chunked|deltanet_negeig_bf16_96_chunked|gated_deltanet_bf16_128_auto|gated_deltanet_bf16_128_chunked|gated_deltanet_bf16_128x224_auto|gated_deltanet_bf16_192_auto|gated_deltanet_bf16_224_auto|gated_deltanet_bf16_256_auto|gated_deltanet_bf16_32_chunked|gated_deltanet_bf16_48_chunked|gated_deltanet_bf16_64_chunked|gated_deltanet_bf16_96_chunked|gated_deltanet_f16_128_chunked|gated_deltanet_f32_128_chunked|gated_deltanet_f32_64_chunked|gated_deltanet_l2norm_bf16_128_chunked|kda_bf16_128_chunked|kda_bf16_192_auto|kda_bf16_256_auto|kda_bf16_64_chunked|kda_f32_128_chunked|kda_f32_64_chunked|linear_attention_bf16_128_chunked|linear_attention_bf16_256_auto|retnet_bf16_128_chunked|simple_gla_bf16_128_chunked|simple_gla_bf16_256_auto)$'
#   LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/model_shapes.py variants" bench/gpu/prepare.sh .carry/mm-new
#   LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/check_backward.py variants" bench/gpu/prepare.sh .carry/bwd35 \
#     '^(deltanet_bf16_k128v128|deltanet_l2norm_bf16_k128v128|gated_deltanet_bf16_k128v128|gated_deltanet_l2norm_bf16_k128v128|gated_deltanet_l2norm_bf16_k128v128_hv2|gated_deltanet_bf16_k128v128_hv2|gated_deltanet_bf16_k64v128|gated_deltanet_bf16_k256v256|deltanet_negeig_bf16_k128v128|kda_bf16_k128v128|kda_l2norm_bf16_k128v128)$'
#   LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/bench_backward.py variants" bench/gpu/prepare.sh .carry/bb35 \
#     '^(gated_deltanet_h8|gated_deltanet_h8_l2norm|deltanet_h8|deltanet_negeig_h8|kda_h8|gla_h8)$'
# Each block below was one call (carry the objects, .carry/fla and .carry/triton).
set -e
OUT=${OUT:-/tmp/o}
eval "$(bench/gpu/triton_cache.sh restore .carry/triton)"
case "${1:-}" in
  check-and-prefill) # gpu_check_ut1_kept_h200.json, model_matrix_ut1_prefill.{json,log}
    OBJECTS=.carry/chk bench/gpu/device.sh check --T 1,65,1000 --B 1,4 --hard-T 1000
    PYTHONPATH=$PWD/.carry OBJECTS=.carry/mm-new timeout 330 bench/gpu/device.sh matrix \
        --rows '^(?!\S+ \d+ [1248]$)' --json "$OUT/mm.json" ;;
  backward) # gpu_check_backward_ut1_h200.{json,log}, backward_times_ut1_h200.{json,log}
    OBJECTS=.carry/bwd35 bench/gpu/device.sh backward --T 1,17,65,1000 --B 2 --hard-T 1000
    OBJECTS=.carry/bb35 timeout 270 bench/gpu/device.sh bench-backward \
        --rows '^(gated_deltanet_h8 4 (1024|4096)|deltanet_h8 4 4096|gated_deltanet_h8_l2norm 4 4096|kda_h8 4 4096|deltanet_negeig_h8 4 4096|gla_h8 4 4096)$' ;;
  rest) # model_matrix_ut1_head_sizes.json, model_matrix_ut1_f32.json (model_matrix_ut1_rest.log)
    PYTHONPATH=$PWD/.carry OBJECTS=.carry/mm-new timeout 330 bench/gpu/device.sh matrix \
        --rows '^(gdn_k\d+_v\d+|linear_attention_h8|retnet_h8|simple_gla_h8|gla_h8|deltanet_h8|deltanet_negeig_h8|kda_h8) ' \
        --json "$OUT/mm_a.json"
    PYTHONPATH=$PWD/.carry OBJECTS=.carry/mm-new timeout 200 bench/gpu/device.sh matrix \
        --rows '^(gdn_h8_f32|simple_gla_h8_f32|gla_h8_f32|mamba2|kda_h8_f32) ' --json "$OUT/mm_b.json" ;;
esac
bench/gpu/triton_cache.sh save "$OUT/triton"
