#!/usr/bin/env bash
# Session 42's device calls (H200): the recurrent kernel's blocks looping
# over work units with the next unit's state copied in ahead
# (bench/NOTES.md d8). Objects prepared here:
#   .carry/xover/{head,new,loop}.o: the Qwen3-Next spec (bench/gpu/model_shapes.py's
#     mm_qwen3next.mlir) with --strategy=recurrent at HEAD, with the change,
#     and with the change's grid-stride loop but no staged state (NOTILE=1, an
#     experiment hook not kept);
#   .carry/fam-{head,new}: bench/gpu/prepare.sh DIR
#     '^(gated_deltanet_bf16_(128|64|256)|deltanet_bf16_128|kda_bf16_128|gla_bf16_128|simple_gla_bf16_128|linear_attention_bf16_128)_recurrent$'
#     at HEAD and with the change;
#   .carry/rec-new: bench/gpu/prepare.sh DIR '_recurrent$' with the change.
# Each case was one call; its files are tarred into $OUT/results.tgz.
set -e
OUT=${OUT:-/tmp/o}
R=/tmp/r; mkdir -p $R
case "${1:-}" in
  times-and-wide-check)
    # Qwen3-Next decode, the three objects beside a copy and an elementwise
    # kernel of the state's bytes (decode_units_sweep_h200.jsonl).
    timeout 200 bash bench/gpu/decode_crossover.sh 1,4,16,32,64,256 1,2,8 \
        > $R/decode_units_sweep.jsonl || true
    # Six families at K = V = 128 (gated delta also 64 and 256), HEAD and
    # the change, from graphs.
    for side in head new; do
      OBJECTS=.carry/fam-$side OUT=$R/check-$side timeout 30 bench/gpu/device.sh none || true
      for B in 16 256; do
        for K in 128 64; do
          timeout 100 python3 bench/gpu/bench.py --libdir /tmp/linattn-libs \
              --runner "$(find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1)" \
              --json $R/units_times_${side}_B${B}_K${K}.json --no-fla --graph \
              --strategies recurrent --B $B --K $K --T 1,2,8 > $R/units_times_${side}_B${B}_K${K}.log 2>&1 || true
        done
      done
    done
    # The staged path needs more units than resident blocks (528-660):
    # B = 100 at H = 8 on a subset of every kind and head size.
    OBJECTS=.carry/rec-new OUT=$R/check-wide timeout 200 bench/gpu/device.sh check \
        --T 0,1,9 --B 100 --hard-T 9 --only '^(gated_deltanet_bf16_(32|48|80|128|128x224|256)|gated_deltanet_f32_64|gated_deltanet_l2norm_bf16_128|kda_bf16_(64|256)|kda_h32_bf16_128|gla_bf16_96|linear_attention_bf16_160|retnet_bf16_192|simple_gla_bf16_224|deltanet_negeig_bf16_128|deltanet_bf16_128x160)_recurrent$' || true
    tar czf $OUT/results.tgz -C $R . ;;
  dispatch-by-batch)
    # The per-batch decode limits (bench/NOTES.md g3): both forced paths and
    # auto at T between the grid's lengths, objects from
    #   LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/strategy_grid.py variants" \
    #     bench/gpu/prepare.sh .carry/sg '^sg_(gdn_h8|kda_h8|gla_h8_f32)_'
    # (dispatch_by_batch_grid_h200.jsonl).
    OBJECTS=.carry/sg OUT=$R/none timeout 60 bench/gpu/device.sh none || true
    timeout 400 python3 bench/gpu/strategy_grid.py run --libdir /tmp/linattn-libs \
        --runner "$(find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1)" \
        --out $R/dispatch_by_batch_grid.jsonl --specs gdn_h8,kda_h8,gla_h8_f32,kda_h8_f32 \
        --strategies recurrent,chunked,auto --B 16,64,256 --T 40,48,56,64,100 > $R/dispatch.log 2>&1 || true
    tail -5 $R/dispatch.log
    tar czf $OUT/results.tgz -C $R . ;;
  auto-chunked)
    # auto's chunked path beside the forced one (the grid's, which the model
    # is fitted to) on every grid spec, objects from
    #   LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/strategy_grid.py variants" \
    #     bench/gpu/prepare.sh .carry/sga '^sg_.*_(chunked|auto)$'
    # (auto_chunked_grid_h200.jsonl; bench/NOTES.md g3).
    OBJECTS=.carry/sga OUT=$R/none timeout 60 bench/gpu/device.sh none || true
    timeout 480 python3 bench/gpu/strategy_grid.py run --libdir /tmp/linattn-libs \
        --runner "$(find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1)" \
        --out $R/auto_chunked_grid.jsonl --strategies chunked,auto --B 1,16,64,256 --T 40,64,256 \
        > $R/auto_chunked.log 2>&1 || true
    tail -3 $R/auto_chunked.log
    tar czf $OUT/results.tgz -C $R . ;;
  check)
    # Every _recurrent library, T 0, 1, 8, 9, 65, B 1 and 4, hard at 65.
    OBJECTS=.carry/rec-new OUT=$R/check timeout 330 bench/gpu/device.sh check \
        --T 0,1,8,9,65 --B 1,4 --hard-T 65 || true
    tar czf $OUT/results.tgz -C $R . ;;
esac
