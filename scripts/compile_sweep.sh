#!/usr/bin/env bash
# Compiles one spec per kind x head sizes x {H = HV, H = HV / 2} with
# linattn-compile under each strategy given, and sorts every outcome into
# ok, error (a diagnostic) or CRASH (a signal, an assertion, LLVM ERROR):
#   [SWEEP_ONLY=REGEX] [SWEEP_DTYPE=bf16|f16|f32] [SWEEP_BACKWARD=1] scripts/compile_sweep.sh [OUT_DIR=/tmp/linattn-sweep] [STRATEGIES="auto chunked"]
# Prints one line per compile (NAME STRATEGY OUTCOME RC FIRST-ERROR) and a
# count per outcome (SWEEP_ONLY: only the specs whose name matches); exits
# non-zero on any CRASH. Kinds: every one test/lib/linattn_ref.py knows;
# sizes: K = V in 16..256 by 16 (both head layouts), and nine K != V pairs.
# q, k, v in SWEEP_DTYPE (default bf16), dynamic B and T; with
# SWEEP_BACKWARD=1 each library exports NAME_backward too (--backward).
# About 20 minutes on 2 cores for both strategies (forward only).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/linattn-sweep}
strategies=${2:-auto chunked}
mkdir -p "$out/logs"
/usr/bin/python3 - "$out" "${SWEEP_DTYPE:-bf16}" > "$out/specs.txt" <<'PY'
import sys
sys.path.insert(0, "test/lib")
import linattn_ref as ref
out, dtype = sys.argv[1:]
sizes = range(16, 257, 16)
pairs = [(s, s) for s in sizes] + [(128, 64), (64, 128), (96, 160), (256, 64), (64, 256),
                                   (48, 192), (240, 112), (16, 256), (256, 16)]
for kind in ref.KINDS:
    for K, V in pairs:
        for H, HV in ((8, 8), (4, 8)):
            if H != HV and K != V:
                continue
            name = f"{kind}_k{K}_v{V}_h{H}_hv{HV}"
            decay = ref.retnet_decay(HV) if kind == "constant_decay" else None
            ref.write_spec(f"{out}/{name}.mlir", kind, kind, dtype, 1, 1, H, HV, K, V, decay=decay)
            print(name)
PY
one() {
  local n=$1 s=$2 log=$out/logs/$1.$2.log rc r
  build/bin/linattn-compile "$out/$n.mlir" -o "$out/$n.$s.o" --strategy="$s" \
      ${SWEEP_BACKWARD:+--backward} > "$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then r=ok
  elif [ $rc -gt 128 ] || grep -qE "Stack dump|LLVM ERROR|Assertion|UNREACHABLE" "$log"; then r=CRASH
  else r=error; fi
  echo "$n $s $r $rc $(grep -m1 -o 'error: .*' "$log" | cut -c1-160)"
  rm -f "$out/$n.$s.o"
}
export -f one; export out SWEEP_BACKWARD
for s in $strategies; do grep -E "${SWEEP_ONLY:-.}" "$out/specs.txt" | sed "s/$/ $s/"; done \
  | xargs -P"$(nproc)" -n2 bash -c 'one "$0" "$1"' > "$out/results.txt"
sort "$out/results.txt"
awk '{print $2, $3}' "$out/results.txt" | sort | uniq -c
! grep -q " CRASH " "$out/results.txt"
