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
  programmatic)
    # linattn-programmatic-launches (each kernel waits on the grids before
    # it; the runtime launches them with programmatic stream serialization).
    # Objects .carry/s45b: bench/gpu/prepare.sh DIR '_(bf16_128|f32_64)_(chunked|auto)$'
    # and LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/model_shapes.py variants" \
    # bench/gpu/prepare.sh DIR '^mm_(qwen3next|gdn_h8|gdn_h16_hv64|linear_attention_h8|
    # simple_gla_h8|gla_h8|kda_h8|deltanet_h8|gdn_k64_v64|mamba2)$', merged.
    # Every family's chunked and auto libraries against fp64 with the
    # overlap on; then the same libraries' matrix rows without fla, the
    # overlap off and on in turn (LINATTN_PROGRAMMATIC_LAUNCH), twice.
    OBJECTS=.carry/s45b OUT=$R/check timeout 280 bench/gpu/device.sh check \
        --T 1,65,1000,4096 --B 1,4 --hard-T 1000 || true
    rows='^(qwen3next (1 (1|1024|4096|16384)|8 2048|16 1)|gdn_h8 .*|gdn_h16_hv64 .*|linear_attention_h8 .*|simple_gla_h8 .*|gla_h8 .*|kda_h8 .*|deltanet_h8 .*|gdn_k64_v64 .*|mamba2 .*)$'
    for run in off1 on1 off2 on2; do
      case $run in off*) pdl=0 ;; *) pdl=1 ;; esac
      LINATTN_PROGRAMMATIC_LAUNCH=$pdl timeout 100 python3 bench/gpu/model_matrix.py --no-fla \
          --libdir /tmp/linattn-libs --runner "$(runner)" --seed 45 --rows "$rows" \
          --json $R/programmatic_launches_${run}_nofla.json > $R/programmatic_launches_${run}_nofla.log 2>&1 || true
      tail -1 $R/programmatic_launches_${run}_nofla.log
    done
    tar czf $OUT/results.tgz -C $R . ;;
  matrix-specs)
    # Every model-shape library (.carry/mmall: LINATTN_VARIANTS="/usr/bin/python3
    # bench/gpu/model_shapes.py variants" bench/gpu/prepare.sh DIR; strategy
    # auto) against the fp64 reference at the lengths issue 26's must-have
    # 7 names beside the matrix's own: grouped value heads, {qk_l2norm},
    # every head size, f32; B 1 and 4, hard inputs at T = 1000.
    OBJECTS=.carry/mmall OUT=$R/check timeout 480 bench/gpu/device.sh check \
        --T 1,2,63,65,1000 --B 1,4 --hard-T 1000 || true
    tar czf $OUT/results.tgz -C $R . ;;
  profile-forward)
    # Nsight Compute on Qwen3-Next's forward kernels after rn1 (UT transform,
    # state pass, output; B 1 T 4096), the second call's, with the sampled
    # SASS summarised: objects .carry/mm (LINATTN_VARIANTS="/usr/bin/python3
    # bench/gpu/model_shapes.py variants" bench/gpu/prepare.sh DIR '^mm_qwen3next$').
    R=$OUT  # written where the call's files come back from, should it run out of time
    OBJECTS=.carry/mm OUT=/tmp/none timeout 90 bench/gpu/device.sh none || true
    mkdir -p $R/ncu
    timeout 300 python3 bench/gpu/kernel_times.py --runner "$(runner)" --lib /tmp/linattn-libs/mm_qwen3next.so \
        --B 1 --T 4096 --ncu "$(command -v ncu)" --ncu-report $R/ncu/qwen3next_forward_B1_T4096_rn1 \
        --sections SpeedOfLight,Occupancy,LaunchStats,WarpStateStats,MemoryWorkloadAnalysis,SourceCounters \
        > $R/ncu/qwen3next_forward_B1_T4096_rn1.txt 2>&1 || true
    rm -f $R/ncu/*.ncu-rep
    grep -E "Duration|Registers Per|Achieved Occupancy|Executed Ipc A|Warp Cycles Per Issued|DRAM Throughput" \
        $R/ncu/qwen3next_forward_B1_T4096_rn1.txt | head -30 ;;
  row-norm-registers)
    # rn2: the UT kernel's scores take each lane's r from registers (no warp
    # barrier after the norms). Objects: .carry/chk3 (bench/gpu/prepare.sh
    # DIR '^(gated_deltanet_l2norm_(bf16_128|f32_128|bf16_64)|kda_l2norm_bf16_128|
    # deltanet_negeig_l2norm_bf16_128)_chunked$', and this tree's mm_qwen3next.o),
    # .carry/mmold (rn1's mm_qwen3next.o, commit 8ce02dd). The check with the
    # new kernels, then old and new Qwen3-Next side by side, twice each.
    R=$OUT
    OBJECTS=.carry/chk3 OUT=$R/check timeout 150 bench/gpu/device.sh check \
        --T 1,63,65,1000,4096 --B 1,4 --hard-T 1000 || true
    rm -rf /tmp/libs_new && cp -r /tmp/linattn-libs /tmp/libs_new
    OBJECTS=.carry/mmold OUT=/tmp/none timeout 60 bench/gpu/device.sh none || true
    rm -rf /tmp/libs_old && cp -r /tmp/linattn-libs /tmp/libs_old
    for run in old1 new1 old2 new2; do
      libs=/tmp/libs_${run%?}
      timeout 25 python3 bench/gpu/kernel_times.py --runner "$(runner)" --lib $libs/mm_qwen3next.so \
          --B 1 --T 4096 > $R/rn2_kernel_times_$run.log 2>&1 || true
      timeout 60 python3 bench/gpu/model_matrix.py --no-fla --libdir $libs --runner "$(runner)" --seed 46 \
          --rows '^qwen3next (1 (1024|4096|16384)|8 2048)$' --json $R/rn2_$run.json > $R/rn2_$run.log 2>&1 || true
    done
    tail -1 $R/check/check.log; cat $R/rn2_kernel_times_*.log | grep "block 128 smem 57088" ;;
esac
