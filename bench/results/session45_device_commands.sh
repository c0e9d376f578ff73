#!/usr/bin/env bash
# Session 45's device call (H200): linattn-fuse-row-norms (qk_l2norm's row
# norms formed in the UT transform and output kernels). Objects prepared here:
#   .carry/s45: bench/gpu/prepare.sh DIR '_l2norm_.*_(chunked|auto|chunked-s4|segment-scan)$'
#     and LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/model_shapes.py variants" \
#     bench/gpu/prepare.sh DIR '^mm_qwen3next$', merged.
# Its files are tarred into $OUT/results.tgz.
set -e
OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
runner() { find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1; }
case "${1:-}" in
  row-norms)
    # Every qk_l2norm library against the fp64 reference (delta kinds,
    # head sizes 64-256, f32, forced chunked, segments, auto), then the
    # Qwen3-Next prefill rows beside fla, then that layer's kernels.
    OBJECTS=.carry/s45 OUT=$R/check timeout 300 bench/gpu/device.sh check \
        --only _l2norm_ --T 1,2,63,65,1000,4096 --B 1,4 --hard-T 1000 || true
    timeout 200 python3 bench/gpu/model_matrix.py --libdir /tmp/linattn-libs --runner "$(runner)" \
        --json $R/model_matrix_fused_row_norms.json \
        --rows '^qwen3next (1 (1024|4096|16384|65536)|8 2048)$' > $R/model_matrix_fused_row_norms.log 2>&1 || true
    tail -8 $R/model_matrix_fused_row_norms.log
    for T in 4096 16384; do
      timeout 40 python3 bench/gpu/kernel_times.py --runner "$(runner)" --lib /tmp/linattn-libs/mm_qwen3next.so \
          --B 1 --T $T >> $R/fused_row_norms_kernel_times_h200.log 2>&1 || true
    done
    cat $R/fused_row_norms_kernel_times_h200.log
    tar czf $OUT/results.tgz -C $R . ;;
esac
