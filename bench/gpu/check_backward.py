#!/usr/bin/env python3
"""GPU correctness of the derived backward (linattn-compile --backward).

Two halves, one file:

  bench/gpu/check_backward.py variants SPEC_DIR
      (on the MLIR machine, through bench/gpu/prepare.sh as LINATTN_VARIANTS)
      writes one spec per kind x {f32, bf16} (and Gated DeltaNet with
      {qk_l2norm}), H = 2, HV = 4 (shared q/k heads), K = V = 32, dynamic B
      and T, plus bf16 specs at other head sizes (NAME_k<K>v<V>: the
      tensor-core backward's key blocks of 64 and 32 and its largest tiles;
      with {qk_l2norm} too, whose f32 normalised keys the kernels split;
      f32 at 128 x 128 for four kinds),
      and specs with one value head a q/k head (NAME_hv2: H = HV = 2,
      whose chunk_grad returns dq and dk in the inputs' type), and prints `NAME SPEC --backward`: each object then exports NAME and
      NAME_backward.

  bench/gpu/check_backward.py check --libdir D --runner R --json OUT
      (on the GPU machine, through bench/gpu/device.sh backward) runs every
      library's NAME_backward with linattn-gpu-run, device allocations
      poisoned (NaN bytes: an unwritten gradient element fails), and
      compares each gradient with torch.autograd through bench/gpu/check.py's
      float64 loop (written apart from the compiler and from test/lib's numpy
      references). Tolerance per gradient (relative Frobenius error): 1e-4 for
      f32 specs, 5e-3 for bf16. Each library also runs once at B = 1,
      T = --memory-T with --memory: the device memory its backward
      allocates beyond its results, beside what the loop lowering's
      allocations add up to (scratch_bytes below) where the backward is the
      adjoint's loop (negeig's f32 spec; the others take the chunked
      backward).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

H, HV, KDIM, VDIM = 2, 4, 32, 32
KDIM_DEFAULT, VDIM_DEFAULT, HV_DEFAULT = KDIM, VDIM, HV
# bf16 specs at other head sizes (K, V): kinds with row gates or none, the
# delta rules, whose chunk_grad keys are a tensor-core kernel, and the
# per-key gates, whose reverse pass is. Gated DeltaNet's take chunk_grad's
# eight-warp blocks at their extremes: 32-key blocks (96 x 64, 96 x 128)
# and 32 value columns, two 8-column tiles a column half (128 x 32); KDA's
# WY kernel takes them at K = 64 and 128 (one and two pair-sum passes) and
# four warps at the default K = 32; negeig's (a split W) at 32 and 128.
# Heads above 128 (multiples of 64; the reverse pass at one input stage at
# 256, chunk_grad's WY share by slabs and its keys by key block): Gated
# DeltaNet at 192 x 192, 256 x 256 and K != V both ways, DeltaNet (no
# gates) at 256 x 256, negeig (a split W) at 192 x 192, 128 x 256 and 256
# x 256 (its recomputed state pass in one input stage there, as Gated
# DeltaNet's with {qk_l2norm} at 256 x 256: bench/NOTES.md ws2).
HEAD_SIZES = {"gated_deltanet": ((128, 128), (96, 64), (64, 128), (96, 128), (128, 32),
                                 (256, 256), (192, 192), (256, 128), (128, 256)),
              "deltanet": ((128, 128), (256, 256)),
              "deltanet_negeig": ((128, 128), (192, 192), (128, 256), (256, 256)),
              "simple_gla": ((128, 128),), "linear_attention": ((64, 64),),
              "gla": ((128, 128), (64, 128)), "kda": ((128, 128), (64, 128))}
# bf16 specs with {qk_l2norm} at other head sizes: the delta kinds take it
# factored (q and k bf16 as they come, their reciprocal norms in the
# coefficients and on dO's rows: every kernel the plain kind takes, plus
# r and s), GLA's normalised keys stay f32, split.
L2NORM_HEAD_SIZES = {"gated_deltanet": ((128, 128), (64, 128), (192, 192), (256, 256)),
                     "deltanet": ((64, 64), (128, 128)),
                     "deltanet_negeig": ((128, 128),),
                     "kda": ((128, 128),)}
# The kinds whose default-size specs are also checked with {qk_l2norm}: the
# delta kinds (factored) and the per-key gates (GLA: the recomputed UT
# transform takes the normalised keys split, bench/NOTES.md f4).
L2NORM_KINDS = ("delta", "gated_delta", "negeig_delta", "key_gate", "kda")
# Specs with one value head a q/k head (HV = H, name suffix _hv2), whose
# chunk_grad returns dq and dk in q's and k's type (no qk_grad): every
# family in bf16 (the tensor-core backward) at the default size and at the
# head sizes of the training benchmark (bench_backward.py).
ONE_VALUE_HEAD_SIZES = {"gated_deltanet": ((128, 128),), "deltanet": ((128, 128),),
                        "simple_gla": ((128, 128),), "linear_attention": ((64, 64),),
                        "gla": ((128, 128),), "kda": ((128, 128),)}
# ... and with {qk_l2norm} (factored: qk_grad still runs, for the norms'
# share), bf16.
L2NORM_ONE_VALUE_HEAD_SIZES = {"gated_deltanet": ((128, 128),), "kda": ((128, 128),)}
# f32 specs at the training benchmark's head size: their chunked backward
# (the recomputed forward's split kernels, then the reverse pass and
# chunk_grad as loops) against f32's 1e-4 where the states grow largest.
F32_HEAD_SIZES = {"gated_deltanet": ((128, 128),), "deltanet": ((128, 128),),
                  "simple_gla": ((128, 128),), "kda": ((128, 128),)}
FAMILIES = {"linear_attention": "identity", "retnet": "constant_decay",
            "simple_gla": "scalar_gate", "gla": "key_gate", "deltanet": "delta",
            "gated_deltanet": "gated_delta", "deltanet_negeig": "negeig_delta", "kda": "kda"}


def variants(spec_dir):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "lib"))
    import linattn_ref as ref
    os.makedirs(spec_dir, exist_ok=True)
    for family, kind in FAMILIES.items():
        for dtype in ("f32", "bf16"):
            for l2norm in ((False, True) if kind in L2NORM_KINDS else (False,)):
                name = f"{family}{'_l2norm' if l2norm else ''}_{dtype}"
                path = os.path.join(spec_dir, name + ".mlir")
                decay = ref.retnet_decay(HV) if kind == "constant_decay" else None
                ref.write_spec(path, kind, name, dtype, 1, 1, H, HV, KDIM, VDIM, decay=decay,
                               qk_l2norm=l2norm)
                print(name, path, "--backward")
        for l2norm, dtype, sizes in ((False, "bf16", HEAD_SIZES), (True, "bf16", L2NORM_HEAD_SIZES),
                                     (False, "f32", F32_HEAD_SIZES)):
            for K, V in sizes.get(family, ()):
                name = f"{family}{'_l2norm' if l2norm else ''}_{dtype}_k{K}v{V}"
                path = os.path.join(spec_dir, name + ".mlir")
                ref.write_spec(path, kind, name, dtype, 1, 1, H, HV, K, V, qk_l2norm=l2norm)
                print(name, path, "--backward")
        for size in [None] + list(ONE_VALUE_HEAD_SIZES.get(family, ())):
            K, V = size or (KDIM, VDIM)
            name = f"{family}_bf16{f'_k{K}v{V}' if size else ''}_hv{H}"
            path = os.path.join(spec_dir, name + ".mlir")
            decay = ref.retnet_decay(H) if kind == "constant_decay" else None
            ref.write_spec(path, kind, name, "bf16", 1, 1, H, H, K, V, decay=decay)
            print(name, path, "--backward")
        for K, V in L2NORM_ONE_VALUE_HEAD_SIZES.get(family, ()):
            name = f"{family}_l2norm_bf16_k{K}v{V}_hv{H}"
            path = os.path.join(spec_dir, name + ".mlir")
            ref.write_spec(path, kind, name, "bf16", 1, 1, H, H, K, V, qk_l2norm=True)
            print(name, path, "--backward")


def scratch_bytes(kind, B, T, HV, K, V):
    """The intermediates the adjoint's loop lowering allocates (docs/backward.md):
    checkpoints every C = ceil(sqrt(T)) tokens and C + 1 segment states per
    (b, hv), the token's key, query (and per-key decay) rows, the u and z
    columns, and f32 dq, dk per value head."""
    import math
    C = max(1, math.ceil(math.sqrt(T)))
    NC = -(-T // C)
    rows = 3 if kind in ("key_gate", "kda") else 2
    floats = B * HV * ((NC + C + 1) * K * V + rows * K + 2 * V) + 2 * B * T * HV * K
    return 4 * floats


def check(args):
    import numpy as np
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import check as fwd

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    gen = torch.Generator(device="cuda").manual_seed(seed)
    Ts = [int(x) for x in args.T.split(",")]
    hard_Ts = {int(x) for x in args.hard_T.split(",")}
    rows, memory, failures = [], [], 0
    env = dict(os.environ, LINATTN_POISON_ALLOCS="1")
    libs = sorted(f for f in os.listdir(args.libdir) if f.endswith(".so"))
    with tempfile.TemporaryDirectory() as work:
        for lib in libs:
            name = lib[:-3]
            match = re.fullmatch(r"(.+?)(_l2norm)?_(f32|bf16)(?:_k(\d+)v(\d+))?(?:_hv(\d+))?", name)
            if not match or match.group(1) not in FAMILIES:
                continue
            if args.only and not re.search(args.only, name):
                continue
            kind, l2norm, dtype = FAMILIES[match.group(1)], bool(match.group(2)), match.group(3)
            KDIM, VDIM = ((int(match.group(4)), int(match.group(5))) if match.group(4)
                          else (KDIM_DEFAULT, VDIM_DEFAULT))
            HV = int(match.group(6)) if match.group(6) else HV_DEFAULT
            tol = 1e-4 if dtype == "f32" else 5e-3
            for T in Ts:
                B, hard = args.B, T in hard_Ts
                ins = fwd.make_inputs(kind, B, T, KDIM, VDIM, dtype, hard, gen, l2norm, H, HV)
                narrow = {"bf16": torch.bfloat16}.get(dtype)
                do = torch.randn(B, T, HV, VDIM, generator=gen, device="cuda")
                if narrow:
                    do = do.to(narrow).float()
                ds = 0.1 * torch.randn(B, HV, KDIM, VDIM, generator=gen, device="cuda")
                names = [n for n in fwd.INPUT_ORDER if n in ins]
                cmd = [args.runner, os.path.join(args.libdir, lib), "--entry", name + "_backward"]
                for n, x in [(n, ins[n]) for n in names] + [("do", do), ("ds", ds)]:
                    path = os.path.join(work, n + ".npy")
                    np.save(path, x.cpu().numpy().astype(np.float32))
                    cmd += ["--input", path]
                outs = [os.path.join(work, "d" + n + ".npy") for n in names]
                for o in outs:
                    cmd += ["--output", o]
                t0 = time.time()
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
                row = {"lib": name, "kind": kind, "dtype": dtype, "qk_l2norm": l2norm, "B": B, "T": T,
                       "H": H, "HV": HV, "K": KDIM, "V": VDIM, "hard": hard, "seed": seed, "tol": tol}
                if proc.returncode != 0:
                    row.update(status="FAIL", error=proc.stderr.strip()[-400:])
                else:
                    # The reference: autograd through the float64 loop.
                    d = {n: ins[n].double().requires_grad_() for n in names}
                    q, k = d["q"], d["k"]
                    if l2norm:
                        q, k = fwd.l2norm(q), fwd.l2norm(k)
                    gammas = fwd.retnet_gammas(HV) if kind == "constant_decay" else None
                    o, s = fwd.reference(kind, q, k, d["v"], d.get("gate"), d.get("beta"),
                                         d["initial_state"], KDIM ** -0.5, gammas)
                    loss = (o * do.double()).sum() + (s * ds.double()).sum()
                    # At T = 0 only the initial state reaches the loss: the
                    # rest of the gradients are empty (allow_unused: None).
                    grads = [torch.zeros_like(d[n]) if g is None else g for n, g in zip(
                        names, torch.autograd.grad(loss, [d[n] for n in names], allow_unused=True))]
                    errs, unwritten = {}, 0
                    for n, path, ref in zip(names, outs, grads):
                        got = torch.from_numpy(np.load(path)).cuda().double()
                        unwritten += int(torch.isnan(got).sum().item())
                        errs[n] = fwd.rel_err(got, ref)
                    ok = unwritten == 0 and all(np.isfinite(e) and e <= tol for e in errs.values())
                    row.update(rel_err={n: e for n, e in errs.items()}, nan_or_unwritten=unwritten,
                               status="OK" if ok else "FAIL")
                row["seconds"] = round(time.time() - t0, 2)
                failures += row["status"] != "OK"
                rows.append(row)
                errs = " ".join(f"d{n}={e:.1e}" for n, e in row.get("rel_err", {}).items())
                print(f"{name:28s} T={T:5d} hard={int(hard)} {errs} {row['status']}"
                      + (f"  {row.get('error', '')[:200]}" if row["status"] != "OK" else ""), flush=True)
            # Memory: one call at B = 1, T = --memory-T.
            T = args.memory_T
            if T <= 0:
                continue
            ins = fwd.make_inputs(kind, 1, T, KDIM, VDIM, dtype, False, gen, l2norm, H, HV)
            names = [n for n in fwd.INPUT_ORDER if n in ins]
            ins["do"] = torch.randn(1, T, HV, VDIM, generator=gen, device="cuda")
            ins["ds"] = torch.zeros(1, HV, KDIM, VDIM, device="cuda")
            cmd = [args.runner, os.path.join(args.libdir, lib), "--entry", name + "_backward", "--memory"]
            for n in names + ["do", "ds"]:
                path = os.path.join(work, n + ".npy")
                np.save(path, ins[n].cpu().numpy().astype(np.float32))
                cmd += ["--input", path]
            for n in names:
                cmd += ["--output", os.path.join(work, "d" + n + ".npy")]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            found = re.search(r"results=(\d+) intermediates_peak=(\d+)", proc.stdout)
            # linattn-to-nvvm's default strategy: the chunked backward where
            # the forward's chunked kernels fit (every spec here), but for
            # f32 with negeig's transitions the adjoint's loop, whose
            # allocations are known.
            form = "loop" if dtype == "f32" and kind == "negeig_delta" else "chunked"
            predicted = scratch_bytes(kind, 1, T, HV, KDIM, VDIM) if form == "loop" else None
            memory.append({"lib": name, "form": form, "B": 1, "T": T, "H": H, "HV": HV, "K": KDIM, "V": VDIM,
                           "results_bytes": int(found.group(1)) if found else None,
                           "intermediates_peak_bytes": int(found.group(2)) if found else None,
                           "predicted_intermediates_bytes": predicted,
                           "error": None if found else (proc.stderr or proc.stdout)[-300:]})
            print(f"{name:28s} memory B=1 T={T}: " + (
                f"results {int(found.group(1))} B, intermediates peak {int(found.group(2))} B "
                + (f"(loop lowering's allocations {predicted} B)" if predicted else "(chunked backward)")
                if found else "FAIL " + memory[-1]["error"]),
                flush=True)
            failures += not found
    report = {"seed": seed, "device": torch.cuda.get_device_name(0), "cases": len(rows),
              "failures": failures, "rows": rows, "memory": memory}
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    print(f"{len(rows) - failures} passed, {failures} failed (seed={seed})")
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    v = sub.add_parser("variants")
    v.add_argument("spec_dir")
    c = sub.add_parser("check")
    c.add_argument("--libdir", required=True)
    c.add_argument("--runner", required=True)
    c.add_argument("--json", required=True)
    c.add_argument("--T", default="1,17,64,65,1000")
    c.add_argument("--B", type=int, default=2)
    c.add_argument("--hard-T", default="1000",
                   help="lengths at which the inputs are hard (strong gates, beta near 1, "
                        "nearly parallel keys)")
    c.add_argument("--only", default="", help="run only the libraries whose name this regex matches")
    c.add_argument("--memory-T", type=int, default=4096, help="T of the memory run (0: none)")
    c.add_argument("--seed", type=int, default=None,
                   help="the inputs' seed (default: fresh; the same seed draws the same inputs, "
                        "to compare two builds' gradients on them)")
    args = p.parse_args()
    if args.what == "variants":
        variants(args.spec_dir)
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
