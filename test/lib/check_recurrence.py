#!/usr/bin/env python3
"""End-to-end check of one linattn.recurrence configuration.

Writes an MLIR spec (linattn_ref.write_spec) and random inputs
(linattn_ref.make_inputs), runs

    linattn-run SPEC --entry NAME --input q.npy ... --output o.npy --output s.npy

and compares o and the final state with the float64 oracle
(linattn_ref.reference) by relative Frobenius error.  Exit 0 if both errors
are <= tol and everything is finite and correctly shaped, else 1.

For bf16/f16 specs the inputs (q, k, v; gate/beta only when their dtype is
16-bit) are rounded to that dtype before being saved and before being given
to the oracle, so the oracle sees exactly the values the kernel sees.
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
import linattn_ref as ref  # noqa: E402

GATE_DTYPE = "f32"
BETA_DTYPE = "f32"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--linattn-run", required=True, metavar="PATH", help="the linattn-run runner binary")
    p.add_argument("--family", required=True, choices=sorted(ref.KINDS), help="transition kind")
    p.add_argument("--dtype", default="f32", choices=["f32", "bf16", "f16"], help="dtype of q, k, v and o")
    for dim, default in (("B", 2), ("T", 63), ("H", 2), ("HV", 4), ("K", 16), ("V", 32)):
        p.add_argument(f"--{dim}", type=int, default=default, help=f"(default {default})")
    p.add_argument("--hard", action="store_true", help="hard inputs: strong gates, beta ~ 1, near-parallel keys")
    p.add_argument("--beta-one", action="store_true",
                   help="beta = 1 exactly on every token (delta kinds): M_t is a projection "
                        "(2 beta: a reflection), the hardest case for the UT solve")
    p.add_argument("--no-init-state", action="store_true", help="zero initial state")
    p.add_argument("--qk-l2norm", action="store_true",
                   help="pass un-normalised q, k and set the qk_l2norm attribute")
    p.add_argument("--scale", type=float, default=None, help="scale attribute (default: none, i.e. K**-0.5)")
    p.add_argument("--seed", type=int, default=None, help="RNG seed (default: fresh random, printed)")
    p.add_argument("--tol", type=float, default=None, help="max rel. error (default 1e-5 f32, 1e-2 bf16/f16)")
    p.add_argument("--workdir", default=None, help="directory for temp files (default: a fresh temp dir, "
                   "removed on success)")
    p.add_argument("--linattn-opt", default=None, metavar="PATH",
                   help="with --pre-passes: the linattn-opt that runs them")
    p.add_argument("--pre-passes", default="",
                   help="linattn-opt arguments (split with shlex) run on the spec before linattn-run "
                        "takes it, e.g. algorithm passes whose output the runner then lowers")
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
    tol = args.tol if args.tol is not None else (1e-5 if dtype == "f32" else 1e-2)

    desc = (f"family={kind} dtype={dtype} B={B} T={T} H={H} HV={HV} K={K} V={V} "
            f"hard={int(args.hard)} seed={seed}" + (" beta=1" if args.beta_one else ""))
    if args.no_init_state:
        desc += " init_state=0"
    if args.qk_l2norm:
        desc += " qk_l2norm=1"
    if args.scale is not None:
        desc += f" scale={args.scale!r}"

    own_workdir = args.workdir is None
    workdir = tempfile.mkdtemp(prefix="linattn_check_") if own_workdir else args.workdir
    os.makedirs(workdir, exist_ok=True)

    def fail(msg):
        print(f"{desc} FAIL: {msg}")
        print(f"  files kept in {workdir}")
        return 1

    # --- inputs ---
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
    if args.pre_passes:
        if not args.linattn_opt:
            return fail("--pre-passes needs --linattn-opt")
        prepared = os.path.join(workdir, "prepared.mlir")
        pre = [args.linattn_opt, spec_path, *shlex.split(args.pre_passes), "-o", prepared]
        proc = subprocess.run(pre, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            return fail(f"linattn-opt exited with {proc.returncode}: " + shlex.join(pre) +
                        "\n" + proc.stderr[-2000:])
        spec_path = prepared

    cmd = [args.linattn_run, spec_path, "--entry", func_name]
    for name in ("q", "k", "v", "gate", "beta", "initial_state"):
        if name in inp:
            path = os.path.join(workdir, f"{name}.npy")
            ref.save_npy(path, inp[name])
            cmd += ["--input", path]
    o_path = os.path.join(workdir, "o.npy")
    s_path = os.path.join(workdir, "s.npy")
    for path in (o_path, s_path):
        if os.path.exists(path):
            os.remove(path)
    cmd += ["--output", o_path, "--output", s_path]
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

    # --- oracle ---
    o_ref, s_ref = ref.reference(kind, inp["q"], inp["k"], inp["v"], gate=inp.get("gate"),
                                 beta=inp.get("beta"), initial_state=inp["initial_state"],
                                 scale=scale, qk_l2norm=args.qk_l2norm, decay=decay)

    # --- compare ---
    try:
        o = np.load(o_path)
        s = np.load(s_path)
    except (OSError, ValueError) as e:
        return fail(f"could not read runner outputs: {e}")
    problems = []
    for name, arr, want in (("o", o, (B, T, HV, V)), ("state", s, (B, HV, K, V))):
        if arr.shape != want:
            problems.append(f"{name} shape {arr.shape} != {want}")
        if arr.dtype != np.float32:
            problems.append(f"{name} dtype {arr.dtype} != float32")
        if not np.all(np.isfinite(arr)):
            problems.append(f"{name} has {np.size(arr) - np.count_nonzero(np.isfinite(arr))} non-finite values")
    if any("shape" in p for p in problems):
        return fail("; ".join(problems))

    e_o = ref.rel_err(o, o_ref)
    e_s = ref.rel_err(s, s_ref)
    ok = not problems and e_o <= tol and e_s <= tol  # NaN errors compare False -> FAIL
    line = f"{desc} rel_err_o={e_o:.1e} rel_err_state={e_s:.1e} tol={fmt_tol(tol)}"
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
