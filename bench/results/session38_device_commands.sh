#!/usr/bin/env bash
# Session 38's device calls (H200): the recurrent kernel's own register
# floor and its window staging only the rows below T (bench/NOTES.md d6).
# Objects prepared here, each with bench/gpu/prepare.sh DIR '_recurrent$':
#   .carry/rec-floor: the floor (this change, kept);
#   .carry/rec-rows: the floor and the staging of rows below T (not kept);
#   .carry/rec-base: neither (HEAD aede1c9's recurrent kernels);
#   LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/model_shapes.py variants" \
#     bench/gpu/prepare.sh .carry/mm-dec-floor '^mm_qwen3next$'  # this change
# Each case below was one call; its files are tarred into $OUT/results.tgz.
set -e
OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
case "${1:-}" in
  times-and-check)
    # Every family's recurrent kernel at decode lengths, the three sides in
    # one lease (recurrent_floor_times_{base,floor,rows}_B{16,64,256}_h200_nofla.json);
    # then the check of every _recurrent library of bench/gpu/variants.sh on
    # the rows variant (gpu_check_recurrent_rows_h200.{json,log}).
    for side in base floor rows; do
      OBJECTS=.carry/rec-$side OUT=/tmp/none bench/gpu/device.sh none > /dev/null || true
      rm -rf /tmp/libs-$side; cp -r /tmp/linattn-libs /tmp/libs-$side
    done
    runner=$(find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1)
    for B in 16 64 256; do
      for side in base floor rows; do
        timeout 60 python3 bench/gpu/bench.py --libdir /tmp/libs-$side --runner "$runner" --no-fla --graph \
            --strategies recurrent --B $B --T 1,2,8 \
            --families deltanet,gated_deltanet,simple_gla,linear_attention,kda \
            --json $R/times_${side}_B$B.json > $R/times_${side}_B$B.log 2>&1 || true
        grep linattn $R/times_${side}_B$B.log | sed "s/^/$side B$B /"
      done
    done
    OBJECTS=.carry/rec-rows OUT=$R/check timeout 320 bench/gpu/device.sh check \
        --T 1,2,8,9,65 --B 1,4 --hard-T 65 || true
    tar czf $OUT/results.tgz -C $R . ;;
  decode-and-check)
    # The Qwen3-Next decode rows beside fla (model_matrix_register_floor_decode.json),
    # then the check of every _recurrent library on the kept change
    # (gpu_check_recurrent_floor_h200.{json,log}).
    OBJECTS=.carry/mm-dec-floor OUT=$R/mm timeout 300 bench/gpu/device.sh matrix \
        --rows '^qwen3next (1|16|64|256) (1|2|4|8)$' || true
    OBJECTS=.carry/rec-floor OUT=$R/check timeout 270 bench/gpu/device.sh check \
        --T 1,2,8,9,65 --B 1,4 --hard-T 65 || true
    tar czf $OUT/results.tgz -C $R . ;;
esac
