#!/usr/bin/env bash
# Compiles the GPU test and benchmark specs to objects on this (MLIR) machine:
#   bench/gpu/prepare.sh [OUT_DIR=.carry/gpu] [REGEX]
# One object per variant of bench/gpu/variants.sh (the specs and strategies
# it lists; with REGEX, those whose name it matches), named <variant>.o.
# The device script (bench/gpu/device.sh) links them with the runtime there.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.carry/gpu}
only=${2:-.}
rm -rf "$out" && mkdir -p "$out/specs"
bench/gpu/variants.sh "$out/specs" | while read -r name spec options; do
  [[ $name =~ $only ]] || continue
  # shellcheck disable=SC2086 # the options are words
  build/bin/linattn-compile "$spec" -o "$out/$name.o" $options
done
cp test/lib/linattn_ref.py "$out/"
ls "$out"/*.o | wc -l
