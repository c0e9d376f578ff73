#!/usr/bin/env bash
# The device commands of bench/NOTES.md ut1 (one lease, H200), on objects
# prepared here with bench/gpu/prepare.sh from the model-shape variants:
#   R='^mm_(gdn_h8|qwen3next|gdn_h16_hv64|deltanet_h8|simple_gla_h8|linear_attention_h8|gdn_k64_v128|gdn_k128_v256|gdn_k64_v64|gdn_k96_v96|gdn_k192_v192|deltanet_negeig_h8|mamba2|kda_h8|gdn_h8_f32|retnet_h8|gdn_k48_v48)$'
#   V="/usr/bin/python3 bench/gpu/model_shapes.py variants"
#   LINATTN_VARIANTS="$V" bench/gpu/prepare.sh .carry/mm-base "$R"   # at 77ba5ef
#   LINATTN_VARIANTS="$V" bench/gpu/prepare.sh .carry/mm-ut "$R"     # the UT change alone
#   LINATTN_EXP_UNITS=1 LINATTN_VARIANTS="$V" bench/gpu/prepare.sh .carry/mm-both "$R"
#       # the UT change and output_units_everywhere_experiment.patch
#       # (paired units wherever they fit)
# Then on the GPU machine (carry .carry/mm-{base,ut,both}):
#   bash bench/results/ut1_device_commands.sh
# Results: ut1_kernel_times_h200.log, model_matrix_ut1_{base,ut,both}_nofla.json.
set -e
OUT=${OUT:-/tmp/o}
build=/tmp/linattn-runtime
cmake -S runtime -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && ninja -C "$build" >/dev/null
rt=$(dirname "$(find "$build" -name 'liblinattn_cuda_runtime.so' | head -1)")
runner=$(find "$build" -name linattn-gpu-run -type f | head -1)
for v in base ut both; do
  mkdir -p /tmp/libs-$v
  for o in .carry/mm-$v/*.o; do
    c++ -shared -o "/tmp/libs-$v/$(basename "$o" .o).so" "$o" -L"$rt" -llinattn_cuda_runtime -Wl,-rpath,"$rt" -ldl
  done
done
for l in "mm_gdn_h8 4 4096" "mm_qwen3next 1 4096" "mm_deltanet_h8 4 4096" "mm_simple_gla_h8 4 4096" \
         "mm_linear_attention_h8 4 4096" "mm_gdn_k128_v256 4 4096" "mm_kda_h8 4 4096" "mm_gdn_h8_f32 4 4096"; do
  # shellcheck disable=SC2086 # the row is words
  set -- $l
  for v in base ut both; do
    echo "== $v"
    python3 bench/gpu/kernel_times.py --runner "$runner" --lib /tmp/libs-$v/$1.so --B $2 --T $3
  done
done 2>&1 | tee "$OUT/kernel_times.log"
ROWS='^(gdn_h8 4 4096|qwen3next 1 (4096|16384)|qwen3next 8 2048|gdn_h16_hv64 1 8192|deltanet_h8 4 4096|simple_gla_h8 4 4096|linear_attention_h8 4 4096|gdn_k64_v128 4 4096|gdn_k128_v256 4 4096|gdn_k64_v64 4 4096|gdn_k96_v96 4 4096|gdn_k192_v192 4 4096|deltanet_negeig_h8 4 4096|mamba2 8 2048|kda_h8 4 4096|gdn_h8_f32 4 4096|retnet_h8 4 4096|gdn_k48_v48 4 4096)$'
for v in base both ut; do
  python3 bench/gpu/model_matrix.py --libdir /tmp/libs-$v --runner "$runner" --json "$OUT/mm_$v.json" \
      --rows "$ROWS" --no-fla --seed 7 > "$OUT/mm_$v.log" 2>&1 || true
done
