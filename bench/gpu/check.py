#!/usr/bin/env python3
"""GPU correctness of compiled LinAttn specs against an fp64 reference.

Runs on the GPU machine (PyTorch there). For every library
LIBDIR/<name>_<dtype>_<K>_<strategy>.so, or LIBDIR/mm_<spec id>.so of the
model-shape matrix (bench/gpu/model_shapes.py: its spec's heads, grouped
value heads, head sizes, type and {qk_l2norm}; strategy auto)
(made by bench/gpu/device.sh from bench/gpu/prepare.sh's objects) and every
B in {1, 4}, T in {1, 63, 64, 65, 1000, 4096, 16384}, it draws fresh random
inputs (H = HV = 8, or N for a library <family>_hN_...; non-zero initial
state; strong gates and beta near 1 with nearly parallel keys at the
lengths of --hard-T, 4096 unless given), runs linattn-gpu-run with every device
allocation poisoned (LINATTN_POISON_ALLOCS=1: NaN bytes, so an unwritten
output element fails the check), and compares o and the final state to a
float64 reference computed on the GPU by the loop below (written separately
from the compiler and from test/lib's numpy oracle). Tolerance: 5e-3 relative
error for 16-bit (bf16, f16) inputs, 1e-4 for f32. A library named
<family>_l2norm_... (the family's spec with {qk_l2norm}) gets q and k rows
of random length, and the reference normalises them. Writes a JSON report.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_shapes import SPECS, library_name  # noqa: E402

KINDS = {"linear_attention": "identity", "retnet": "constant_decay",
         "simple_gla": "scalar_gate", "gla": "key_gate", "deltanet": "delta",
         "gated_deltanet": "gated_delta", "deltanet_negeig": "negeig_delta", "kda": "kda"}
DELTA = {"delta", "gated_delta", "negeig_delta", "kda"}
KEY_GATES = {"key_gate", "kda"}
# A library <family>_l2norm_... is the family's spec with {qk_l2norm}: q and
# k are normalised inside the call, x / sqrt(sum(x^2) + eps).
L2NORM_SUFFIX, L2NORM_EPS = "_l2norm", 1e-6


def l2norm(x):
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + L2NORM_EPS)


def parse_library(path):
    """(entry, kind, dtype, K, strategy, qk_l2norm, H) of a library named
    <family>[_l2norm][_h<H>]_<dtype>_<K>_<strategy>.so (H = HV = 8 without
    _h<H>; <K> may be KxV, head_dims); exits naming the file when the family is unknown."""
    stem = os.path.basename(path)[:-len(".so")]
    name, dtype, kdim, strategy = stem.rsplit("_", 3)
    heads = re.search(r"_h(\d+)$", name)
    H = int(heads.group(1)) if heads else 8
    if heads:
        name = name[:heads.start()]
    qk_l2norm = name.endswith(L2NORM_SUFFIX)
    if qk_l2norm:
        name = name[:-len(L2NORM_SUFFIX)]
    if name not in KINDS:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {path}: no family {name!r} (expected "
                 f"<family>[_l2norm]_<dtype>_<K>_<strategy>.so, family one of {sorted(KINDS)})")
    return name, KINDS[name], dtype, head_dims(path)[0], strategy, qk_l2norm, H


def library_case(path):
    """(entry, kind, dtype, K, V, strategy, qk_l2norm, H, HV) of a library:
    a model-shape library mm_<spec id>.so (bench/gpu/model_shapes.py's spec,
    compiled with the default strategy, auto) or one named as parse_library
    says (HV = H)."""
    stem = os.path.basename(path)[:-len(".so")]
    for spec_id, s in SPECS.items():
        if library_name(spec_id) == stem:
            return (s["family"], s["kind"], s["dtype"], s["K"], s["V"], "auto", s["qk_l2norm"],
                    s["H"], s["HV"])
    name, kind, dtype, K, strategy, qk_l2norm, H = parse_library(path)
    return name, kind, dtype, K, head_dims(path)[1], strategy, qk_l2norm, H, H


def head_dims(path):
    """(K, V) of a library named as parse_library says, its <K> token K
    (V = K) or KxV (K != V)."""
    kdim = os.path.basename(path)[:-len(".so")].rsplit("_", 3)[2]
    K, _, V = kdim.partition("x")
    return int(K), int(V or K)


def retnet_gammas(hv):
    return [1.0 - 2.0 ** (-5 - h) for h in range(hv)]


def reference(kind, q, k, v, g, beta, s0, scale, gammas):
    """float64 loop over t: S = M_t S + b_t k v^T, o_t = scale S^T q_t
    (kda: the state decays per key before the delta rule meets it)."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    rep = HV // H
    q = q.repeat_interleave(rep, dim=2)
    k = k.repeat_interleave(rep, dim=2)
    S = s0.clone()
    o = torch.empty(B, T, HV, V, dtype=torch.float64, device=q.device)
    gam = torch.tensor(gammas, dtype=torch.float64, device=q.device) if gammas else None
    for t in range(T):
        kt, vt, qt = k[:, t], v[:, t], q[:, t]
        write = vt
        if kind == "kda":
            S = torch.exp(g[:, t])[..., None] * S
        if kind in DELTA:
            bt = beta[:, t]
            c = 2 * bt if kind == "negeig_delta" else bt
            u = torch.einsum("bhk,bhkv->bhv", kt, S)
            S = S - c[..., None, None] * kt[..., None] * u[:, :, None, :]
            write = bt[..., None] * vt
        if kind == "constant_decay":
            S = gam[None, :, None, None] * S
        elif kind in ("scalar_gate", "gated_delta"):
            S = torch.exp(g[:, t])[..., None, None] * S
        elif kind == "key_gate":
            S = torch.exp(g[:, t])[..., None] * S
        S = S + kt[..., None] * write[:, :, None, :]
        o[:, t] = scale * torch.einsum("bhkv,bhk->bhv", S, qt)
    return o, S


