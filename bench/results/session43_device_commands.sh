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
  dispatch)
    # The per-batch limits (bench/NOTES.md g4) measured: both forced paths and
    # auto at T across the limits, B 16-256, on the specs whose choice
    # changes and three whose limits barely move; objects .carry/sgc (forced)
    # and .carry/sga (prepare.sh DIR '^sg_(gdn_h8_f32|gla_h8_f32|kda_h8_f32|
    # gdn_k48_v48|gdn_h8|kda_h8|simple_gla_h8_f32)_auto$'). Then the auto
    # libraries of bench/gpu/variants.sh whose dispatch is per batch, against
    # the fp64 reference at B 16 and 64 across their limits (.carry/chk:
    # prepare.sh DIR '^(gated_deltanet_f32_128|gla_f32_128|kda_f32_128|
    # gated_deltanet_bf16_48|simple_gla_f32_64|deltanet_f32_64|kda_bf16_128)_auto$').
    mkdir -p .carry/sgall && cp .carry/sgc/*.o .carry/sga/*.o .carry/sgall/
    OBJECTS=.carry/sgall OUT=$R/none timeout 60 bench/gpu/device.sh none || true
    timeout 330 python3 bench/gpu/strategy_grid.py run --libdir /tmp/linattn-libs --runner "$(runner)" \
        --out $R/dispatch_per_batch.jsonl \
        --specs gdn_h8_f32,gla_h8_f32,kda_h8_f32,gdn_k48_v48,gdn_h8,kda_h8,simple_gla_h8_f32 \
        --strategies recurrent,chunked,auto --B 16,64,256 --T 64,100,128,200 > $R/dispatch.log 2>&1 || true
    tail -2 $R/dispatch.log
    OBJECTS=.carry/chk OUT=$R/check timeout 150 bench/gpu/device.sh check \
        --T 1,65,100,200 --B 16,64 --hard-T 100 || true
    tar czf $OUT/results.tgz -C $R . ;;
  wide-vs-single)
    # The wide (64-column) state-pass blocks the run-time forms choose at B
    # HV V > 4224, against one form of 32-column blocks, for the kinds
    # without W (bench/NOTES.md g4: simple GLA and GLA 6-12% slower at B
    # 256 across leases) and gated delta as the control; objects
    # .carry/wx/sg_<spec>_{chunked,single}.o from linattn-compile SPEC
    # --strategy=chunked [--single-state-form] on model_shapes.py's specs.
    OBJECTS=.carry/wx OUT=$R/none timeout 60 bench/gpu/device.sh none || true
    timeout 240 python3 bench/gpu/strategy_grid.py run --libdir /tmp/linattn-libs --runner "$(runner)" \
        --out $R/wide_vs_single.jsonl --specs simple_gla_h8,gla_h8,mamba2,linear_attention_h8,retnet_h8,gdn_h8 \
        --strategies chunked,single --B 1,8,16,64 --T 256,1024,4096 > $R/wide.log 2>&1 || true
    tail -2 $R/wide.log
    tar czf $OUT/results.tgz -C $R . ;;
  grid-chunked-b1)
    # The grid's chunked rows at B = 1 on the run-time forms too (narrow
    # blocks, segments from T > 1024), objects .carry/sgc as grid-chunked's.
    OBJECTS=.carry/sgc OUT=$R/none timeout 60 bench/gpu/device.sh none || true
    timeout 200 python3 bench/gpu/strategy_grid.py run --libdir /tmp/linattn-libs --runner "$(runner)" \
        --out $R/grid_chunked_b1.jsonl --strategies chunked --B 1 > $R/grid_b1.log 2>&1 || true
    tail -2 $R/grid_b1.log
    tar czf $OUT/results.tgz -C $R . ;;
esac
