#!/usr/bin/env python3
"""Times the derived backward (linattn-compile --backward) beside fla's.

Two halves, one file:

  bench/gpu/bench_backward.py variants SPEC_DIR
      (on the MLIR machine, as bench/gpu/prepare.sh's LINATTN_VARIANTS)
      writes the specs of the issue's training shapes, bf16, K = V = 128,
      dynamic B and T: Gated DeltaNet and DeltaNet with H = HV = 8, Gated
      DeltaNet with 8 q/k and 16 value heads (and Gated DeltaNet compiled
      with --strategy=recurrent: the adjoint's loop, for comparison); prints
      `NAME SPEC --backward [OPTIONS]`.

  bench/gpu/bench_backward.py run --libdir D --runner R --json OUT [--rows REGEX]
      (on the GPU machine, bench/gpu/device.sh bench-backward) for each row
      (family, B, T, H, HV): LinAttn's NAME_backward from a CUDA graph
      (linattn-gpu-run --graph --bench), and fla's backward of its chunk
      function (chunk_gated_delta_rule / chunk_delta_rule: torch.autograd.grad
      of the output and final state, CUDA events over repeated calls after a
      warm-up; fla's gated-backward guard on Hopper with Triton 3.4-3.7.0 is
      bypassed for timing only) and its forward + backward. With
      --errors-T, rows of that T also report both backwards' gradient errors
      against torch.autograd through bench/gpu/check.py's float64 loop.
      With --kernel-times, each of LinAttn's kernels is also timed alone in
      one call (the runtime's LINATTN_KERNEL_TIMES).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

K = V = 128
SPECS = {  # name: (family kind, H, HV, linattn-compile options)
    "gated_deltanet_h8": ("gated_delta", 8, 8, ""),
    "gated_deltanet_h8_hv16": ("gated_delta", 8, 16, ""),
    "deltanet_h8": ("delta", 8, 8, ""),
    # The adjoint's reverse loop (the backward before the chunked form).
    "gated_deltanet_h8_loop": ("gated_delta", 8, 8, "--strategy=recurrent"),
}
ROWS = ([(name, B, T) for name in ("gated_deltanet_h8", "deltanet_h8")
         for B, T in ((4, 1024), (4, 4096), (4, 16384))]
        + [("gated_deltanet_h8_hv16", 1, 32768), ("gated_deltanet_h8_loop", 4, 1024)])


def variants(spec_dir):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "lib"))
    import linattn_ref as ref
    os.makedirs(spec_dir, exist_ok=True)
    for name, (kind, H, HV, options) in SPECS.items():
        path = os.path.join(spec_dir, name + ".mlir")
        ref.write_spec(path, kind, name, "bf16", 1, 1, H, HV, K, V)
        print(name, path, "--backward", options)


def fla_backward(kind, ins, do, ds, scale):
    """(forward, backward) closures over fla's chunk function on `ins`."""
    import torch
    import fla.ops.common.chunk_o as chunk_o
    chunk_o.TRITON_ABOVE_3_7_1 = True  # the Hopper guard: timing only
    bf = torch.bfloat16
    q, k, v = (ins[n].to(bf).requires_grad_() for n in ("q", "k", "v"))
    s0 = ins["initial_state"].float().contiguous().requires_grad_()
    beta = ins["beta"].float().requires_grad_()
    leaves = [q, k, v, beta, s0]
    if kind == "gated_delta":
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as f
        g = ins["gate"].float().requires_grad_()
        leaves.insert(3, g)
        run = lambda: f(q, k, v, g, beta, scale=scale, initial_state=s0, output_final_state=True)
    else:
        from fla.ops.delta_rule import chunk_delta_rule as f
        run = lambda: f(q, k, v, beta, scale=scale, initial_state=s0, output_final_state=True)
    rep = v.shape[2] // q.shape[2]
    if rep > 1 and kind == "delta":
        raise SystemExit("fla's delta rule backward with HV > H faulted here: not timed")
    o, s = run()
    dob = do.to(bf)

    def backward():
        return torch.autograd.grad((o, s), leaves, (dob, ds), retain_graph=True)

    def forward_backward():
        o2, s2 = run()
        return torch.autograd.grad((o2, s2), leaves, (dob, ds))
    return leaves, backward, forward_backward


