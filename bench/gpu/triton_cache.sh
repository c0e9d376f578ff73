#!/usr/bin/env bash
# fla's Triton kernels, compiled once, kept across GPU-machine calls: each
# call starts on a fresh machine, where fla's JIT and autotuning took most
# of a 10-minute call (bench/NOTES.md t3: two of eight backward rows in 330
# s). The cache goes back in parts (a call returns at most 8 files of 16 MiB
# from $OUT) and is carried into the next call, whose Triton then finds its
# kernels compiled.
#
#   eval "$(bench/gpu/triton_cache.sh restore .carry/triton)"   # first, on the GPU machine
#   ... fla runs ...
#   bench/gpu/triton_cache.sh save "$OUT/triton"                 # last
#
# then, here: mkdir -p .carry/triton && cp FILES_AT/triton/* .carry/triton/
# restore prints the `export TRITON_CACHE_DIR=...` line (the cache unpacked
# there, or empty where no parts were carried); save packs that directory
# into cache.tgz.00, .01, ... of at most 15 MiB each.
set -euo pipefail
cache=${TRITON_CACHE_DIR:-/tmp/linattn-triton-cache}
case "${1:-}" in
  restore)
    parts=${2:?restore DIR}
    mkdir -p "$cache"
    if compgen -G "$parts/cache.tgz.*" > /dev/null; then
      cat "$parts"/cache.tgz.* | tar xzf - -C "$cache"
    fi
    echo "export TRITON_CACHE_DIR=$cache"
    ;;
  save)
    out=${2:?save DIR}
    mkdir -p "$out"
    tar czf - -C "$cache" . | split -b 15M -d - "$out/cache.tgz."
    ;;
  *)
    echo "usage: $0 restore DIR | save DIR" >&2
    exit 2
    ;;
esac
