#!/usr/bin/env bash
# On the GPU machine (no MLIR): build the runtime and runner, link the spec
# objects prepared by bench/gpu/prepare.sh (carried in .carry/gpu), check
# correctness against the fp64 reference and benchmark against fla.
#   bench/gpu/device.sh [check|bench|all] [extra args for check.py]
#   OBJECTS=.carry/matrix bench/gpu/device.sh matrix [args for model_matrix.py]
# (matrix: the model-shape matrix beside fla, bench/gpu/model_matrix.py, on
# the objects prepared from bench/gpu/model_shapes.py).
#   OBJECTS=.carry/bwd bench/gpu/device.sh backward [args for check_backward.py check]
# (backward: the derived backward's gradients against autograd, on the
# objects prepared from bench/gpu/check_backward.py variants).
#   OBJECTS=.carry/bwdbench bench/gpu/device.sh bench-backward [args for bench_backward.py run]
# (bench-backward: the derived backward's times beside fla's at training
# shapes, on the objects prepared from bench/gpu/bench_backward.py variants).
#   OBJECTS=.carry/grid bench/gpu/device.sh grid
# (grid: the recurrent and chunked kernels forced, over a grid of B and T,
# bench/gpu/strategy_grid.py: what bench/gpu/fit_cost_model.py fits).
#   OBJECTS=.carry/gpu bench/gpu/device.sh alignment [--only REGEX]
# (alignment: each argument moved off its 16-byte boundary must fail by
# name and leave the library usable, bench/gpu/check_alignment.py).
#   OBJECTS=.carry/train bench/gpu/device.sh train
# (train: one training step of each layer through the library's backward
# beside fla's, bench/gpu/train_step.py, on the <layer>_train.o objects
# its `variants` lists).
set -euo pipefail
cd "$(dirname "$0")/../.."
what=${1:-all}; shift || true
OUT=${OUT:-/tmp/linattn-out}; mkdir -p "$OUT"
build=/tmp/linattn-runtime
cmake -S runtime -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" >/dev/null
runtime_dir=$(dirname "$(find "$build" -name 'liblinattn_cuda_runtime.so' | head -1)")
libs=/tmp/linattn-libs; rm -rf "$libs"; mkdir -p "$libs"
for o in "${OBJECTS:-.carry/gpu}"/*.o; do
  c++ -shared -o "$libs/$(basename "$o" .o).so" "$o" -L"$runtime_dir" -llinattn_cuda_runtime \
      -Wl,-rpath,"$runtime_dir" -ldl
done
runner=$(find "$build" -name linattn-gpu-run -type f | head -1)
info=$(find "$build" -name linattn-device-info -type f | head -1)
"$info" || true
status=0
if [ "$what" = check ] || [ "$what" = all ]; then
  python3 bench/gpu/check.py --libdir "$libs" --runner "$runner" \
      --json "$OUT/check.json" "$@" > "$OUT/check.log" 2>&1 || status=1
  grep -vE " OK$" "$OUT/check.log" | tail -25 || true
  tail -1 "$OUT/check.log"
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 bench/gpu/bench.py --libdir "$libs" --runner "$runner" \
      --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1 || status=1
  tail -60 "$OUT/bench.log"
fi
if [ "$what" = backward ]; then
  python3 bench/gpu/check_backward.py check --libdir "$libs" --runner "$runner" \
      --json "$OUT/check_backward.json" "$@" > "$OUT/check_backward.log" 2>&1 || status=1
  grep -vE " OK$" "$OUT/check_backward.log" | tail -25 || true
  tail -1 "$OUT/check_backward.log"
fi
if [ "$what" = bench-backward ]; then
  python3 bench/gpu/bench_backward.py run --libdir "$libs" --runner "$runner" \
      --json "$OUT/bench_backward.json" "$@" 2>&1 | tee "$OUT/bench_backward.log" | tail -12
  status=${PIPESTATUS[0]}
fi
if [ "$what" = profile-backward ]; then
  name=$1 shape=$2; shift 2
  python3 bench/gpu/kernel_times.py --runner "$runner" --lib "$libs/$name.so" --backward "$shape" \
      --ncu "$(command -v ncu)" --ncu-report "$OUT/$name" \
      --sections SpeedOfLight,Occupancy,LaunchStats,WarpStateStats,MemoryWorkloadAnalysis,SourceCounters \
      "$@" > "$OUT/$name.profile.log" 2>&1 || status=1
  grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|Executed Ipc A|Warp Cycles Per Issued" \
      "$OUT/$name.profile.log" || tail -20 "$OUT/$name.profile.log"
fi
if [ "$what" = train ]; then
  for lib in "$libs"/*_train.so; do
    layer=$(basename "$lib" _train.so)
    python3 bench/gpu/train_step.py run --lib "$lib" --json "$OUT/train_step_$layer.json" \
        > "$OUT/train_step_$layer.log" 2>&1 || status=1
    tail -3 "$OUT/train_step_$layer.log"
  done
fi
if [ "$what" = grid ]; then
  python3 bench/gpu/strategy_grid.py run --libdir "$libs" --runner "$runner" \
      --out "$OUT/strategy_grid.jsonl" "$@" > "$OUT/strategy_grid.log" 2>&1 || status=1
  tail -3 "$OUT/strategy_grid.log"
fi
if [ "$what" = alignment ]; then
  python3 bench/gpu/check_alignment.py --libdir "$libs" "$@" 2>&1 | tee "$OUT/alignment.log" | tail -20
  status=${PIPESTATUS[0]}
fi
if [ "$what" = matrix ]; then
  python3 bench/gpu/model_matrix.py --libdir "$libs" --runner "$runner" \
      --json "$OUT/matrix.json" "$@" 2>&1 | tee "$OUT/matrix.log" | tail -60
  status=${PIPESTATUS[0]}
fi
exit $status
