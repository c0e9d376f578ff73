#!/usr/bin/env python3
"""One training step of a small DeltaNet layer through LinAttn's derived
backward, beside flash-linear-attention's, both against float64 autograd.

Runs on the GPU machine. The layer: q, k, v = x W_q, x W_k, x W_v (bf16 into
the recurrence), beta = sigmoid(x W_b), o = DeltaNet(q, k, v, beta) with
q and k L2-normalised in the op, loss = sum(o * target). LinAttn's recurrence
is the library's `deltanet_train` (bench/gpu/train_step.py spec writes its
spec; linattn-compile --backward) called through examples/torch/linattn_torch.py;
fla's is chunk_delta_rule(..., use_qk_l2norm_in_kernel=True). The reference
is the same layer in float64 (q, k, v rounded to bf16 as the kernels see
them) with check.py's loop. Reports the relative error of every parameter's
gradient and of x's for LinAttn and fla, and writes JSON.

    python3 bench/gpu/train_step.py spec OUT.mlir           # the spec (MLIR machine)
    python3 bench/gpu/train_step.py run --lib L.so --json J  # the step (GPU machine)
"""

import argparse
import json
import os
import sys

B, T, H, K, D = 2, 256, 4, 64, 256


def write_spec(path):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "test", "lib"))
    import linattn_ref as ref
    ref.write_spec(path, "delta", "deltanet_train", "bf16", 1, 1, H, H, K, K, qk_l2norm=True)


def run(args):
    import torch
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    sys.path.insert(0, os.path.join(here, "..", "..", "examples", "torch"))
    sys.path.insert(0, os.path.join(here, "..", "..", ".carry"))  # fla, never committed
    import check as fwd
    import linattn_torch

    torch.manual_seed(args.seed)
    dev = "cuda"
    weights = {n: torch.randn(D, H * K if n != "b" else H, device=dev, dtype=torch.float64) / D ** 0.5
               for n in ("q", "k", "v", "b")}
    x0 = torch.randn(B, T, D, device=dev, dtype=torch.float64)
    target = torch.randn(B, T, H, K, device=dev, dtype=torch.float64)

    def step(recurrence, dtype):
        """Gradients of the loss w.r.t. x and every weight, in float64."""
        w = {n: p.clone().to(dtype).requires_grad_() for n, p in weights.items()}
        x = x0.clone().to(dtype).requires_grad_()
        proj = {n: (x @ w[n]) for n in ("q", "k", "v")}
        # bf16 operands, as the kernels take them (the reference rounds too).
        q, k, v = (proj[n].to(torch.bfloat16).view(B, T, H, K) for n in ("q", "k", "v"))
        beta = torch.sigmoid(x @ w["b"]).to(torch.bfloat16)
        o = recurrence(q, k, v, beta)
        loss = (o.double() * target).sum()
        grads = torch.autograd.grad(loss, [x] + [w[n] for n in ("q", "k", "v", "b")])
        return dict(zip(["x", "W_q", "W_k", "W_v", "W_b"], [g.double() for g in grads]))

    def reference(q, k, v, beta):
        q, k, v, beta = (t.double() for t in (q, k, v, beta))
        s0 = torch.zeros(B, H, K, K, device=dev, dtype=torch.float64)
        o, _ = fwd.reference("delta", fwd.l2norm(q), fwd.l2norm(k), v, None, beta, s0, K ** -0.5, None)
        return o

    lib = linattn_torch.Library(os.path.abspath(args.lib))
    deltanet = lib.function("deltanet_train")

    def linattn(q, k, v, beta):
        s0 = torch.zeros(B, H, K, K, device=dev, dtype=torch.float32)
        o, _ = deltanet(q, k, v, beta.float(), s0)
        return o

    ref = step(reference, torch.float64)
    results = {"shape": dict(B=B, T=T, H=H, K=K, V=K, D=D), "seed": args.seed,
               "device": torch.cuda.get_device_name(0)}
    got = step(linattn, torch.float32)
    results["linattn"] = {n: fwd.rel_err(got[n], ref[n]) for n in ref}
    try:
        from fla.ops.delta_rule import chunk_delta_rule

        def fla(q, k, v, beta):
            o, _ = chunk_delta_rule(q, k, v, beta, scale=K ** -0.5, use_qk_l2norm_in_kernel=True)
            return o
        got = step(fla, torch.float32)
        results["fla"] = {n: fwd.rel_err(got[n], ref[n]) for n in ref}
    except Exception as e:  # fla absent or failing: say so beside LinAttn's
        results["fla"] = {"error": f"{type(e).__name__}: {e}"[:400]}
    for who in ("linattn", "fla"):
        r = results[who]
        print(who, " ".join(f"{n}={e:.2e}" for n, e in r.items()) if "error" not in r else r["error"])
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
    ok = all(e <= args.tol for e in results["linattn"].values())
    print("OK" if ok else f"FAIL: a LinAttn gradient is off by more than {args.tol}")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("spec")
    s.add_argument("path")
    r = sub.add_parser("run")
    r.add_argument("--lib", required=True)
    r.add_argument("--json", required=True)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--tol", type=float, default=1e-2)
    args = p.parse_args()
    if args.what == "spec":
        write_spec(args.path)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
