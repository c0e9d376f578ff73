#!/usr/bin/env bash
# Session 46's device calls (H200): the chunk outputs formed in the state
# pass (linattn-fuse-chunk-output, linattn.chunk_state_pass_output).
# Objects prepared here:
#   .carry/s46: LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/model_shapes.py variants" \
#     bench/gpu/prepare.sh DIR '^mm_(qwen3next|gdn_h8|gdn_h16_hv64|gdn_k32_v32|gdn_k64_v64|
#     gdn_k96_v96|gdn_k128_v64|gdn_k64_v128|gdn_k48_v48|gdn_k80_v80|deltanet_h8|deltanet_negeig_h8)$'
#     and bench/gpu/prepare.sh DIR '^(gated_deltanet|deltanet|deltanet_negeig|
#     gated_deltanet_l2norm|deltanet_l2norm)_bf16_(64|128|32|96)_(chunked|auto)$', merged.
#   .carry/s46sep: the same model-shape specs compiled with
#     --separate-chunk-output (the two kernels, as before).
# Its files are tarred into $OUT/results.tgz.
set -e
OUT=${OUT:-/tmp/o}
R=$OUT/r; mkdir -p $R
runner() { find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1; }
rows='^(qwen3next (1 (1024|4096|16384|65536)|8 2048)|gdn_h8 4 .*|gdn_k64_v64 .*|deltanet_h8 .*|deltanet_negeig_h8 .*|gdn_h16_hv64 .*)$'
case "${1:-}" in
  fused-output)
    # Every fused library against the fp64 reference, then the fused and
    # the separate kernels' rows without fla, in turn, twice.
    OBJECTS=.carry/s46 OUT=$R/check timeout 260 bench/gpu/device.sh check \
        --T 1,2,63,65,1000,4096 --B 1,4 --hard-T 1000 || true
    rm -rf /tmp/libs_new && cp -r /tmp/linattn-libs /tmp/libs_new
    OBJECTS=.carry/s46sep OUT=/tmp/none timeout 60 bench/gpu/device.sh none || true
    rm -rf /tmp/libs_old && cp -r /tmp/linattn-libs /tmp/libs_old
    for run in old1 new1 old2 new2; do
      case $run in old*) libs=/tmp/libs_old ;; *) libs=/tmp/libs_new ;; esac
      timeout 60 python3 bench/gpu/model_matrix.py --no-fla --libdir $libs --runner "$(runner)" \
          --seed 46 --rows "$rows" --json $R/fused_output_${run}_nofla.json > $R/fused_output_${run}_nofla.log 2>&1 || true
      tail -2 $R/fused_output_${run}_nofla.log
    done
    tar czf $OUT/results.tgz -C $R . ;;
esac
