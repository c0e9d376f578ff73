#!/usr/bin/env python3
"""Whether a LinAttn library and flash-linear-attention compute the same thing.

    fla_agree.py --runner R --lib LIBDIR/kda_bf16_128_chunked.so --op kda \
        [--B 2] [--T 1000,4096] [--json OUT]

Runs on the GPU machine. Draws the inputs bench/gpu/check.py draws (bf16
q, k, v; per-key log gates; beta; a non-zero initial state; hard inputs at
T = 4096), runs the library (linattn-gpu-run) and fla's op on them, and
prints each one's relative error against the float64 reference of check.py
and their distance from each other: the two agree where both errors are
small and of one size. fla is carried in .carry/fla and never committed.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", ".carry"))
from check import make_inputs, parse_library, reference, rel_err, runner_command  # noqa: E402


def fla_call(op, ins, scale):
    """fla's forward on bf16 q, k, v (the values the library reads)."""
    bf = torch.bfloat16
    q, k, v = (ins[n].to(bf) for n in ("q", "k", "v"))
    s0 = ins["initial_state"].float()
    if op == "kda":
        from fla.ops.kda import chunk_kda
        o, s = chunk_kda(q, k, v, ins["gate"].float(), ins["beta"].float(), scale=scale,
                         initial_state=s0, output_final_state=True)
    elif op == "gated_delta":
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule
        o, s = chunk_gated_delta_rule(q, k, v, ins["gate"].float(), ins["beta"].float(),
                                      scale=scale, initial_state=s0, output_final_state=True)
    else:
        raise SystemExit(f"unknown op {op}")
    return o.double(), s.double()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runner", required=True)
    p.add_argument("--lib", required=True)
    p.add_argument("--op", required=True, choices=("kda", "gated_delta"))
    p.add_argument("--B", type=int, default=2)
    p.add_argument("--T", default="1000,4096")
    p.add_argument("--json", default="")
    args = p.parse_args()
    name, kind, dtype, K, _, qk_l2norm, H = parse_library(args.lib)
    if dtype != "bf16" or qk_l2norm:
        sys.exit("fla_agree.py: takes a bf16 library without qk_l2norm")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for T in (int(t) for t in args.T.split(",")):
            gen = torch.Generator(device="cuda").manual_seed(T)
            hard = T == 4096
            ins = make_inputs(kind, args.B, T, K, K, dtype, hard, gen, False, H)
            cmd, outs = runner_command(args.runner, args.lib, name, ins, work)
            subprocess.run(cmd, check=True, capture_output=True)
            lo = torch.from_numpy(np.load(outs[0])).cuda().double()
            ls = torch.from_numpy(np.load(outs[1])).cuda().double()
            d = {n: x.double() for n, x in ins.items()}
            ro, rs = reference(kind, d["q"], d["k"], d["v"], d.get("gate"), d.get("beta"),
                               d["initial_state"], K ** -0.5, None)
            fo, fs = fla_call(args.op, ins, K ** -0.5)
            row = {"lib": os.path.basename(args.lib), "op": args.op, "B": args.B, "T": T, "H": H,
                   "hard": hard,
                   "linattn_rel_err_o": rel_err(lo, ro), "linattn_rel_err_state": rel_err(ls, rs),
                   "fla_rel_err_o": rel_err(fo, ro), "fla_rel_err_state": rel_err(fs, rs),
                   "linattn_vs_fla_o": rel_err(lo, fo), "linattn_vs_fla_state": rel_err(ls, fs)}
            rows.append(row)
            print(json.dumps({k: (round(v, 8) if isinstance(v, float) else v)
                              for k, v in row.items()}), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