def time_events(fn, reps=10):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def run(args):
    import numpy as np
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".carry"))
    import check as fwd

    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, B, T in ROWS:
            if args.rows and not re.search(args.rows, f"{name} {B} {T}"):
                continue
            kind, H, HV, _ = SPECS[name]
            ins = fwd.make_inputs(kind, B, T, K, V, "bf16", False, gen, False, H, HV)
            # q, k normalised by the caller, as the fla functions' users do.
            ins["q"], ins["k"] = fwd.l2norm(ins["q"]), fwd.l2norm(ins["k"])
            ins["q"], ins["k"] = ins["q"].bfloat16().float(), ins["k"].bfloat16().float()
            do = torch.randn(B, T, HV, V, generator=gen, device="cuda").bfloat16().float()
            ds = 0.1 * torch.randn(B, HV, K, V, generator=gen, device="cuda")
            names = [n for n in fwd.INPUT_ORDER if n in ins]
            lib = os.path.join(args.libdir, name + ".so")
            call = [args.runner, lib, "--entry", name + "_backward"]
            for n, x in [(n, ins[n]) for n in names] + [("do", do), ("ds", ds)]:
                path = os.path.join(work, n + ".npy")
                np.save(path, x.cpu().numpy().astype(np.float32))
                call += ["--input", path]
            outs = [os.path.join(work, "d" + n + ".npy") for n in names]
            for o in outs:
                call += ["--output", o]
            cmd = call + ["--graph", "--bench", "10", "--warmup", "2",
                          "--json", os.path.join(work, "t.json")]
            row = {"spec": name, "kind": kind, "B": B, "T": T, "H": H, "HV": HV, "K": K, "V": V}
            if args.kernel_times:
                # One more call, each launch timed alone (the runtime's
                # LINATTN_KERNEL_TIMES): "kernel NAME grid ... block ...: MS ms".
                timed = subprocess.run(call, capture_output=True, text=True, timeout=600,
                                       env=dict(os.environ, LINATTN_KERNEL_TIMES="1"))
                row["kernel_ms"] = [line for line in timed.stderr.splitlines()
                                    if line.startswith("kernel ")]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                row["linattn_error"] = (proc.stderr or proc.stdout)[-300:]
            else:
                with open(os.path.join(work, "t.json")) as f:
                    timing = json.load(f)
                row["linattn_backward_ms"] = timing.get("median_ms", timing.get("ms"))
            scale = K ** -0.5
            try:
                leaves, bwd, fwd_bwd = fla_backward(kind, ins, do, ds, scale)
                row["fla_backward_ms"] = round(time_events(bwd), 4)
                row["fla_forward_backward_ms"] = round(time_events(fwd_bwd), 4)
            except Exception as exc:  # a faulting fla kernel: reported, not fatal
                row["fla_error"] = str(exc)[-300:]
            if args.errors_T and T == args.errors_T and "linattn_error" not in row:
                d = {n: ins[n].double().requires_grad_() for n in names}
                o, s = fwd.reference(kind, d["q"], d["k"], d["v"], d.get("gate"), d.get("beta"),
                                     d["initial_state"], scale, None)
                loss = (o * do.double()).sum() + (s * ds.double()).sum()
                ref = torch.autograd.grad(loss, [d[n] for n in names])
                row["linattn_rel_err"] = {
                    n: fwd.rel_err(torch.from_numpy(np.load(p)).cuda().double(), r)
                    for n, p, r in zip(names, outs, ref)}
                if "fla_error" not in row:
                    got = bwd()
                    order = {"q": 0, "k": 1, "v": 2}
                    if kind == "gated_delta":
                        order.update(gate=3, beta=4, initial_state=5)
                    else:
                        order.update(beta=3, initial_state=4)
                    row["fla_rel_err"] = {n: fwd.rel_err(got[order[n]].double(), r)
                                          for n, r in zip(names, ref)}
            if "linattn_backward_ms" in row and "fla_backward_ms" in row:
                row["fla_over_linattn"] = round(row["fla_backward_ms"] / row["linattn_backward_ms"], 3)
            rows.append(row)
            print(json.dumps(row), flush=True)
    report = {"device": torch.cuda.get_device_name(0), "rows": rows}
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("variants")
    v.add_argument("spec_dir")
    r = sub.add_parser("run")
    r.add_argument("--libdir", required=True)
    r.add_argument("--runner", required=True)
    r.add_argument("--json", required=True)
    r.add_argument("--rows", default="")
    r.add_argument("--errors-T", type=int, default=1024)
    r.add_argument("--kernel-times", action="store_true",
                   help="also each kernel's time in one call (LINATTN_KERNEL_TIMES)")
    args = p.parse_args()
    if args.cmd == "variants":
        variants(args.spec_dir)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
