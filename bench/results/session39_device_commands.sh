#!/usr/bin/env bash
# Session 39's device calls (H200): the recurrent kernel's first window
# loaded ahead of the state, and its per-token scalars loaded with the rows
# (bench/NOTES.md d7). Objects prepared here:
#   .carry/xover/{head,new}.o: the Qwen3-Next spec (.carry/mm-*/specs/
#     mm_qwen3next.mlir) compiled --strategy=recurrent at HEAD fbc8db5 and
#     with the change (bench/gpu/decode_crossover.sh's sides);
#   .carry/rec-head, .carry/rec-new128: bench/gpu/prepare.sh DIR
#     '^(deltanet|gated_deltanet|simple_gla|linear_attention|kda|gla)_bf16_128_recurrent$'
#     at HEAD and with the change;
#   .carry/rec-new: bench/gpu/prepare.sh DIR '_recurrent$' with the change;
#   LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/model_shapes.py variants" \
#     bench/gpu/prepare.sh .carry/mm-new '^mm_qwen3next$'  # with the change
# The first call (`profile`, before the change) ran
#   bash bench/gpu/decode_crossover.sh 1,2,4,8,12,14,15,16,17,18,20,24,32,64,256 1
# with head.o alone, and kernel_times.py --ncu on mm_qwen3next.so at B 16
# and 64, T = 1 (recurrent_profile_B{16,64}_h200.summary.txt).
# Each case below was one call; its files are tarred into $OUT/results.tgz.
set -e
OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
# family_times "SIDE..." "B...": bench.py's recurrent times of six families
# at K = V = 128, H = 8, T 1, 2, 8, each side's objects from .carry/rec-SIDE,
# into $R/times_SIDE_BB.{json,log}.
family_times() {
  for side in $1; do
    OBJECTS=.carry/rec-$side OUT=/tmp/none bench/gpu/device.sh none > /dev/null || true
    rm -rf /tmp/libs-$side; cp -r /tmp/linattn-libs /tmp/libs-$side
  done
  runner=$(find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1)
  for B in $2; do
    for side in $1; do
      timeout 60 python3 bench/gpu/bench.py --libdir /tmp/libs-$side --runner "$runner" --no-fla --graph \
          --strategies recurrent --B $B --T 1,2,8 \
          --families deltanet,gated_deltanet,simple_gla,linear_attention,kda,gla \
          --json $R/times_${side}_B$B.json > $R/times_${side}_B$B.log 2>&1 || true
      grep linattn $R/times_${side}_B$B.log | sed "s/^/$side B$B /"
    done
  done
}
case "${1:-}" in
  sweep-times-check)
    # Qwen3-Next recurrent HEAD beside the change over B and T, with a copy
    # and an elementwise kernel of the state's bytes (recurrent_first_window_sweep.jsonl);
    # six families at K = V = 128, H = 8 beside HEAD
    # (recurrent_first_window_times_{head,new}_B*_h200_nofla.json); T = 0
    # (the initial state returned) on the K = 128 libraries.
    bash bench/gpu/decode_crossover.sh 1,4,8,16,32,64,256 1,2,8 > $R/sweep.jsonl 2>&1 || true
    cat $R/sweep.jsonl
    family_times "head new128" "16 64 256"
    OBJECTS=.carry/rec-new128 OUT=$R/check0 timeout 60 bench/gpu/device.sh check \
        --T 0,1 --B 2 --hard-T 1 || true
    tar czf $OUT/results.tgz -C $R . ;;
  check-and-decode)
    # The Qwen3-Next decode rows beside fla on the change
    # (model_matrix_first_window_decode.json), then the check of every
    # _recurrent library on it (gpu_check_recurrent_first_window_h200.*).
    OBJECTS=.carry/mm-new OUT=$R/mm PYTHONPATH=$PWD/.carry timeout 240 bench/gpu/device.sh matrix \
        --rows '^qwen3next (1|16|64|256) (1|2|4|8)$' || true
    OBJECTS=.carry/rec-new OUT=$R/check timeout 290 bench/gpu/device.sh check \
        --T 1,2,8,9,65 --B 1,4 --hard-T 65 || true
    tar czf $OUT/results.tgz -C $R . ;;
  two-columns)
    # Experiment e11: two state columns a thread (c and c + 32, half the
    # blocks; .carry/xover/two.o, .carry/rec-two128, .carry/rec-two: the
    # same prepare commands on a build with
    # bench/results/e11_two_columns_per_thread.patch applied). Qwen3-Next HEAD, the change and
    # the experiment over B and T (recurrent_two_columns_sweep_h200.jsonl);
    # six families beside the change (recurrent_two_columns_times_*); the
    # check of a subset of the _recurrent libraries on it.
    bash bench/gpu/decode_crossover.sh 1,4,16,64,256 1,2,8 > $R/sweep.jsonl 2>&1 || true
    cat $R/sweep.jsonl
    family_times "new128 two128" "1 16 256"
    OBJECTS=.carry/rec-two OUT=$R/check timeout 120 bench/gpu/device.sh check \
        --T 1,2,9,65 --B 1,3 --hard-T 65 \
        --only '_(bf16_(32|48|80|128|128x160|224|256)|f32_64|f32_128|l2norm_bf16_128|h32_bf16_128)_recurrent$' || true
    tar czf $OUT/results.tgz -C $R . ;;
esac
