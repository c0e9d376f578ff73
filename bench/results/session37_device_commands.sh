#!/usr/bin/env bash
# Session 37's device calls (H200): the recurrent kernel's tokens staged in
# shared memory (bench/NOTES.md d5). Objects prepared here:
#   bench/gpu/prepare.sh .carry/rec-new '_recurrent$'      # this change
#   bench/gpu/prepare.sh .carry/rec-old '_recurrent$'      # HEAD before it (59aaf6c)
#   LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/model_shapes.py variants" \
#     bench/gpu/prepare.sh .carry/mm-dec-new '^mm_qwen3next$'
# and session 36's .carry/mm-new (HEAD's model-matrix objects, the "before").
# .carry/mm-dec-old: its mm_qwen3next.o alone.
# Each case below was one call.
set -e
OUT=${OUT:-/tmp/o}
case "${1:-}" in
  check-and-times)
    # The check of every _recurrent library of bench/gpu/variants.sh (every
    # family; bf16 K = V = 32 to 256, 48, 80, K != V; f16; f32 64 and 128;
    # {qk_l2norm}; KDA at 32 heads), T across the windows of 8 tokens, hard
    # inputs at 65 (its files did not come back: a call returns 8; run
    # again by check-and-cap).
    OBJECTS=.carry/rec-new OUT=$OUT/check timeout 280 bench/gpu/device.sh check \
        --T 1,2,8,9,65 --B 1,4 --hard-T 65 || true
    cp -r /tmp/linattn-libs /tmp/libs-new
    OBJECTS=.carry/rec-old OUT=$OUT/none bench/gpu/device.sh none > /dev/null || true
    # recurrent_staged_times_{base,new}_B{64,256}_h200_nofla.json (times_old_*,
    # times_new_*): every family's recurrent kernel at decode lengths, HEAD's
    # libraries beside the new ones.
    runner=$(find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1)
    for B in 64 256; do
      Ts=1,2,4,8,16; [ $B = 256 ] && Ts=1,8
      for side in old new; do
        libs=/tmp/linattn-libs; [ $side = new ] && libs=/tmp/libs-new
        timeout 120 python3 bench/gpu/bench.py --libdir $libs --runner "$runner" --no-fla --graph \
            --strategies recurrent --B $B --T $Ts --json $OUT/times_${side}_B$B.json \
            > $OUT/times_${side}_B$B.log 2>&1 || true
        tail -n +2 $OUT/times_${side}_B$B.log | head -60
      done
    done ;;
  check-and-cap) # gpu_check_recurrent_staged_h200.{json,log} (the first case's
    # check again), and .carry/rec-cap96 (this change compiled with
    # linattn-gpu-occupancy-hints' register floor raised to 96 for the run:
    # 5 blocks an SM, 88 registers, where the default's 80 make 6 and spill 8
    # bytes) beside .carry/rec-new: recurrent_staged_times_{cap96,new_second}_
    # B{64,256}_h200_nofla.json (times_cap96_*, times_new2_*).
    OBJECTS=.carry/rec-new OUT=/tmp/check timeout 300 bench/gpu/device.sh check \
        --T 1,2,8,9,65 --B 1,4 --hard-T 65 || true
    cp /tmp/check/check.json /tmp/check/check.log $OUT/
    cp -r /tmp/linattn-libs /tmp/libs-new
    OBJECTS=.carry/rec-cap96 OUT=/tmp/none bench/gpu/device.sh none > /dev/null || true
    runner=$(find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1)
    for B in 64 256; do
      for side in cap96 new2; do
        libs=/tmp/linattn-libs; [ $side = new2 ] && libs=/tmp/libs-new
        timeout 60 python3 bench/gpu/bench.py --libdir $libs --runner "$runner" --no-fla --graph \
            --strategies recurrent --B $B --T 1,2,8 \
            --families deltanet,gated_deltanet,simple_gla,linear_attention,kda \
            --json $OUT/times_${side}_B$B.json > /tmp/times_${side}_B$B.log 2>&1 || true
        grep linattn /tmp/times_${side}_B$B.log | sed "s/^/$side B$B /"
      done
    done ;;
  matrix-and-lanes) # .carry/rec-l8 and .carry/mm-dec-l8: this change compiled with
    # eight lanes a column from K = 64 up (16 keys a lane at K = 128, 71-73
    # registers, no spill) beside .carry/rec-new (recurrent_staged_times_
    # {eight_lanes,new_third}_B{64,256}_h200_nofla.json: times_l8_*,
    # times_new3_*); then the Qwen3-Next decode rows beside
    # fla (model_matrix_staged_decode.{json,log}) and, no fla, HEAD's objects
    # (model_matrix_staged_decode_base_nofla.json) and the eight-lane ones
    # (model_matrix_staged_decode_eight_lanes_nofla.json; mm_new_fla.{json,log},
    # mm_old.json, mm_l8.json).
    OBJECTS=.carry/rec-new OUT=/tmp/none bench/gpu/device.sh none > /dev/null || true
    cp -r /tmp/linattn-libs /tmp/libs-new
    OBJECTS=.carry/rec-l8 OUT=/tmp/none bench/gpu/device.sh none > /dev/null || true
    runner=$(find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1)
    for B in 64 256; do
      for side in l8 new3; do
        libs=/tmp/linattn-libs; [ $side = new3 ] && libs=/tmp/libs-new
        timeout 40 python3 bench/gpu/bench.py --libdir $libs --runner "$runner" --no-fla --graph \
            --strategies recurrent --B $B --T 1,2,8 \
            --families deltanet,gated_deltanet,simple_gla,linear_attention,kda \
            --json $OUT/times_${side}_B$B.json > /tmp/times_${side}_B$B.log 2>&1 || true
        grep linattn /tmp/times_${side}_B$B.log | sed "s/^/$side B$B /"
      done
    done
    ROWS='^qwen3next (1|16|64|256) (1|2|4|8)$'
    PYTHONPATH=$PWD/.carry OBJECTS=.carry/mm-dec-new OUT=/tmp/mf timeout 260 bench/gpu/device.sh matrix \
        --rows "$ROWS" --json $OUT/mm_new_fla.json || true
    cp /tmp/mf/matrix.log $OUT/mm_new_fla.log || true
    OBJECTS=.carry/mm-dec-old OUT=/tmp/mo timeout 70 bench/gpu/device.sh matrix --no-fla \
        --rows "$ROWS" --json $OUT/mm_old.json > /dev/null || true
    OBJECTS=.carry/mm-dec-l8 OUT=/tmp/ml timeout 70 bench/gpu/device.sh matrix --no-fla \
        --rows "$ROWS" --json $OUT/mm_l8.json > /dev/null || true ;;
esac
