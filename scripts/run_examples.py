#!/usr/bin/env python3
"""Run every example spec in examples/ end to end and check it against the
float64 oracle.

    python3 scripts/run_examples.py [--build-dir build] [--B 2] [--T 256]
                                    [--seed N] [--hard] [--tol X] [--only NAME]

For each examples/*.mlir the script reads the spec itself: the one public
function's arguments and results, and its linattn.recurrence op (kind,
operand groups, `scale`, `qk_l2norm`, `decay`).  The head counts and head
dims (H, HV, K, V) and the dtypes come from the argument types; B and T
come from the command line where the spec leaves them dynamic.  The kind
must match the family table below, so a file cannot silently drift.

Inputs come from linattn_ref.make_inputs (q, k L2-normalised unless the
spec sets qk_l2norm; --hard: strong decay, beta near 1, nearly parallel
keys).  Each input is rounded to its argument's element type before it is
saved and before it is given to the oracle, exactly as
test/lib/check_recurrence.py does, so both see the same values.  Then

    linattn-run examples/X.mlir --input q.npy ... --output o.npy --output s.npy --time

and the relative Frobenius errors of o and of the final state against
linattn_ref.reference are compared with the tolerance (1e-2 for bf16/f16
q/k/v, 1e-5 for f32).  Prints one table row per example and exits 1 if any
example fails (or errors), 0 otherwise.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "lib"))
import linattn_ref as ref  # noqa: E402

# example file (without .mlir) -> the linattn.recurrence kind it must use.
FAMILIES = {
    "linear_attention": "identity",
    "retnet": "constant_decay",
    "simple_gla": "scalar_gate",
    "gla": "key_gate",
    "deltanet": "delta",
    "gated_deltanet": "gated_delta",
    "deltanet_negeig": "negeig_delta",
    "kda": "kda",
}

# What every example in FAMILIES states in its header comment; checked against
# the parsed spec so the files and this script cannot drift apart.
EXPECTED = {"dtype": "bf16", "B": None, "T": None, "H": 8, "HV": 8, "K": 128, "V": 128,
            "scale": None, "qk_l2norm": False}

MLIR_DTYPES = {"bf16": "bf16", "f16": "f16", "f32": "f32"}
GROUP_ORDER = ("q", "k", "v", "gate", "beta", "state")


class SpecError(Exception):
    pass


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def parse_tensor(ty, where):
    m = re.fullmatch(r"\s*tensor<([^>]*)>\s*", ty)
    if not m:
        raise SpecError(f"{where}: expected a tensor type, got {ty.strip()!r}")
    parts = m.group(1).split("x")
    dtype = parts[-1].strip()
    if dtype not in MLIR_DTYPES:
        raise SpecError(f"{where}: element type {dtype!r} is not bf16, f16 or f32")
    dims = []
    for d in parts[:-1]:
        d = d.strip()
        if d == "?":
            dims.append(None)
        elif d.isdigit():
            dims.append(int(d))
        else:
            raise SpecError(f"{where}: bad dimension {d!r} in {ty.strip()!r}")
    return dims, dtype


def split_top(s):
    """Split on commas that are not inside <>, () or []."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def display(path):
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def parse_spec(path, expected_kind=None):
    """Returns a dict describing the example's function and recurrence op."""
    text = strip_comments(open(path).read())
    funcs = re.findall(r"func\.func\s+(private\s+)?@(\w+)\s*\(", text)
    public = [name for priv, name in funcs if not priv]
    if len(public) != 1:
        raise SpecError(f"{path}: expected exactly one public function, found {public}")
    name = public[0]
    m = re.search(r"func\.func\s+@" + name + r"\s*\((.*?)\)\s*->\s*\((.*?)\)\s*\{", text, re.S)
    if not m:
        raise SpecError(f"{path}: cannot read the signature of @{name}")
    args = []
    for a in split_top(m.group(1)):
        am = re.fullmatch(r"\s*%(\w+)\s*:\s*(.*?)\s*", a, re.S)
        if not am:
            raise SpecError(f"{path}: cannot read argument {a.strip()!r}")
        args.append((am.group(1), parse_tensor(am.group(2), f"{path}: argument %{am.group(1)}")))
    results = [parse_tensor(r, f"{path}: result") for r in split_top(m.group(2))]

    ops = re.findall(r"linattn\.recurrence\s+(\w+)", text)
    if len(ops) != 1:
        raise SpecError(f"{path}: expected one linattn.recurrence op, found {len(ops)}")
    kind = ops[0]
    if kind not in ref.KINDS:
        raise SpecError(f"{path}: unknown kind {kind!r}")
    if expected_kind is not None and kind != expected_kind:
        raise SpecError(f"{path}: uses kind {kind!r} but this example is the {expected_kind!r} family")
    om = re.search(r"linattn\.recurrence\s+\w+\s+(.*?)(\{.*?\})?\s*:", text, re.S)
    groups = re.findall(r"(\w+)\(\s*%(\w+)\s*\)", om.group(1))
    attrs = om.group(2) or ""

    # Operand groups must be the function arguments, in order q,k,v,[gate],[beta],state.
    gate_rank, uses_beta, _ = ref.KINDS[kind]
    want_groups = ["q", "k", "v"] + (["gate"] if gate_rank else []) + (["beta"] if uses_beta else []) + ["state"]
    if [g for g, _ in groups] != want_groups:
        raise SpecError(f"{path}: operand groups {[g for g, _ in groups]} != {want_groups} for kind {kind}")
    if [ssa for _, ssa in groups] != [a for a, _ in args]:
        raise SpecError(f"{path}: the op's operands {[s for _, s in groups]} are not the function "
                        f"arguments {[a for a, _ in args]} in order")
    if len(results) != 2:
        raise SpecError(f"{path}: expected 2 results (o, final_state), found {len(results)}")
    types = {g: args[i][1] for i, (g, _) in enumerate(groups)}

    (qd, qdt), (kd, kdt), (vd, vdt) = types["q"], types["k"], types["v"]
    if len(qd) != 4 or len(vd) != 4 or qd != kd or qdt != kdt or qdt != vdt:
        raise SpecError(f"{path}: q, k must be [B,T,H,K] and v [B,T,HV,V] of one dtype")
    H, K, HV, V = qd[2], qd[3], vd[2], vd[3]
    if None in (H, K, HV, V):
        raise SpecError(f"{path}: H, HV, K, V must be static")
    spec = {
        "name": name, "kind": kind, "dtype": qdt, "H": H, "HV": HV, "K": K, "V": V,
        "B": qd[0], "T": qd[1], "arg_dtypes": [t[1] for _, t in args],
        "groups": [g for g, _ in groups], "results": results,
        "qk_l2norm": bool(re.search(r"\bqk_l2norm\b", attrs)), "scale": None, "decay": None,
    }
    sm = re.search(r"\bscale\s*=\s*([-+0-9.eE]+)", attrs)
    if sm:
        spec["scale"] = float(np.float32(float(sm.group(1))))
    dm = re.search(r"\bdecay\s*=\s*array<f32:([^>]*)>", attrs)
    if dm:
        spec["decay"] = [float(np.float32(float(x))) for x in dm.group(1).split(",")]
    return spec


