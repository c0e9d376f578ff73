#!/usr/bin/env python3
"""One training step of a small linear-attention layer through LinAttn's
derived backward, beside flash-linear-attention's, both against float64
autograd.

Runs on the GPU machine. The layers (LAYERS): q, k, v = x W_q, x W_k, x W_v
(bf16 into the recurrence); where the family has them, beta = sigmoid(x
W_b) and log gates g = logsigmoid(x W_g) (one a head, or one a key for the
per-key families); o = the recurrence (q and k L2-normalised in the op
where the layer says so); loss = sum(o * target). LinAttn's recurrence is
the library's `<layer>_train` (`train_step.py variants` lists the specs;
linattn-compile --backward) called through examples/torch/linattn_torch.py;
fla's is its chunk function for the family (its Hopper guard on the gated
backward bypassed, so that its gradients on this stack are reported). The
reference is the same layer in float64 (q, k, v and beta rounded to bf16 as
the kernels see them) with check.py's loop. Reports the relative error of
every parameter's gradient and of x's for LinAttn and fla, and writes JSON.

    LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/train_step.py variants" bench/gpu/prepare.sh .carry/train
    python3 bench/gpu/train_step.py run --lib D/<layer>_train.so --json J  # the step (GPU machine)
"""

import argparse
import json
import os
import sys

B, T, H, K, D = 2, 256, 4, 64, 256

# layer: (recurrence kind, gate per "head", per "key" or None, beta,
# q and k L2-normalised in the op). GLA's fla kernel has no in-kernel norm.
LAYERS = {
    "deltanet": ("delta", None, True, True),
    "gated_deltanet": ("gated_delta", "head", True, True),
    "gla": ("key_gate", "key", False, False),
    "kda": ("kda", "key", True, True),
}


def linattn_ref():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "test", "lib"))
    import linattn_ref as ref
    return ref


def variants(spec_dir):
    """Lines "NAME SPEC OPTIONS" for bench/gpu/prepare.sh: a layer's spec."""
    ref = linattn_ref()
    os.makedirs(spec_dir, exist_ok=True)
    for layer, (kind, _, _, l2) in LAYERS.items():
        name = f"{layer}_train"
        path = os.path.join(spec_dir, name + ".mlir")
        ref.write_spec(path, kind, name, "bf16", 1, 1, H, H, K, K, qk_l2norm=l2)
        print(name, path, "--backward")


