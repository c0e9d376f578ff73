#!/usr/bin/env bash
# Builds LinAttn's libFuzzer targets and runs each from its seed corpus:
#   scripts/fuzz.sh [RUNS=10000] [TARGET...]
# TARGETs (default: all three):
#   npy, signature  the MLIR-free runtime's .npy reader and recorded-signature
#                   parser (runtime/fuzz/), built with clang's
#                   -fsanitize=fuzzer,address,undefined into build/fuzz/;
#   spec            the spec parser, verifier and linattn-to-cpu (fuzz/),
#                   built in build-fuzz/, a CMake build of its own with
#                   clang and the libraries of linattn-to-cpu
#                   instrumented (-DLINATTN_BUILD_FUZZERS=ON; about 4
#                   minutes on 2 cores the first time, incremental after).
# Each run starts from a fresh copy of its seeds (runtime/fuzz/corpus/<t>/,
# fuzz/corpus/spec/) and prints libFuzzer's final line; a crash, a
# sanitizer report or a failed check of the target stops it and fails the
# script. Needs clang and libclang-rt-14-dev (setup.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10000}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(npy signature spec)
CLANGXX=${CLANGXX:-clang++}
out=build/fuzz
mkdir -p "$out"
common=(runtime/lib/Npy.cpp runtime/lib/FloatConversion.cpp runtime/lib/InputCheck.cpp
        runtime/lib/Signature.cpp)

build_spec_fuzzer() {
  local dir=build-fuzz
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -G Ninja -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_FLAGS_RELEASE=-O1 \
      -DCMAKE_CXX_COMPILER="$CLANGXX" -DCMAKE_C_COMPILER="${CLANGXX%++}" \
      -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit -DLLVM_USE_LINKER=lld \
      -DLINATTN_BUILD_FUZZERS=ON > "$out/spec-configure.log" ||
      { tail -20 "$out/spec-configure.log"; echo "fuzz: spec: configuring failed"; exit 1; }
  fi
  ninja -C "$dir" -j "${JOBS:-2}" linattn-spec-fuzzer > "$out/spec-build.log" ||
    { grep -A5 -m3 "error:" "$out/spec-build.log"; echo "fuzz: spec: build failed"; exit 1; }
  cp "$dir/bin/linattn-spec-fuzzer" "$out/spec-fuzzer"
}

for target in "${targets[@]}"; do
  case "$target" in
    npy|signature)
      "$CLANGXX" -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined \
          -fno-sanitize-recover=undefined -Iruntime/include \
          "runtime/fuzz/$target-fuzzer.cpp" "${common[@]}" -o "$out/$target-fuzzer"
      seeds=runtime/fuzz/corpus/$target ;;
    spec)
      build_spec_fuzzer
      seeds=fuzz/corpus/spec ;;
    *) echo "fuzz: unknown target '$target' (npy, signature, spec)"; exit 1 ;;
  esac
  work="$out/$target-corpus"
  rm -rf "$work" && mkdir -p "$work"
  cp "$seeds"/* "$work"/
  (cd "$out" && "./$target-fuzzer" -runs="$runs" -max_len=4096 -seed=1 -rss_limit_mb=4096 \
      "$target-corpus") 2> "$out/$target.log" ||
    { tail -40 "$out/$target.log"; echo "fuzz: $target FAILED"; exit 1; }
  echo "fuzz: $target: $(grep -E '^Done|^#[0-9]+.*DONE' "$out/$target.log" | tail -1)"
done
