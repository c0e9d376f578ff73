#!/usr/bin/env bash
# Session 40's device calls (H200): landing e11, two state columns a thread
# in the recurrent kernel (bench/NOTES.md e11). Objects prepared here with
# the change:
#   .carry/rec-new: bench/gpu/prepare.sh DIR '_recurrent$';
#   .carry/mm-new: LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/model_shapes.py variants" \
#     bench/gpu/prepare.sh DIR '^mm_qwen3next$'
# Each case below was one call; its files are tarred into $OUT/results.tgz.
set -e
OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
case "${1:-}" in
  decode-and-check)
    # The Qwen3-Next decode rows beside fla (model_matrix_two_columns_decode.json),
    # then the check of every _recurrent library
    # (gpu_check_recurrent_two_columns_h200.*).
    OBJECTS=.carry/mm-new OUT=$R/mm PYTHONPATH=$PWD/.carry timeout 240 bench/gpu/device.sh matrix \
        --rows '^qwen3next (1|16|64|256) (1|2|4|8)$' || true
    OBJECTS=.carry/rec-new OUT=$R/check timeout 320 bench/gpu/device.sh check \
        --T 0,1,8,9,65 --B 1,4 --hard-T 65 || true
    tar czf $OUT/results.tgz -C $R . ;;
esac
# grid: bench/gpu/strategy_grid.py's grid again on HEAD's kernels (e11's
# recurrent kernel and the chunked kernels since ut1), both strategies,
# objects from
#   LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/strategy_grid.py variants" \
#     bench/gpu/prepare.sh .carry/grid ''
# (into gpu_strategy_grid_h200.jsonl; d4's grid is gpu_strategy_grid_h200_d4.jsonl); `grid SPECS` runs those
# specs alone (the rest of a call cut by its time limit).
if [ "${1:-}" = grid ]; then
  OBJECTS=.carry/grid OUT=$OUT timeout 550 bench/gpu/device.sh grid ${2:+--specs $2} || true
fi
