#!/usr/bin/env bash
# Session 43's device calls (H200). Objects prepared here:
#   .carry/sgc: LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/strategy_grid.py variants" \
#     bench/gpu/prepare.sh DIR '^sg_.*_(chunked|recurrent)$' (the chunked ones
#     with a forced chunked strategy that keeps the run-time state-pass
#     forms, as auto's chunked branch does: bench/NOTES.md g4).
# Each case was one call; its files are tarred into $OUT/results.tgz.
set -e
OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
runner() { find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1; }
case "${1:-}" in
  grid-chunked)
    # The strategy grid's chunked rows at B 16, 64, 256 on the run-time forms
    # (B 1's are within 1-5% of auto's: auto_vs_forced_chunked_h200.txt),
    # and the rows T = 128 adds (both strategies; B 256 reaches T = 128).
    OBJECTS=.carry/sgc OUT=$R/none timeout 60 bench/gpu/device.sh none || true
    timeout 420 python3 bench/gpu/strategy_grid.py run --libdir /tmp/linattn-libs --runner "$(runner)" \
        --out $R/grid_chunked.jsonl --strategies chunked --B 16,64,256 > $R/grid_chunked.log 2>&1 || true
    tail -2 $R/grid_chunked.log
    timeout 80 python3 bench/gpu/strategy_grid.py run --libdir /tmp/linattn-libs --runner "$(runner)" \
        --out $R/grid_t128_recurrent.jsonl --strategies recurrent --T 128 > $R/grid_t128.log 2>&1 || true
    timeout 40 python3 bench/gpu/strategy_grid.py run --libdir /tmp/linattn-libs --runner "$(runner)" \
        --out $R/grid_t128_chunked_B1.jsonl --strategies chunked --B 1 --T 128 >> $R/grid_t128.log 2>&1 || true
    tail -2 $R/grid_t128.log
    tar czf $OUT/results.tgz -C $R . ;;
esac
