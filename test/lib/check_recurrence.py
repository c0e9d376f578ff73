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
import subprocess
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep test/lib free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common as common  # noqa: E402
import linattn_ref as ref  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_case_arguments(p)
    p.add_argument("--tol", type=float, default=None, help="max rel. error (default 1e-5 f32, 1e-2 bf16/f16)")
    p.add_argument("--linattn-opt", default=None, metavar="PATH",
                   help="with --pre-passes: the linattn-opt that runs them")
    p.add_argument("--pre-passes", default="",
                   help="linattn-opt arguments (split with shlex) run on the spec before linattn-run "
                        "takes it, e.g. algorithm passes whose output the runner then lowers")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    kind, dtype = args.family, args.dtype
    B, T, H, HV, K, V = args.B, args.T, args.H, args.HV, args.K, args.V
    seed = common.seed_of(args)
    tol = args.tol if args.tol is not None else (1e-5 if dtype == "f32" else 1e-2)
    desc = common.describe(args, seed)

    work = common.Workdir(args, desc, prefix="linattn_check_")
    workdir, fail = work.path, work.fail

    # --- inputs ---
    rng = np.random.default_rng(seed)
    inp, decay, scale = common.make_case_inputs(args, rng)

    # --- spec ---
    func_name = f"check_{kind}"
    spec_path = os.path.join(workdir, "spec.mlir")
    common.write_case_spec(spec_path, args, func_name, decay, scale)
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
    why = common.run_runner(cmd)
    if why:
        return fail(why)

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
    line = f"{desc} rel_err_o={e_o:.1e} rel_err_state={e_s:.1e} tol={common.fmt_tol(tol)}"
    return work.finish(line, ok, problems)


if __name__ == "__main__":
    sys.exit(main())
