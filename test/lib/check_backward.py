#!/usr/bin/env python3
"""End-to-end check of the backward pass of one linattn.recurrence configuration.

Writes the forward MLIR spec (linattn_ref.write_spec, function check_KIND,
dynamic B and T), random inputs (linattn_ref.make_inputs) and cotangents
(linattn_grad_ref.make_cotangents), runs

    linattn-run SPEC --entry check_KIND_backward
        --input q.npy --input k.npy --input v.npy [--input gate.npy] [--input beta.npy]
        --input s0.npy --input do.npy --input ds.npy
        --output dq.npy --output dk.npy --output dv.npy [--output dgate.npy] [--output dbeta.npy]
        --output ds0.npy

(linattn-run derives the backward function when asked for the entry
NAME_backward: its arguments are the forward's plus do [B,T,HV,V] in v's
element type and ds [B,HV,K,V] f32; its results are the gradients of
L = sum(do * o) + sum(ds * S_T) with respect to each forward argument, in the
same order and shapes), and compares every gradient with the float64
reference (linattn_grad_ref.reference_backward) by relative Frobenius error.
Exit 0 if every error is <= tol and every gradient is finite and correctly
shaped, else 1.

As in check_recurrence.py, for bf16/f16 specs q, k, v (and the cotangent do,
which has v's element type) are rounded to that dtype before being saved and
before being given to the reference, so the reference sees exactly the
values the kernel sees.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True  # keep test/lib free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import linattn_grad_ref as gref  # noqa: E402
import linattn_ref as ref  # noqa: E402

GATE_DTYPE = "f32"
BETA_DTYPE = "f32"

# (input name, input file, gradient name, gradient file) in argument order.
ARGS = (
    ("q", "q.npy", "dq", "dq.npy"),
    ("k", "k.npy", "dk", "dk.npy"),
    ("v", "v.npy", "dv", "dv.npy"),
    ("gate", "gate.npy", "dgate", "dgate.npy"),
    ("beta", "beta.npy", "dbeta", "dbeta.npy"),
    ("initial_state", "s0.npy", "ds0", "ds0.npy"),
)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--linattn-run", required=True, metavar="PATH", help="the linattn-run runner binary")
    p.add_argument("--family", required=True, choices=sorted(ref.KINDS), help="transition kind")
    p.add_argument("--dtype", default="f32", choices=["f32", "bf16", "f16"], help="dtype of q, k, v, o and do")
    for dim, default in (("B", 2), ("T", 63), ("H", 2), ("HV", 4), ("K", 16), ("V", 32)):
        p.add_argument(f"--{dim}", type=int, default=default, help=f"(default {default})")
    p.add_argument("--hard", action="store_true", help="hard inputs: strong gates, beta ~ 1, near-parallel keys")
    p.add_argument("--beta-one", action="store_true",
                   help="beta = 1 exactly on every token (delta kinds): M_t is a projection "
                        "(2 beta: a reflection)")
    p.add_argument("--no-init-state", action="store_true", help="zero initial state")
    p.add_argument("--qk-l2norm", action="store_true",
                   help="pass un-normalised q, k and set the qk_l2norm attribute")
    p.add_argument("--scale", type=float, default=None, help="scale attribute (default: none, i.e. K**-0.5)")
    p.add_argument("--seed", type=int, default=None, help="RNG seed (default: fresh random, printed)")
    p.add_argument("--tol", type=float, default=None,
                   help="max rel. error of every gradient (default 1e-4 f32, 1e-2 bf16/f16)")
    p.add_argument("--workdir", default=None, help="directory for temp files (default: a fresh temp dir, "
                   "removed on success)")
    p.add_argument("--extra-args", default="",
                   help="extra runner arguments, split with shlex (write --extra-args='--flag ...')")
    return p.parse_args(argv)


def fmt_tol(tol):
    s = f"{tol:.0e}"
    return s if float(s) == tol else f"{tol:.3e}"


def main(argv=None):
    args = parse_args(argv)
    kind, dtype = args.family, args.dtype
    B, T, H, HV, K, V = args.B, args.T, args.H, args.HV, args.K, args.V
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    tol = args.tol if args.tol is not None else (1e-4 if dtype == "f32" else 1e-2)

    desc = (f"backward family={kind} dtype={dtype} B={B} T={T} H={H} HV={HV} K={K} V={V} "
            f"hard={int(args.hard)} seed={seed}" + (" beta=1" if args.beta_one else ""))
    if args.no_init_state:
        desc += " init_state=0"
    if args.qk_l2norm:
        desc += " qk_l2norm=1"
    if args.scale is not None:
        desc += f" scale={args.scale!r}"

    own_workdir = args.workdir is None
    workdir = tempfile.mkdtemp(prefix="linattn_check_bwd_") if own_workdir else args.workdir
    os.makedirs(workdir, exist_ok=True)

    def fail(msg):
        print(f"{desc} FAIL: {msg}")
        print(f"  files kept in {workdir}")
        return 1

    # --- inputs and cotangents ---
    rng = np.random.default_rng(seed)
    inp = ref.make_inputs(kind, B, T, H, HV, K, V, rng, hard=args.hard,
                          init_state=not args.no_init_state, normalise=not args.qk_l2norm)
    for name in ("q", "k", "v"):
        inp[name] = ref.round_to(dtype, inp[name])
    if "gate" in inp:
        inp["gate"] = ref.round_to(GATE_DTYPE, inp["gate"])
    if "beta" in inp:
        if args.beta_one:
            inp["beta"] = np.ones_like(inp["beta"])
        inp["beta"] = ref.round_to(BETA_DTYPE, inp["beta"])
    do, ds = gref.make_cotangents(B, T, HV, K, V, rng)
    do = ref.round_to(dtype, do)  # do has v's element type
    ds = ref.round_to("f32", ds)
    decay = inp.get("decay")
    if decay is not None:
        decay = [float(np.float32(d)) for d in decay]  # the kernel sees f32 gammas
    scale = None if args.scale is None else float(np.float32(args.scale))  # f32 attribute

    # --- spec ---
    func_name = f"check_{kind}"
    spec_path = os.path.join(workdir, "spec.mlir")
    ref.write_spec(spec_path, kind, func_name, dtype, B, T, H, HV, K, V,
                   gate_dtype=GATE_DTYPE, beta_dtype=BETA_DTYPE, scale=scale,
                   qk_l2norm=args.qk_l2norm, decay=decay, dynamic_bt=True)

    cmd = [args.linattn_run, spec_path, "--entry", f"{func_name}_backward"]
    present = [a for a in ARGS if a[0] in inp]
    for name, fname, _, _ in present:
        path = os.path.join(workdir, fname)
        ref.save_npy(path, inp[name])
        cmd += ["--input", path]
    for arr, fname in ((do, "do.npy"), (ds, "ds.npy")):
        path = os.path.join(workdir, fname)
        ref.save_npy(path, arr)
        cmd += ["--input", path]
    out_paths = {}
    for _, _, gname, fname in present:
        path = os.path.join(workdir, fname)
        if os.path.exists(path):
            os.remove(path)
        out_paths[gname] = path
        cmd += ["--output", path]
    cmd += shlex.split(args.extra_args)

    # --- run ---
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return fail("runner timed out after 600 s: " + shlex.join(cmd))
    except OSError as e:
        return fail(f"could not start runner: {e}")
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        return fail(f"runner exited with {proc.returncode}: " + shlex.join(cmd))

    # --- reference ---
    want = gref.reference_backward(kind, inp["q"], inp["k"], inp["v"], gate=inp.get("gate"),
                                   beta=inp.get("beta"), initial_state=inp["initial_state"], do=do,
                                   ds=ds, scale=scale, qk_l2norm=args.qk_l2norm, decay=decay)

    # --- compare ---
    got = {}
    for gname, path in out_paths.items():
        try:
            got[gname] = np.load(path)
        except (OSError, ValueError) as e:
            return fail(f"could not read runner output {gname} ({path}): {e}")
    problems = []
    for name, _, gname, _ in present:
        arr, shape = got[gname], np.shape(inp[name])
        if arr.shape != shape:
            problems.append(f"{gname} shape {arr.shape} != {shape}")
        if arr.dtype != np.float32:
            problems.append(f"{gname} dtype {arr.dtype} != float32")
        if not np.all(np.isfinite(arr)):
            problems.append(f"{gname} has {np.size(arr) - np.count_nonzero(np.isfinite(arr))} non-finite values")
    if any("shape" in p for p in problems):
        return fail("; ".join(problems))

    errs = {gname: ref.rel_err(got[gname], want[name]) for name, _, gname, _ in present}
    ok = not problems and all(e <= tol for e in errs.values())  # NaN errors compare False -> FAIL
    line = f"{desc} " + " ".join(f"rel_err_{g}={e:.1e}" for g, e in errs.items()) + f" tol={fmt_tol(tol)}"
    if ok:
        print(f"{line} OK")
        if own_workdir:
            shutil.rmtree(workdir, ignore_errors=True)
        return 0
    print(f"{line} FAIL" + (": " + "; ".join(problems) if problems else ""))
    print(f"  files kept in {workdir}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
