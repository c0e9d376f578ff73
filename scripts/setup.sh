#!/usr/bin/env bash
# Installs what LinAttn needs on Debian 12 (apt), then configures and builds
# it with CMake + Ninja into ./build. Safe to re-run: installed packages are
# skipped and the build is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

# Why each package is here: README.md, "Dependencies".
packages=(
  cmake ninja-build g++           # the build
  llvm-22-dev libmlir-22-dev      # LLVM and MLIR 22 libraries, headers, CMake packages
  mlir-22-tools llvm-22-tools     # mlir-tblgen; FileCheck, not, count and lit for the tests
  lld-22 lld                      # fast linking of the MLIR-heavy tools (lld: the ld.lld that -fuse-ld=lld finds)
  python3-numpy                   # the fp64 oracle of the numerical tests (/usr/bin/python3)
  clang libclang-rt-14-dev        # libFuzzer for the runtime's fuzz targets (scripts/fuzz.sh)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

BUILD_DIR=${BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DLLVM_USE_LINKER=lld
fi
# Two cores, and each MLIR translation unit needs about 1 GiB: -j2.
ninja -C "$BUILD_DIR" -j "${JOBS:-2}"
