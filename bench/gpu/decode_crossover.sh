#!/usr/bin/env bash
# Decode-length times of several compilations of the Qwen3-Next spec (gated
# delta, H 16, HV 32, K = V = 128, {qk_l2norm}) side by side, with a plain
# device copy of the state's bytes as the bandwidth yardstick at each B.
# Here (MLIR machine), one object per side, named for it:
#   mkdir -p .carry/xover
#   build/bin/linattn-compile SPEC -o .carry/xover/rec.o --strategy=recurrent
#   build/bin/linattn-compile SPEC -o .carry/xover/auto.o      # chunked past the fitted limit
# (SPEC: .carry/matrix/specs/mm_qwen3next.mlir from bench/gpu/model_shapes.py);
# on the GPU machine, with .carry/xover carried:
#   bash bench/gpu/decode_crossover.sh [B,...] [T,...]
# prints one JSON line per (B, T): the median ms of 20 CUDA-graph replays
# of each library (every .carry/xover/*.o) on the same random inputs, and
# the state's bytes moved by plain device work, as the recurrent kernel
# moves them (read once, written once: B x 32 x 128 x 128 f32), medians of
# 20 graph replays: "copy" a copy (a memcpy node in the graph), "scale" an
# elementwise kernel (y = x * 1).
set -euo pipefail
cd "$(dirname "$0")/../.."
Bs=${1:-1,64} Ts=${2:-8,16,32}
b=/tmp/linattn-runtime
cmake -S runtime -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C $b >/dev/null
rd=$(dirname "$(find $b -name liblinattn_cuda_runtime.so | head -1)")
R=$(find $b -name linattn-gpu-run -type f | head -1)
libs=""
for o in .carry/xover/*.o; do
  n=$(basename "$o" .o)
  c++ -shared -o /tmp/xover_$n.so "$o" -L"$rd" -llinattn_cuda_runtime -Wl,-rpath,"$rd" -ldl
  libs="$libs,$n"
done
python3 - "$R" "$Bs" "$Ts" "${libs#,}" <<'PY'
import json, os, subprocess, sys
import numpy as np
import torch
sys.path.insert(0, "bench/gpu")
from fla_time import time_graph  # noqa: E402
runner, Bs, Ts, libs = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(","), sys.argv[4].split(",")


def plain_ms(B, work):
    """Median graph-replay time of work(x, y) on the state's f32 elements."""
    x = torch.zeros(B * 32 * 128 * 128, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    return time_graph(lambda: work(x, y))


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
        row = {"B": B, "T": T, "copy": round(plain_ms(B, lambda x, y: y.copy_(x)), 4),
               "scale": round(plain_ms(B, lambda x, y: torch.mul(x, 1.0, out=y)), 4)}
        for lib in libs:
            proc = subprocess.run([runner, f"/tmp/xover_{lib}.so", "--entry", "gated_deltanet", *args,
                                   "--output", f"{d}/o.npy", "--output", f"{d}/s.npy", "--bench", "20",
                                   "--warmup", "3", "--graph", "--json", f"{d}/r.json"],
                                  capture_output=True, text=True)
            row[lib] = (json.load(open(f"{d}/r.json"))["median_ms"] if proc.returncode == 0
                        else proc.stderr[-200:])
        print(json.dumps(row), flush=True)
PY
