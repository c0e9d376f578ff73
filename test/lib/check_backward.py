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
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep test/lib free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_common as common  # noqa: E402
import linattn_grad_ref as gref  # noqa: E402
import linattn_ref as ref  # noqa: E402

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
    common.add_case_arguments(p, dtype_help="dtype of q, k, v, o and do")
    p.add_argument("--tol", type=float, default=None,
                   help="max rel. error of every gradient (default 1e-4 f32, 1e-2 bf16/f16)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    kind, dtype = args.family, args.dtype
    B, T, H, HV, K, V = args.B, args.T, args.H, args.HV, args.K, args.V
    seed = common.seed_of(args)
    tol = args.tol if args.tol is not None else (1e-4 if dtype == "f32" else 1e-2)
    desc = common.describe(args, seed, prefix="backward ")

    work = common.Workdir(args, desc, prefix="linattn_check_bwd_")
    workdir, fail = work.path, work.fail

    # --- inputs and cotangents ---
    rng = np.random.default_rng(seed)
    inp, decay, scale = common.make_case_inputs(args, rng)
    do, ds = gref.make_cotangents(B, T, HV, K, V, rng)
    do = ref.round_to(dtype, do)  # do has v's element type
    ds = ref.round_to("f32", ds)

    # --- spec ---
    func_name = f"check_{kind}"
    spec_path = os.path.join(workdir, "spec.mlir")
    common.write_case_spec(spec_path, args, func_name, decay, scale)

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
    why = common.run_runner(cmd)
    if why:
        return fail(why)

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
    line = f"{desc} " + " ".join(f"rel_err_{g}={e:.1e}" for g, e in errs.items()) + f" tol={common.fmt_tol(tol)}"
    return work.finish(line, ok, problems)


if __name__ == "__main__":
    sys.exit(main())