def run_example(path, family, spec, args, rng, tmp):
    kind = spec["kind"]
    H, HV, K, V = spec["H"], spec["HV"], spec["K"], spec["V"]
    B = spec["B"] if spec["B"] is not None else args.B
    T = spec["T"] if spec["T"] is not None else args.T
    row = {"family": family, "file": display(path), "shape": (B, T, H, HV, K, V),
           "dtype": spec["dtype"], "e_o": float("nan"), "e_s": float("nan"), "ms": float("nan")}
    tol = args.tol if args.tol is not None else (1e-5 if spec["dtype"] == "f32" else 1e-2)
    row["tol"] = tol

    inp = ref.make_inputs(kind, B, T, H, HV, K, V, rng, hard=args.hard, init_state=True,
                          normalise=not spec["qk_l2norm"])
    names = {"state": "initial_state"}
    decay = spec["decay"]
    if kind == "constant_decay" and decay is None:
        raise SpecError(f"{path}: constant_decay without a decay attribute")
    cmd = [args.linattn_run, path, "--time"]
    for group, dt in zip(spec["groups"], spec["arg_dtypes"]):
        key = names.get(group, group)
        inp[key] = ref.round_to(dt, inp[key])
        p = os.path.join(tmp, f"{family}.{key}.npy")
        ref.save_npy(p, inp[key])
        cmd += ["--input", p]
    o_path, s_path = os.path.join(tmp, f"{family}.o.npy"), os.path.join(tmp, f"{family}.s.npy")
    cmd += ["--output", o_path, "--output", s_path]

    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        row["status"] = "ERROR"
        row["detail"] = f"linattn-run exited with {proc.returncode}: {shlex.join(cmd)}\n{proc.stderr.strip()}"
        return row
    m = re.search(r"time_ms=([-+0-9.eE]+)", proc.stdout)
    if m:
        row["ms"] = float(m.group(1))

    o_ref, s_ref = ref.reference(kind, inp["q"], inp["k"], inp["v"], gate=inp.get("gate"),
                                 beta=inp.get("beta"), initial_state=inp["initial_state"],
                                 scale=spec["scale"], qk_l2norm=spec["qk_l2norm"], decay=decay)
    o, s = np.load(o_path), np.load(s_path)
    problems = []
    for nm, arr, want in (("o", o, (B, T, HV, V)), ("state", s, (B, HV, K, V))):
        if arr.shape != want:
            problems.append(f"{nm} shape {arr.shape} != {want}")
        elif not np.all(np.isfinite(arr)):
            problems.append(f"{nm} has non-finite values")
    if not problems:
        row["e_o"], row["e_s"] = ref.rel_err(o, o_ref), ref.rel_err(s, s_ref)
        if not (row["e_o"] <= tol and row["e_s"] <= tol):
            problems.append("error above tolerance")
    row["status"] = "FAIL" if problems else "OK"
    if problems:
        row["detail"] = "; ".join(problems)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"),
                   help="build directory holding bin/linattn-run (default: <repo>/build)")
    p.add_argument("--linattn-run", default=None, help="runner binary (default: BUILD_DIR/bin/linattn-run)")
    p.add_argument("--examples-dir", default=os.path.join(ROOT, "examples"))
    p.add_argument("--B", type=int, default=2, help="batch size for dynamic B (default 2)")
    p.add_argument("--T", type=int, default=256, help="sequence length for dynamic T (default 256)")
    p.add_argument("--seed", type=int, default=None, help="RNG seed (default: fresh, printed)")
    p.add_argument("--hard", action="store_true",
                   help="hard inputs: strong decay, beta near 1, nearly parallel keys")
    p.add_argument("--tol", type=float, default=None, help="override the tolerance (1e-2 bf16/f16, 1e-5 f32)")
    p.add_argument("--only", action="append", default=None, metavar="NAME",
                   help="run only this example (file name without .mlir); repeatable")
    p.add_argument("--keep", action="store_true", help="keep the temporary .npy files")
    args = p.parse_args(argv)

    if args.linattn_run is None:
        args.linattn_run = os.path.join(args.build_dir, "bin", "linattn-run")
    if not os.access(args.linattn_run, os.X_OK):
        print(f"run_examples: error: {args.linattn_run} not found (build first: ninja -C build)", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")

    found = sorted(f[:-5] for f in os.listdir(args.examples_dir) if f.endswith(".mlir"))
    errors = [f"missing example {n}.mlir (family {k})" for n, k in FAMILIES.items() if n not in found]
    names = [n for n in FAMILIES if n in found] + [n for n in found if n not in FAMILIES]
    if args.only:
        unknown = [n for n in args.only if n not in found]
        if unknown:
            print(f"run_examples: error: no example(s) {unknown}; have {found}", file=sys.stderr)
            return 2
        names = [n for n in names if n in args.only]
        errors = []

    print(f"linattn-run: {args.linattn_run}")
    print(f"seed={seed} hard={int(args.hard)} B={args.B} T={args.T}")
    header = ("family", "example", "shape (B,T,H,HV,K,V)", "dtype", "rel_err_o", "rel_err_state",
              "tol", "run_ms", "status")
    widths = (14, 30, 26, 5, 9, 13, 7, 9, 6)
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    print(fmt.format(*header).rstrip())
    print(fmt.format(*("-" * w for w in widths)).rstrip())

    rng = np.random.default_rng(seed)
    tmp = tempfile.mkdtemp(prefix="linattn_examples_")
    rows, start = [], time.monotonic()
    for n in names:
        path = os.path.join(args.examples_dir, n + ".mlir")
        try:
            spec = parse_spec(path, FAMILIES.get(n))
            family = spec["kind"]
            if n in FAMILIES:
                drift = [f"{key}={spec[key]!r} (expected {want!r})" for key, want in EXPECTED.items()
                         if spec[key] != want]
                if family == "constant_decay" and spec["decay"] != ref.retnet_decay(spec["HV"]):
                    drift.append(f"decay={spec['decay']} (expected the RetNet gammas 1 - 2^(-5-h))")
                if spec["arg_dtypes"][3:] != ["f32"] * (len(spec["arg_dtypes"]) - 3):
                    drift.append(f"gate/beta/state dtypes {spec['arg_dtypes'][3:]} (expected f32)")
                if drift:
                    raise SpecError(f"{path}: " + "; ".join(drift))
            if spec["name"] != n:
                raise SpecError(f"{path}: public function is @{spec['name']}, expected @{n}")
            row = run_example(path, family, spec, args, rng, tmp)
        except SpecError as e:
            row = {"family": FAMILIES.get(n, "?"), "file": display(path), "shape": "?",
                   "dtype": "?", "e_o": float("nan"), "e_s": float("nan"), "tol": float("nan"),
                   "ms": float("nan"), "status": "ERROR", "detail": str(e)}
        rows.append(row)
        shape = row["shape"] if isinstance(row["shape"], str) else "(" + ",".join(map(str, row["shape"])) + ")"
        print(fmt.format(row["family"], row["file"], shape, row["dtype"], f"{row['e_o']:.2e}",
                         f"{row['e_s']:.2e}", f"{row['tol']:.0e}", f"{row['ms']:.2f}", row["status"]).rstrip(),
              flush=True)
    wall = time.monotonic() - start

    for row in rows:
        if "detail" in row:
            print(f"\n{row['family']} ({row['file']}): {row['status']}: {row['detail']}")
    for e in errors:
        print(f"\nERROR: {e}")
    if args.keep:
        print(f"\nfiles kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)

    bad = [r for r in rows if r["status"] != "OK"]
    n_ok = len(rows) - len(bad)
    print(f"\n{n_ok}/{len(rows)} examples OK, {len(bad)} failed"
          + (f", {len(errors)} missing" if errors else "") + f"; {wall:.1f} s (seed={seed})")
    if args.seed is None and (bad or errors):
        print(f"reproduce with: --seed {seed}" + (" --hard" if args.hard else ""))
    return 1 if bad or errors else 0


if __name__ == "__main__":
    sys.exit(main())
