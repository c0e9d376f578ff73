#!/usr/bin/env python3
"""Per-kernel times of one compiled spec on the GPU (for finding the slow kernel).

Runs linattn-gpu-run once with LINATTN_KERNEL_TIMES=1 (the runtime times
each launch with its own pair of CUDA events and prints it) on the
benchmark's inputs (B = 4, H = 8, bf16, K = V from the library name):
    kernel_times.py --runner R --lib LIBDIR/gated_deltanet_bf16_128_chunked.so --T 16384
The first run includes module loading; the numbers printed are those of a
second, warm run. With --ncu, Nsight Compute profiles the kernels of one
call instead (speed of light, occupancy, warp stall reasons) and its
report is printed.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import make_inputs, parse_library, runner_command  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runner", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--T", type=int, default=16384)
    p.add_argument("--B", type=int, default=4)
    p.add_argument("--ncu", default="", help="path of Nsight Compute's ncu: profile instead of timing")
    p.add_argument("--sections", default="SpeedOfLight,Occupancy,LaunchStats,WarpStateStats,"
                   "MemoryWorkloadAnalysis,ComputeWorkloadAnalysis",
                   help="Nsight Compute sections to collect (with --ncu)")
    p.add_argument("--kernels", default="0:8",
                   help="with --ncu, SKIP:COUNT: profile COUNT launches after the first SKIP")
    args = p.parse_args()
    name, kind, dtype, K, _, qk_l2norm = parse_library(args.lib)
    gen = torch.Generator(device="cuda").manual_seed(args.T)
    ins = make_inputs(kind, args.B, args.T, K, K, dtype, False, gen, qk_l2norm)
    with tempfile.TemporaryDirectory() as work:
        cmd, _ = runner_command(args.runner, args.lib, name, ins, work)
        if args.ncu:
            skip, count = args.kernels.split(":")
            prof = [args.ncu, "--clock-control", "none", "--launch-skip", skip, "--launch-count", count,
                    "--print-details", "all"]
            for section in args.sections.split(","):
                prof += ["--section", section]
            proc = subprocess.run(prof + cmd, capture_output=True, text=True)
            print(proc.stdout)
            print(proc.stderr[-2000:])
            return proc.returncode
        # --bench 1 --warmup 1: one warm-up call, then the timed one.
        proc = subprocess.run(cmd + ["--bench", "1", "--warmup", "1"], capture_output=True,
                              text=True, env=dict(os.environ, LINATTN_KERNEL_TIMES="1"))
        lines = [l for l in proc.stderr.splitlines() if l.startswith("kernel ")]
        per_call = len(lines) // 3 if len(lines) % 3 == 0 and lines else len(lines)
        print(f"{os.path.basename(args.lib)} B={args.B} T={args.T}")
        for line in lines[-per_call:]:
            print("  " + line)
        if proc.returncode != 0:
            print(proc.stderr[-800:])
        return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
