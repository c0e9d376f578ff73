#!/usr/bin/env python3
"""Per-kernel times of one compiled spec on the GPU (for finding the slow kernel).

Runs linattn-gpu-run once with LINATTN_KERNEL_TIMES=1 (the runtime times
each launch with its own pair of CUDA events and prints it) on the
benchmark's inputs (B = 4, H = 8, bf16, K = V from the library name):
    kernel_times.py --runner R --lib LIBDIR/gated_deltanet_bf16_128_chunked.so --T 16384
or, for a model-shape library (mm_<spec id>.so, bench/gpu/model_shapes.py),
on its spec's heads, head sizes and type.
The first run includes module loading; the numbers printed are those of a
second, warm run. With --ncu, Nsight Compute profiles the kernels of the
second of two calls made in a Python process (call_in_process.py: ncu does
not attach to linattn-gpu-run on the device machine, NOTES c31) and its
report is printed; with --ncu-report PATH it is also saved (PATH.ncu-rep)
and, where SourceCounters is among the sections, the kernels' SASS with
their sampled warp stalls is summarised by ncu_source_summary.py into
PATH.summary.txt (the page itself as PATH.source.csv.gz). With --backward
KIND:H:HV:K:V (and --ncu) it profiles NAME_backward of a
bench/gpu/bench_backward.py library instead (call_in_process.py
--backward).
"""
import argparse
import gzip
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check import make_inputs, parse_library, runner_command  # noqa: E402


def profile(args, name):
    """Nsight Compute on call_in_process.py (two calls; by default every
    kernel of the second one, counted from a LINATTN_KERNEL_TIMES run)."""
    extra = ["--backward", args.backward] if args.backward else []
    if args.kernels:
        skip, count = args.kernels.split(":")
    else:
        proc = subprocess.run([sys.executable, os.path.join(HERE, "call_in_process.py"), "--lib", args.lib,
                               "--T", str(args.T), "--B", str(args.B), "--calls", "1"] + extra,
                              capture_output=True, text=True, env=dict(os.environ, LINATTN_KERNEL_TIMES="1"))
        per_call = sum(line.startswith("kernel ") for line in proc.stderr.splitlines())
        if proc.returncode != 0 or per_call == 0:
            print(proc.stderr[-2000:])
            return proc.returncode or 1
        skip = count = str(per_call)
    # The spec's kernels are named <function>_kernel (PyTorch's own, which
    # make the inputs, are not counted).
    prof = [args.ncu, "--clock-control", "none", "--kernel-name", f"regex:^{name}_kernel",
            "--launch-skip", skip, "--launch-count", count]
    prof += ["-f", "-o", args.ncu_report] if args.ncu_report else ["--print-details", "all"]
    for section in args.sections.split(","):
        prof += ["--section", section]
    prof += [sys.executable, os.path.join(HERE, "call_in_process.py"), "--lib", args.lib,
             "--T", str(args.T), "--B", str(args.B), "--calls", "2"] + extra
    proc = subprocess.run(prof, capture_output=True, text=True)
    print(proc.stdout)
    print(proc.stderr[-2000:])
    if proc.returncode != 0 or not args.ncu_report:
        return proc.returncode
    report = args.ncu_report + ".ncu-rep"
    details = subprocess.run([args.ncu, "--import", report, "--page", "details", "--print-details", "all"],
                             capture_output=True, text=True)
    print(details.stdout)
    if "SourceCounters" in args.sections:
        # The per-instruction page is kept (gzip: ~30 KB) for
        # ncu_source_summary.py --per-step.
        source = args.ncu_report + ".source.csv.gz"
        page = subprocess.run([args.ncu, "--import", report, "--page", "source", "--csv", "--print-source",
                               "sass"], capture_output=True, text=True).stdout
        with gzip.open(source, "wt") as f:
            f.write(page)
        with open(args.ncu_report + ".summary.txt", "w") as f:
            subprocess.run([sys.executable, os.path.join(HERE, "ncu_source_summary.py"), source], stdout=f,
                           text=True)
    return 0


def model_shape_spec(stem):
    """The model-shape spec (bench/gpu/model_shapes.py) a library named
    library_name(spec id) was compiled from, or None for check-style names."""
    from model_shapes import SPECS, library_name
    return next((s for spec_id, s in SPECS.items() if library_name(spec_id) == stem), None)


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
    p.add_argument("--ncu-report", default="",
                   help="with --ncu, also save the report as PATH.ncu-rep and a summary of the sampled "
                   "SASS as PATH.summary.txt")
    p.add_argument("--kernels", default="",
                   help="with --ncu, SKIP:COUNT of the spec's kernel launches (default: the second call's)")
    p.add_argument("--backward", default="", metavar="KIND:H:HV:K:V",
                   help="with --ncu, profile NAME_backward of a bench_backward library")
    args = p.parse_args()
    if args.backward:
        if not args.ncu:
            p.error("--backward needs --ncu (bench_backward.py --kernel-times times its kernels)")
        return profile(args, os.path.basename(args.lib)[:-len(".so")] + "_backward")
    gen = torch.Generator(device="cuda").manual_seed(args.T)
    stem = os.path.basename(args.lib)[:-len(".so")]
    spec = model_shape_spec(stem)
    if spec:
        name = spec["family"]
        ins = make_inputs(spec["kind"], args.B, args.T, spec["K"], spec["V"], spec["dtype"],
                          False, gen, spec["qk_l2norm"], spec["H"], spec["HV"])
    else:
        name, kind, dtype, K, _, qk_l2norm, H = parse_library(args.lib)
        ins = make_inputs(kind, args.B, args.T, K, K, dtype, False, gen, qk_l2norm, H)
    with tempfile.TemporaryDirectory() as work:
        cmd, _ = runner_command(args.runner, args.lib, name, ins, work)
        if args.ncu:
            return profile(args, name)
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
