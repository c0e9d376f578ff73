#!/usr/bin/env bash
# Session 41's device calls (H200): what the recurrent kernel's single
# decode token costs beside plain state traffic (bench/NOTES.md e12).
# Objects prepared here (SPEC: bench/gpu/model_shapes.py's mm_qwen3next.mlir;
# SPEC_NONORM the same without {qk_l2norm}):
#   mkdir -p .carry/xover
#   build/bin/linattn-compile SPEC -o .carry/xover/rec.o --strategy=recurrent
#   build/bin/linattn-compile SPEC_NONORM -o .carry/xover/rec_nonorm.o --strategy=recurrent
# One call, .carry/xover carried: the state-traffic microbenchmark
# (state_io_bench_h200.txt), then both libraries beside a copy and an
# elementwise kernel of the state's bytes (decode_crossover_session41.jsonl).
set -e
nvcc -arch=sm_90a -O3 -o /tmp/state_io bench/gpu/state_io_bench.cu
/tmp/state_io
bash bench/gpu/decode_crossover.sh 1,16,64,256 1,2