def make_inputs(kind, B, T, K, V, dtype, hard, gen, unnormalised_qk=False, H=8, HV=None):
    """Inputs as float32 tensors holding values exact in `dtype`; with
    `unnormalised_qk`, q and k rows of random length in [0.5, 4) (for specs
    that normalise them). HV = H unless given (a multiple of H)."""
    HV = HV or H
    dev = "cuda"
    def rnd(*shape):
        return torch.randn(*shape, generator=gen, device=dev)
    q = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1)
    if hard:
        base = torch.nn.functional.normalize(rnd(B, 1, H, K), dim=-1)
        k = torch.nn.functional.normalize(base + 1e-2 * rnd(B, T, H, K), dim=-1)
    else:
        k = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1)
    if unnormalised_qk:
        q = q * (0.5 + 3.5 * torch.rand(B, T, H, 1, generator=gen, device=dev))
        k = k * (0.5 + 3.5 * torch.rand(B, T, H, 1, generator=gen, device=dev))
    v = rnd(B, T, HV, V) * (3.0 if hard else 1.0)
    narrow = {"bf16": torch.bfloat16, "f16": torch.float16}.get(dtype)
    cast = (lambda x: x.to(narrow).float()) if narrow else (lambda x: x)
    q, k, v = cast(q), cast(k), cast(v)
    ins = {"q": q, "k": k, "v": v}
    if kind in ("scalar_gate", "gated_delta", "key_gate", "kda"):
        shape = (B, T, HV, K) if kind in KEY_GATES else (B, T, HV)
        if hard:
            ins["gate"] = -5.0 - 15.0 * torch.rand(*shape, generator=gen, device=dev)
        else:
            ins["gate"] = torch.nn.functional.logsigmoid(rnd(*shape))
    if kind in DELTA:
        if hard:
            ins["beta"] = 0.97 + 0.03 * torch.rand(B, T, HV, generator=gen, device=dev)
        else:
            ins["beta"] = torch.sigmoid(rnd(B, T, HV))
    ins["initial_state"] = 0.1 * rnd(B, HV, K, V)
    return ins


# The specs' argument order (the inputs each kind has, in this order).
INPUT_ORDER = ("q", "k", "v", "gate", "beta", "initial_state")


