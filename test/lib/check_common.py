"""What the end-to-end checkers (check_recurrence.py, check_backward.py)
share: the case options, the inputs they draw, the runner call.

A case is one linattn.recurrence configuration: kind, dtype, sizes, input
difficulty, initial state, qk_l2norm, scale. For bf16/f16 specs q, k and v
are rounded to that dtype before being saved and before being given to a
reference, so the reference sees exactly the values the kernel sees; gates
and beta are f32 (GATE_DTYPE, BETA_DTYPE), as are the specs' gate and beta.
"""

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


def add_case_arguments(p, dtype_help="dtype of q, k, v and o"):
    """The options that define a case, and --seed, --workdir, --extra-args."""
    p.add_argument("--linattn-run", required=True, metavar="PATH", help="the linattn-run runner binary")
    p.add_argument("--family", required=True, choices=sorted(ref.KINDS), help="transition kind")
    p.add_argument("--dtype", default="f32", choices=["f32", "bf16", "f16"], help=dtype_help)
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
    p.add_argument("--workdir", default=None, help="directory for temp files (default: a fresh temp dir, "
                   "removed on success)")
    p.add_argument("--extra-args", default="",
                   help="extra runner arguments, split with shlex (write --extra-args='--flag ...')")


def seed_of(args):
    return args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")


def describe(args, seed, prefix=""):
    """One line naming the case and its seed (printed with every result)."""
    desc = (f"{prefix}family={args.family} dtype={args.dtype} B={args.B} T={args.T} H={args.H} "
            f"HV={args.HV} K={args.K} V={args.V} hard={int(args.hard)} seed={seed}"
            + (" beta=1" if args.beta_one else ""))
    if args.no_init_state:
        desc += " init_state=0"
    if args.qk_l2norm:
        desc += " qk_l2norm=1"
    if args.scale is not None:
        desc += f" scale={args.scale!r}"
    return desc


def make_case_inputs(args, rng):
    """(inputs as make_inputs returns them, rounded as the kernel sees them;
    the f32 gammas of constant_decay or None; the f32 scale or None)."""
    inp = ref.make_inputs(args.family, args.B, args.T, args.H, args.HV, args.K, args.V, rng,
                          hard=args.hard, init_state=not args.no_init_state,
                          normalise=not args.qk_l2norm)
    for name in ("q", "k", "v"):
        inp[name] = ref.round_to(args.dtype, inp[name])
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
    return inp, decay, scale


def write_case_spec(path, args, func_name, decay, scale):
    """The forward spec of the case (dynamic B and T)."""
    ref.write_spec(path, args.family, func_name, args.dtype, args.B, args.T, args.H, args.HV,
                   args.K, args.V, gate_dtype=GATE_DTYPE, beta_dtype=BETA_DTYPE, scale=scale,
                   qk_l2norm=args.qk_l2norm, decay=decay, dynamic_bt=True)


def run_runner(cmd):
    """Runs the runner; None when it succeeded, else why not (its output is
    echoed to stderr when it exited non-zero)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "runner timed out after 600 s: " + shlex.join(cmd)
    except OSError as e:
        return f"could not start runner: {e}"
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        return f"runner exited with {proc.returncode}: " + shlex.join(cmd)
    return None


class Workdir:
    """The case's files: a fresh temporary folder, removed when the case
    passes, or --workdir, always kept; a failure names it."""

    def __init__(self, args, desc, prefix):
        self.desc = desc
        self.own = args.workdir is None
        self.path = tempfile.mkdtemp(prefix=prefix) if self.own else args.workdir
        os.makedirs(self.path, exist_ok=True)

    def join(self, name):
        return os.path.join(self.path, name)

    def fail(self, msg):
        """Prints the case, FAIL and why; returns the exit status 1."""
        print(f"{self.desc} FAIL: {msg}")
        print(f"  files kept in {self.path}")
        return 1

    def finish(self, line, ok, problems):
        """Prints the result line with OK or FAIL (and the problems); returns
        the exit status."""
        if ok:
            print(f"{line} OK")
            if self.own:
                shutil.rmtree(self.path, ignore_errors=True)
            return 0
        print(f"{line} FAIL" + (": " + "; ".join(problems) if problems else ""))
        print(f"  files kept in {self.path}")
        return 1


def fmt_tol(tol):
    s = f"{tol:.0e}"
    return s if float(s) == tol else f"{tol:.3e}"