def run(args):
    import torch
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    sys.path.insert(0, os.path.join(here, "..", "..", "examples", "torch"))
    sys.path.insert(0, os.path.join(here, "..", "..", ".carry"))  # fla, never committed
    import check as fwd
    import linattn_torch

    stem = os.path.basename(args.lib)[:-len(".so")]
    layer = stem[:-len("_train")] if stem.endswith("_train") else stem
    if layer not in LAYERS:
        raise SystemExit(f"{args.lib}: not a <layer>_train library ({', '.join(LAYERS)})")
    kind, gate, has_beta, l2 = LAYERS[layer]
    torch.manual_seed(args.seed)
    dev = "cuda"
    outs = {"q": H * K, "k": H * K, "v": H * K}
    if has_beta:
        outs["b"] = H
    if gate:
        outs["g"] = H if gate == "head" else H * K
    weights = {n: torch.randn(D, m, device=dev, dtype=torch.float64) / D ** 0.5
               for n, m in outs.items()}
    x0 = torch.randn(B, T, D, device=dev, dtype=torch.float64)
    target = torch.randn(B, T, H, K, device=dev, dtype=torch.float64)
    scale = K ** -0.5

    def step(recurrence, dtype):
        """Gradients of the loss w.r.t. x and every weight, in float64."""
        w = {n: p.clone().to(dtype).requires_grad_() for n, p in weights.items()}
        x = x0.clone().to(dtype).requires_grad_()
        # bf16 operands, as the kernels take them (the reference rounds too).
        q, k, v = ((x @ w[n]).to(torch.bfloat16).view(B, T, H, K) for n in ("q", "k", "v"))
        beta = torch.sigmoid(x @ w["b"]).to(torch.bfloat16) if has_beta else None
        g = None
        if gate:
            g = torch.nn.functional.logsigmoid(x @ w["g"])
            g = g.view(B, T, H) if gate == "head" else g.view(B, T, H, K)
        o = recurrence(q, k, v, g, beta)
        loss = (o.double() * target).sum()
        grads = torch.autograd.grad(loss, [x] + [w[n] for n in outs])
        return dict(zip(["x"] + [f"W_{n}" for n in outs], [t.double() for t in grads]))

    def reference(q, k, v, g, beta):
        q, k, v = (t.double() for t in (q, k, v))
        if l2:
            q, k = fwd.l2norm(q), fwd.l2norm(k)
        s0 = torch.zeros(B, H, K, K, device=dev, dtype=torch.float64)
        o, _ = fwd.reference(kind, q, k, v, g, None if beta is None else beta.double(),
                             s0, scale, None)
        return o

    lib = linattn_torch.Library(os.path.abspath(args.lib))
    fn = lib.function(stem)

    def linattn(q, k, v, g, beta):
        s0 = torch.zeros(B, H, K, K, device=dev, dtype=torch.float32)
        ins = [q, k, v] + ([g.float()] if g is not None else []) \
            + ([beta.float()] if beta is not None else [])
        o, _ = fn(*ins, s0)
        return o

    def fla(q, k, v, g, beta):
        import fla.ops.common.chunk_o as chunk_o
        chunk_o.TRITON_ABOVE_3_7_1 = True  # its Hopper guard, bypassed: its gradients reported
        g = None if g is None else g.float()
        beta = None if beta is None else beta.float()
        if kind == "delta":
            from fla.ops.delta_rule import chunk_delta_rule
            return chunk_delta_rule(q, k, v, beta, scale=scale, use_qk_l2norm_in_kernel=True)[0]
        if kind == "gated_delta":
            from fla.ops.gated_delta_rule import chunk_gated_delta_rule
            return chunk_gated_delta_rule(q, k, v, g, beta, scale=scale,
                                          use_qk_l2norm_in_kernel=True)[0]
        if kind == "key_gate":
            from fla.ops.gla import chunk_gla
            return chunk_gla(q, k, v, g, scale=scale)[0]
        from fla.ops.kda import chunk_kda
        return chunk_kda(q, k, v, g, beta, scale=scale, use_qk_l2norm_in_kernel=True)[0]

    ref = step(reference, torch.float64)
    results = {"layer": layer, "kind": kind, "qk_l2norm": l2,
               "shape": dict(B=B, T=T, H=H, K=K, V=K, D=D), "seed": args.seed,
               "device": torch.cuda.get_device_name(0)}
    got = step(linattn, torch.float32)
    results["linattn"] = {n: fwd.rel_err(got[n], ref[n]) for n in ref}
    def report(who):
        r = results[who]
        print(layer, who, r["error"] if "error" in r else
              " ".join(f"{n}={e:.2e}" for n, e in r.items()), flush=True)

    # Written before fla runs: its first call JIT-compiles and autotunes for
    # minutes (KDA's most), and a time limit must not take LinAttn's result.
    report("linattn")
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
    try:
        got = step(fla, torch.float32)
        results["fla"] = {n: fwd.rel_err(got[n], ref[n]) for n in ref}
    except Exception as e:  # fla absent or failing: say so beside LinAttn's
        results["fla"] = {"error": f"{type(e).__name__}: {e}"[:400]}
    report("fla")
    with open(args.json, "w") as f:
        json.dump(results, f, indent=1)
    ok = all(e <= args.tol for e in results["linattn"].values())
    print(layer, "OK" if ok else f"FAIL: a LinAttn gradient is off by more than {args.tol}")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    s = sub.add_parser("variants")
    s.add_argument("spec_dir")
    r = sub.add_parser("run")
    r.add_argument("--lib", required=True)
    r.add_argument("--json", required=True)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--tol", type=float, default=1e-2)
    args = p.parse_args()
    if args.what == "variants":
        variants(args.spec_dir)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
