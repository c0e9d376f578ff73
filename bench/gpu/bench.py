#!/usr/bin/env python3
"""LinAttn GPU benchmark, B = 4, H = 8, K = V = 128, bf16, T = 128 .. 16384
(B and H may be given: H != 8 times the libraries <family>_h<H>_...).

Runs on the GPU machine. Measures the two ceilings in the same run (device
copy bandwidth, counting bytes read + written; a bf16 8192^3 matmul), times
every family's compiled library with linattn-gpu-run --bench (CUDA events,
3 warm-ups, median of 20, input sets rotated when they fit in L2; with
--graph each call replayed from a CUDA graph), and times
flash-linear-attention's forward ops from CUDA-graph replays (fla_time.py,
one process per op). Writes one JSON report and prints a table.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check import make_inputs, runner_command  # noqa: E402  (same inputs as the check)
FAMILIES = [("linear_attention", "identity"), ("retnet", "constant_decay"),
            ("simple_gla", "scalar_gate"), ("gla", "key_gate"), ("deltanet", "delta"),
            ("gated_deltanet", "gated_delta"), ("deltanet_negeig", "negeig_delta"),
            ("kda", "kda")]
FLA_OPS = {"gated_deltanet": "gated_delta", "deltanet": "delta", "simple_gla": "simple_gla",
           "gla": "gla", "kda": "kda"}


def algorithm_flops(kind, strategy, K, V, C=64):
    """FLOPs per token and head of the algorithm a strategy runs.

    recurrent: the update and o_t (6 K V), plus k^T S (2 K V) for delta rules.
    chunked (chunk C): the state pass (K^T D: 2 K V), the output (Q S: 2 K V;
    Q K^T and P D: 2 C K + 2 C V, Q K^T once per 32 output columns), and for
    delta rules the UT transform (K K^T, W, U: 2 C (2 K + V), the inverse
    C^2 / 3) and W S (2 K V).
    scan (token scan): the outer product k v^T (K V), the fold a S + X
    (2 K V) and o_t = S_t^T q_t (2 K V).
    segment-scan: chunked's work, plus the chunk transitions (Kd^T U: 2 K V,
    and Kd^T W: 2 K K for delta rules) and the scan's M S per chunk
    (2 K K V / C for delta rules).
    chunked-sN (the state pass in segments of N chunks): chunked's work plus
    the carry's Q C (2 K V; none in the first segment, counted anyway).
    """
    strategy, _, segmented = strategy.partition("-s")
    delta = kind in ("delta", "gated_delta", "negeig_delta", "kda")
    if strategy == "recurrent":
        return K * V * (8 if delta else 6)
    if strategy == "scan":
        return 5 * K * V
    flops = 2 * K * V + 2 * K * V + 2 * C * K * (V // 32) + 2 * C * V
    if delta:
        flops += 2 * C * (2 * K + V) + C * C // 3 + 2 * K * V
    if strategy == "segment-scan":
        flops += 2 * K * V + (2 * K * K + 2 * K * K * V // C if delta else 0)
    if segmented:
        flops += 2 * K * V
    return flops


def ceilings():
    x = torch.empty(2 ** 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(10):
        y.copy_(x)
    b.record()
    b.synchronize()
    copy_tbs = 2 * x.numel() * 10 / (a.elapsed_time(b) * 1e-3) / 1e12
    m = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        m @ m
    a.record()
    for _ in range(10):
        m @ m
    b.record()
    b.synchronize()
    tflops = 2 * 8192 ** 3 * 10 / (a.elapsed_time(b) * 1e-3) / 1e12
    return round(copy_tbs, 3), round(tflops, 1)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--libdir", required=True)
    p.add_argument("--runner", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--T", default="128,256,512,1024,2048,4096,8192,16384")
    p.add_argument("--fla-T", default="128,1024,4096,16384")
    p.add_argument("--no-fla", action="store_true")
    p.add_argument("--graph", action="store_true",
                   help="replay each call from a CUDA graph (linattn-gpu-run --graph), as fla is timed")
    p.add_argument("--families", default="", help="comma-separated subset of the families")
    p.add_argument("--B", type=int, default=4, help="batch (the issue's table is B = 4)")
    p.add_argument("--H", type=int, default=8,
                   help="heads, H = HV (libraries <family>_h<H>_... unless 8)")
    p.add_argument("--K", type=int, default=128, choices=(64, 128),
                   help="K = V (libraries <family>_bf16_<K>_<strategy>.so; the issue's table is 128)")
    p.add_argument("--strategies", default="recurrent,chunked",
                   help="compiled strategies to time (libraries <family>_bf16_<K>_<strategy>.so)")
    args = p.parse_args()
    if args.K != 128 and not args.no_fla:
        p.error("fla_time.py times K = V = 128; with --K 64 pass --no-fla")
    Ts = [int(t) for t in args.T.split(",")]
    copy_tbs, mm_tflops = ceilings()
    print(f"ceilings: copy {copy_tbs} TB/s, bf16 matmul {mm_tflops} TFLOP/s", flush=True)
    rows = []
    B, H, K, V = args.B, args.H, args.K, args.K
    heads = "" if H == 8 else f"_h{H}"
    with tempfile.TemporaryDirectory() as work:
        chosen = set(args.families.split(",")) if args.families else None
        for name, kind in FAMILIES:
            if chosen and name not in chosen:
                continue
            for strategy, T in [(s, T) for s in args.strategies.split(",") for T in Ts]:
                lib = os.path.join(args.libdir, f"{name}{heads}_bf16_{K}_{strategy}.so")
                if not os.path.exists(lib):
                    continue
                gen = torch.Generator(device="cuda").manual_seed(T)
                inputs = make_inputs(kind, B, T, K, V, "bf16", False, gen, H=H)
                cmd, _ = runner_command(args.runner, lib, name, inputs, work)
                # Bytes: bf16 q, k, v, o; f32 gates, beta, initial and final state.
                nbytes = 2 * B * T * H * (2 * K + 2 * V) + 2 * 4 * B * H * K * V
                nbytes += sum(4 * inputs[n].numel() for n in ("gate", "beta") if n in inputs)
                base, _, chunk = strategy.partition("-c")
                flops = B * T * H * algorithm_flops(kind, base, K, V, int(chunk or 64))
                res_json = os.path.join(work, "bench.json")
                proc = subprocess.run(cmd + ["--bench", "20", "--warmup", "3", "--bytes", str(nbytes),
                                             "--flops", str(flops), "--json", res_json]
                                      + (["--graph"] if args.graph else []),
                                      capture_output=True, text=True, timeout=600)
                row = {"impl": "linattn", "family": name, "kind": kind, "strategy": strategy,
                       "B": B, "T": T, "H": H, "K": K, "V": V, "dtype": "bf16",
                       "bytes": nbytes, "flops": flops}
                if proc.returncode != 0:
                    row["error"] = proc.stderr.strip()[-300:]
                else:
                    row.update(json.load(open(res_json)))
                    row["floor_ms_bytes"] = nbytes / (copy_tbs * 1e12) * 1e3
                rows.append(row)
                print(f"linattn {name:17s} {strategy + ('+graph' if args.graph else ''):16s} T={T:5d} "
                      + (f"{row['median_ms']:9.3f} ms  {row['tb_per_s']:.3f} TB/s  "
                         f"{row['tflop_per_s']:.2f} TFLOP/s" if "median_ms" in row
                         else "ERROR " + row["error"]), flush=True)
    fla_rows = []
    if not args.no_fla:
        ops = ([op for name, op in FLA_OPS.items() if chosen and name in chosen]
               or list(FLA_OPS.values()))
        for op in ops:
            proc = subprocess.run([sys.executable, os.path.join(HERE, "fla_time.py"), op, args.fla_T,
                                   "--B", str(B), "--H", str(H)],
                                  capture_output=True, text=True, timeout=900)
            for line in proc.stdout.splitlines():
                if line.startswith("{"):
                    fla_rows.append(json.loads(line))
                    print("fla", line, flush=True)
            if proc.returncode != 0:
                fla_rows.append({"impl": "fla-0.5.2", "op": op, "error": proc.stderr.strip()[-300:]})
                print("fla", op, "failed:", proc.stderr.strip()[-300:], flush=True)
    report = {"device": torch.cuda.get_device_name(0), "ceilings": {
        "copy_tb_per_s": copy_tbs, "bf16_matmul_tflop_per_s": mm_tflops},
        "linattn": rows, "fla": fla_rows}
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
