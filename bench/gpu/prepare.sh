#!/usr/bin/env bash
# Compiles the GPU test and benchmark specs to objects on this (MLIR) machine:
#   [LINATTN_VARIANTS=COMMAND] bench/gpu/prepare.sh [OUT_DIR=.carry/gpu] [REGEX]
# One object per variant that COMMAND SPEC_DIR lists (default
# bench/gpu/variants.sh: the specs and strategies of the check and the
# benchmark; "/usr/bin/python3 bench/gpu/model_shapes.py variants": the
# model-shape matrix), with REGEX those whose name it matches, named
# <variant>.o.
# The device script (bench/gpu/device.sh) links them with the runtime there.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-.carry/gpu}
only=${2:-.}
rm -rf "$out" && mkdir -p "$out/specs"
# shellcheck disable=SC2086 # the command is words
${LINATTN_VARIANTS:-bench/gpu/variants.sh} "$out/specs" | while read -r name spec options; do
  [[ $name =~ $only ]] || continue
  # shellcheck disable=SC2086 # the options are words
  build/bin/linattn-compile "$spec" -o "$out/$name.o" $options
done
cp test/lib/linattn_ref.py "$out/"
ls "$out"/*.o | wc -l