def runner_command(runner, lib, entry, ins, work):
    """linattn-gpu-run's command line for `ins` (written as float32 .npy in
    the spec's argument order under `work`), and its two output paths."""
    cmd = [runner, lib, "--entry", entry]
    for n in INPUT_ORDER:
        if n in ins:
            path = os.path.join(work, n + ".npy")
            np.save(path, ins[n].cpu().numpy().astype(np.float32))
            cmd += ["--input", path]
    outs = [os.path.join(work, "o.npy"), os.path.join(work, "s.npy")]
    for o in outs:
        cmd += ["--output", o]
    return cmd, outs


def rel_err(x, ref):
    return (torch.linalg.norm(x - ref) / torch.linalg.norm(ref).clamp_min(1e-30)).item()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--libdir", required=True)
    p.add_argument("--runner", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--T", default="1,63,64,65,1000,4096,16384")
    p.add_argument("--B", default="1,4")
    p.add_argument("--hard-T", default="4096",
                   help="lengths at which the inputs are hard (strong gates, beta near 1, "
                        "nearly parallel keys)")
    p.add_argument("--only", default="", help="run only the libraries whose name this regex matches")
    args = p.parse_args()
    seed = int.from_bytes(os.urandom(4), "little")
    gen = torch.Generator(device="cuda").manual_seed(seed)
    Ts = [int(x) for x in args.T.split(",")]
    Bs = [int(x) for x in args.B.split(",")]
    hard_Ts = {int(x) for x in args.hard_T.split(",")}
    libs = sorted(f for f in os.listdir(args.libdir) if f.endswith(".so"))
    rows, failures = [], 0
    env = dict(os.environ, LINATTN_POISON_ALLOCS="1")
    with tempfile.TemporaryDirectory() as work:
        for lib in libs:
            stem = lib[:-3]
            if args.only and not re.search(args.only, stem):
                continue
            name, kind, dtype, K, V, strategy, qk_l2norm, H, HV = library_case(lib)
            tol = 5e-3 if dtype in ("bf16", "f16") else 1e-4
            for B in Bs:
                for T in Ts:
                    hard = T in hard_Ts
                    ins = make_inputs(kind, B, T, K, V, dtype, hard, gen, qk_l2norm, H, HV)
                    cmd, outs = runner_command(args.runner, os.path.join(args.libdir, lib),
                                               name, ins, work)
                    t0 = time.time()
                    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
                    row = {"lib": stem, "kind": kind, "strategy": strategy, "dtype": dtype, "K": K, "V": V, "H": H,
                           "HV": HV, "B": B, "T": T, "hard": hard, "seed": seed, "tol": tol}
                    if proc.returncode != 0:
                        row.update(status="FAIL", error=proc.stderr.strip()[-400:])
                    else:
                        o = torch.from_numpy(np.load(outs[0])).cuda().double()
                        s = torch.from_numpy(np.load(outs[1])).cuda().double()
                        d = {n: x.double() for n, x in ins.items()}
                        if qk_l2norm:
                            d["q"], d["k"] = l2norm(d["q"]), l2norm(d["k"])
                        gammas = retnet_gammas(HV) if kind == "constant_decay" else None
                        ro, rs = reference(kind, d["q"], d["k"], d["v"], d.get("gate"),
                                           d.get("beta"), d["initial_state"], K ** -0.5, gammas)
                        unwritten = int(torch.isnan(o).sum().item() + torch.isnan(s).sum().item())
                        eo, es = rel_err(o, ro), rel_err(s, rs)
                        ok = unwritten == 0 and eo <= tol and es <= tol and np.isfinite([eo, es]).all()
                        row.update(rel_err_o=eo, rel_err_state=es, nan_or_unwritten=unwritten,
                                   status="OK" if ok else "FAIL")
                    row["seconds"] = round(time.time() - t0, 2)
                    failures += row["status"] != "OK"
                    rows.append(row)
                    print(f"{stem:38s} B={B} T={T:5d} hard={int(hard)} "
                          f"o={row.get('rel_err_o', float('nan')):.2e} "
                          f"state={row.get('rel_err_state', float('nan')):.2e} {row['status']}"
                          + (f"  {row.get('error', '')[:200]}" if row["status"] != "OK" else ""),
                          flush=True)
    report = {"seed": seed, "device": torch.cuda.get_device_name(0),
              "cases": len(rows), "failures": failures, "rows": rows}
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    print(f"{len(rows) - failures} passed, {failures} failed (seed={seed})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
