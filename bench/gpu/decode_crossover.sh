#!/usr/bin/env bash
# Where the recurrent kernel stops beating the chunked ones on decode-like
# lengths, for the Qwen3-Next spec (gated delta, H 16, HV 32, K = V = 128,
# {qk_l2norm}). Here (MLIR machine):
#   mkdir -p .carry/xover
#   build/bin/linattn-compile SPEC -o .carry/xover/rec.o --strategy=recurrent
#   build/bin/linattn-compile SPEC -o .carry/xover/auto.o      # chunked past the fitted limit
# (SPEC: .carry/matrix/specs/mm_qwen3next.mlir from bench/gpu/model_shapes.py);
# on the GPU machine, with .carry/xover carried:
#   bash bench/gpu/decode_crossover.sh [B,...] [T,...]
# prints one JSON line per (B, T): the median ms of 20 CUDA-graph replays
# of each library on the same random inputs.
set -euo pipefail
cd "$(dirname "$0")/../.."
Bs=${1:-1,64} Ts=${2:-8,16,32}
b=/tmp/linattn-runtime
cmake -S runtime -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C $b >/dev/null
rd=$(dirname "$(find $b -name liblinattn_cuda_runtime.so | head -1)")
R=$(find $b -name linattn-gpu-run -type f | head -1)
for n in rec auto; do
  c++ -shared -o /tmp/$n.so .carry/xover/$n.o -L"$rd" -llinattn_cuda_runtime -Wl,-rpath,"$rd" -ldl
done
python3 - "$R" "$Bs" "$Ts" <<'PY'
import json, os, subprocess, sys
import numpy as np
runner, Bs, Ts = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
for B in map(int, Bs):
    for T in map(int, Ts):
        d = f"/tmp/in_{B}_{T}"
        os.makedirs(d, exist_ok=True)
        rng = np.random.default_rng(0)
        arrays = {"q": rng.standard_normal((B, T, 16, 128)), "k": rng.standard_normal((B, T, 16, 128)),
                  "v": rng.standard_normal((B, T, 32, 128)), "g": -rng.random((B, T, 32)),
                  "beta": rng.random((B, T, 32)), "s0": 0.1 * rng.standard_normal((B, 32, 128, 128))}
        args = []
        for n, x in arrays.items():
            np.save(f"{d}/{n}.npy", x.astype(np.float32))
            args += ["--input", f"{d}/{n}.npy"]
        row = {"B": B, "T": T}
        for lib in ("rec", "auto"):
            proc = subprocess.run([runner, f"/tmp/{lib}.so", "--entry", "gated_deltanet", *args,
                                   "--output", f"{d}/o.npy", "--output", f"{d}/s.npy", "--bench", "20",
                                   "--warmup", "3", "--graph", "--json", f"{d}/r.json"],
                                  capture_output=True, text=True)
            row[lib] = (json.load(open(f"{d}/r.json"))["median_ms"] if proc.returncode == 0
                        else proc.stderr[-200:])
        print(json.dumps(row), flush=True)
PY
