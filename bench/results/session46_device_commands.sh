#!/usr/bin/env bash
# Session 46's device calls (H200): the chunk outputs formed in the state
# pass (linattn-fuse-chunk-output, linattn.chunk_state_pass_output).
# Objects prepared here:
#   .carry/s46: LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/model_shapes.py variants" \
#     bench/gpu/prepare.sh DIR '^mm_(qwen3next|gdn_h8|gdn_h16_hv64|gdn_k32_v32|gdn_k64_v64|
#     gdn_k96_v96|gdn_k128_v64|gdn_k64_v128|gdn_k48_v48|gdn_k80_v80|deltanet_h8|deltanet_negeig_h8)$'
#     and bench/gpu/prepare.sh DIR '^(gated_deltanet|deltanet|deltanet_negeig|
#     gated_deltanet_l2norm)_bf16_(64|128)_chunked$', merged.
#   .carry/s46sep: the same model-shape specs compiled with
#     --separate-chunk-output (the two kernels, as before).
#   .carry/s46c: as .carry/s46, from the tree after the output warps' score
#     blocks became their rows' only (v2).
#   .carry/s46d: as .carry/s46, the output warps' scores formed before they
#     wait on S_n and D_n (v3).
#   .carry/fla: git -C <fla mirror> archive HEAD fla | tar -x -C .carry
# Its files are tarred into $OUT/results.tgz.
set -e
OUT=${OUT:-/tmp/o}
R=$OUT/r; mkdir -p $R
runner() { find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1; }
rows='^(qwen3next (1 (1024|4096|16384|65536)|8 2048)|gdn_h8 4 .*|gdn_k64_v64 .*|deltanet_h8 .*|deltanet_negeig_h8 .*|gdn_h16_hv64 .*)$'
case "${1:-}" in
  fused-output)
    # .carry/s46c (this tree: output warps take their rows' score blocks
    # only) against the fp64 reference; then the separate kernels (old),
    # the first fused form (.carry/s46, every score block: v1) and this one
    # (v2), their rows without fla in turn; then Qwen3-Next's kernels.
    OBJECTS=.carry/s46c OUT=$R/check timeout 230 bench/gpu/device.sh check \
        --T 1,2,63,65,1000 --B 1,4 --hard-T 1000 || true
    rm -rf /tmp/libs_v2 && cp -r /tmp/linattn-libs /tmp/libs_v2
    for v in old:s46sep v1:s46; do
      OBJECTS=.carry/${v#*:} OUT=/tmp/none timeout 40 bench/gpu/device.sh none > /dev/null 2>&1 || true
      rm -rf /tmp/libs_${v%%:*} && cp -r /tmp/linattn-libs /tmp/libs_${v%%:*}
    done
    for run in old_1 v2_1 v1_1 old_2 v2_2; do
      timeout 40 python3 bench/gpu/model_matrix.py --no-fla --libdir /tmp/libs_${run%_*} --runner "$(runner)" \
          --seed 46 --rows "$rows" --json $R/fused_output_${run}_nofla.json > $R/fused_output_${run}_nofla.log 2>&1 || true
      tail -2 $R/fused_output_${run}_nofla.log
    done
    for v in old v2; do
      timeout 25 python3 bench/gpu/kernel_times.py --runner "$(runner)" --lib /tmp/libs_$v/mm_qwen3next.so \
          --B 1 --T 4096 >> $R/fused_output_kernel_times_h200.log 2>&1 || true
    done
    tail -12 $R/fused_output_kernel_times_h200.log
    tar czf $OUT/results.tgz -C $R . ;;
  fused-v3)
    # v3 against the fp64 reference; its rows beside fla; the separate
    # kernels (old) and v2 without fla in the same lease; v3's kernels.
    rows3='^(qwen3next (1 (1024|4096|16384)|8 2048)|gdn_h8 4 .*|gdn_k64_v64 .*|deltanet_h8 .*)$'
    OBJECTS=.carry/s46d OUT=$R/check timeout 150 bench/gpu/device.sh check \
        --T 1,65,1000 --B 1,4 --hard-T 1000 || true
    rm -rf /tmp/libs_v3 && cp -r /tmp/linattn-libs /tmp/libs_v3
    for v in old:s46sep v2:s46c; do
      OBJECTS=.carry/${v#*:} OUT=/tmp/none timeout 40 bench/gpu/device.sh none > /dev/null 2>&1 || true
      rm -rf /tmp/libs_${v%%:*} && cp -r /tmp/linattn-libs /tmp/libs_${v%%:*}
    done
    timeout 240 python3 bench/gpu/model_matrix.py --libdir /tmp/libs_v3 --runner "$(runner)" \
        --seed 46 --rows "$rows3" --json $R/model_matrix_fused_output.json > $R/model_matrix_fused_output.log 2>&1 || true
    tail -9 $R/model_matrix_fused_output.log
    for v in old v2; do
      timeout 35 python3 bench/gpu/model_matrix.py --no-fla --libdir /tmp/libs_$v --runner "$(runner)" \
          --seed 46 --rows "$rows3" --json $R/fused_output_${v}_same_lease_nofla.json > $R/fused_output_${v}_same_lease_nofla.log 2>&1 || true
      grep linattn $R/fused_output_${v}_same_lease_nofla.log | cut -c1-60
    done
    timeout 25 python3 bench/gpu/kernel_times.py --runner "$(runner)" --lib /tmp/libs_v3/mm_qwen3next.so \
        --B 1 --T 4096 > $R/fused_output_v3_kernel_times.log 2>&1 || true
    cat $R/fused_output_v3_kernel_times.log
    tar czf $OUT/results.tgz -C $R . ;;
  fused-v2-fla)
    # The landed form (v2, .carry/s46c) beside fla at the fused rows.
    OBJECTS=.carry/s46c OUT=/tmp/none timeout 40 bench/gpu/device.sh none > /dev/null 2>&1 || true
    timeout 200 python3 bench/gpu/model_matrix.py --libdir /tmp/linattn-libs --runner "$(runner)" \
        --seed 461 --rows '^(qwen3next (1 (1024|4096|16384)|8 2048)|gdn_h8 4 .*)$' \
        --json $OUT/model_matrix_fused_output.json > $OUT/model_matrix_fused_output.log 2>&1 || true
    tail -8 $OUT/model_matrix_fused_output.log ;;
esac
