#!/usr/bin/env bash
# Per-kernel times of every family's chunked bf16 K = V = 128 library at
# T = 1024 and 16384 (B = 4, H = 8), as in bench/results/gpu_kernel_times_chunked.log:
#   bench/gpu/kernel_times_all.sh RUNNER LIBDIR [LABEL]
# LIBDIR holds the libraries bench/gpu/device.sh links (/tmp/linattn-libs).
set -euo pipefail
cd "$(dirname "$0")/../.."
runner=$1 libdir=$2 label=${3:-}
echo "# bench/gpu/kernel_times_all.sh (kernel_times.py --T {1024,16384}) ${label}"
for family in gated_deltanet deltanet simple_gla linear_attention retnet deltanet_negeig; do
  for T in 1024 16384; do
    python3 bench/gpu/kernel_times.py --runner "$runner" \
        --lib "$libdir/${family}_bf16_128_chunked.so" --T "$T"
  done
done
