#!/usr/bin/env bash
# Builds the libFuzzer targets of the MLIR-free runtime (runtime/fuzz/:
# the .npy reader, the recorded-signature parser) with clang's
# -fsanitize=fuzzer,address,undefined into build/fuzz/, then runs each:
#   scripts/fuzz.sh [RUNS=10000]
# Each run starts from runtime/fuzz/corpus/<target>/ (valid and broken
# seeds) and prints libFuzzer's final line; a crash, a sanitizer report or
# a failed assertion of the target stops it and fails the script. Needs
# clang and libclang-rt-14-dev (setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10000}
CLANGXX=${CLANGXX:-clang++}
out=build/fuzz
mkdir -p "$out"
common=(runtime/lib/Npy.cpp runtime/lib/FloatConversion.cpp runtime/lib/InputCheck.cpp
        runtime/lib/Signature.cpp)
for target in npy signature; do
  "$CLANGXX" -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined \
      -fno-sanitize-recover=undefined -Iruntime/include \
      "runtime/fuzz/$target-fuzzer.cpp" "${common[@]}" -o "$out/$target-fuzzer"
  work="$out/$target-corpus"
  rm -rf "$work" && mkdir -p "$work"
  cp runtime/fuzz/corpus/"$target"/* "$work"/
  "$out/$target-fuzzer" -runs="$runs" -max_len=4096 -seed=1 "$work" 2> "$out/$target.log" ||
    { tail -40 "$out/$target.log"; echo "fuzz: $target FAILED"; exit 1; }
  echo "fuzz: $target: $(grep -E '^Done|^#[0-9]+.*DONE' "$out/$target.log" | tail -1)"
done
