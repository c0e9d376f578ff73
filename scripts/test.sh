#!/usr/bin/env bash
# Runs every LinAttn test (lit: IR, diagnostics, lowering, numerical checks
# against the fp64 oracle, runner errors, corpus) on an existing build and
# ends with one line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

ninja -C "$BUILD_DIR" -j "${JOBS:-2}" >/dev/null || {
  echo "test: build failed"; echo "0 passed, 1 failed"; exit 1; }

log=$(mktemp)
/usr/lib/llvm-22/bin/lit -sv -j "${JOBS:-2}" "$BUILD_DIR/test" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

# lit's summary lines read "  Passed: 11 (100.00%)", or "  Passed     : 74"
# when other categories pad the labels.
count() { sed -nE "s/^ +$1 *: +([0-9]+).*/\1/p" "$log" | tail -1; }
passed=$(count Passed); passed=${passed:-0}
failed=0
for k in Failed Unresolved "Timed Out" "Unexpectedly Passed"; do
  n=$(count "$k")
  failed=$(( failed + ${n:-0} ))
done
rm -f "$log"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
