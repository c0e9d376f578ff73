#!/usr/bin/env python3
"""Self-test of the float64 gradient reference in linattn_grad_ref.py (no compiler needed).

For every kind in linattn_ref.KINDS, on tiny sizes (B=2, H=1, HV=2, K=3, V=2;
T in {1, 3, 5}), with qk_l2norm off and on, a non-default scale on some cases,
a non-zero initial state, and per kind one case with hard inputs
(make_inputs(..., hard=True)), one with H=2, HV=4 and one hard case with
T=8, K=4, V=3 and beta = 1 exactly (delta kinds): compare
reference_backward with central finite differences

    dL/dx_i ~ (L(x + h e_i) - L(x - h e_i)) / (2 h)

of L = sum(do * o) + sum(ds * S_T) computed with the forward oracle
linattn_ref.reference in float64, perturbing every element of every
differentiable input (q, k, v, gate, beta, initial_state).  Every gradient's
relative Frobenius error (linattn_ref.rel_err) must be <= TOL.

Steps (STEP): h = 1e-6 for q, k and beta.  L is linear in v and in the
initial state, so central differences are exact there for any h: h = 1
avoids cancellation.  L is affine in each a = exp(g) (one gate element at a
time), so (L(g + h) - L(g - h)) / (2 h) = dL/dg * sinh(h) / h exactly; the
gate uses h = 1e-2 and divides by sinh(h) / h.  With h = 1e-6 on the gate,
hard inputs (beta ~ 1, nearly parallel keys: (I - beta k k^T) nearly
annihilates the previous state, so the gate gradients are ~1e-5 while
|L| ~ 10) gave relative errors up to 1e-4 from cancellation alone, and the
initial state (seen through gates down to e^-20) up to 7e-5.

Negative checks: on each case, a deliberately wrong gradient (dk negated; dv
scaled by 1 + 1e-4) must fail the same comparison, so the tolerance is tight
enough to catch a wrong sign or a missing term; and on negeig_delta, the
gradients computed as for delta (rank-1 coefficient 1 instead of 2) must fail.

Prints one line per case and 'grad oracle selfcheck OK'; exits 1 on failure.
"""

import os
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # keep test/lib free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import linattn_grad_ref as gref  # noqa: E402
import linattn_ref as ref  # noqa: E402

TOL = 1e-6  # observed finite-difference errors are ~2e-9 and below
STEP = {"q": 1e-6, "k": 1e-6, "beta": 1e-6, "gate": 1e-2, "v": 1.0, "initial_state": 1.0}
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAILED:", msg)


def finite_differences(kind, inp, do, ds, scale, qk_l2norm, names):
    """Central differences of gref.loss w.r.t. each input in names, float64 (steps: STEP)."""
    base = {n: np.array(inp[n], dtype=np.float64) for n in ("q", "k", "v", "gate", "beta", "initial_state")
            if n in inp}

    def L(args):
        return gref.loss(kind, do, ds, args["q"], args["k"], args["v"], gate=args.get("gate"),
                         beta=args.get("beta"), initial_state=args["initial_state"], scale=scale,
                         qk_l2norm=qk_l2norm, decay=inp.get("decay"))

    out = {}
    for name in names:
        x = base[name]
        h = STEP[name]
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            x0 = x[idx]
            x[idx] = x0 + h
            lp = L(base)
            x[idx] = x0 - h
            lm = L(base)
            x[idx] = x0
            g[idx] = (lp - lm) / (2.0 * h)
        if name == "gate":
            g /= np.sinh(h) / h  # exact for L affine in exp(g) (see the module docstring)
        out[name] = g
    return out


def run_case(kind, *, T, seed, B=2, H=1, HV=2, K=3, V=2, qk_l2norm=False, scale=None, hard=False,
             beta_one=False):
    rng = np.random.default_rng(seed)
    inp = ref.make_inputs(kind, B, T, H, HV, K, V, rng, hard=hard, init_state=True,
                          normalise=not qk_l2norm)
    if beta_one and "beta" in inp:
        inp["beta"] = np.ones_like(inp["beta"])
    do, ds = gref.make_cotangents(B, T, HV, K, V, rng)
    names = [n for n in ("q", "k", "v", "gate", "beta", "initial_state") if n in inp]

    grads = gref.reference_backward(kind, inp["q"], inp["k"], inp["v"], gate=inp.get("gate"),
                                    beta=inp.get("beta"), initial_state=inp["initial_state"], do=do,
                                    ds=ds, scale=scale, qk_l2norm=qk_l2norm, decay=inp.get("decay"))
    fd = finite_differences(kind, inp, do, ds, scale, qk_l2norm, names)

    tag = (f"{kind} B={B} T={T} H={H} HV={HV} K={K} V={V} l2norm={int(qk_l2norm)} "
           f"scale={scale} hard={int(hard)}" + (" beta=1" if beta_one and "beta" in inp else ""))
    check(sorted(grads) == sorted(names), f"{tag}: gradient keys {sorted(grads)} != {sorted(names)}")
    errs = {}
    for n in names:
        g = grads.get(n)
        if g is None:
            continue
        check(g.shape == np.shape(inp[n]) and g.dtype == np.float64,
              f"{tag}: d{n} shape/dtype {g.shape} {g.dtype}, want {np.shape(inp[n])} float64")
        check(np.linalg.norm(fd[n]) > 0, f"{tag}: finite-difference d{n} is identically zero")
        errs[n] = ref.rel_err(g, fd[n])
        check(errs[n] <= TOL, f"{tag}: rel_err d{n} = {errs[n]:.3e} > {TOL:.0e}")

    # Negative checks: wrong gradients must fail the comparison.
    bad_k = ref.rel_err(-grads["k"], fd["k"])
    bad_v = ref.rel_err(grads["v"] * (1.0 + 1e-4), fd["v"])
    check(not bad_k <= TOL, f"{tag}: negated dk passes (rel_err {bad_k:.3e})")
    check(not bad_v <= TOL, f"{tag}: dv * (1 + 1e-4) passes (rel_err {bad_v:.3e})")

    negatives = f"negated dk {bad_k:.1e}, dv*(1+1e-4) {bad_v:.1e}"
    wrong_ok = not bad_k <= TOL and not bad_v <= TOL
    if kind == "negeig_delta":
        as_delta = gref.reference_backward("delta", inp["q"], inp["k"], inp["v"], beta=inp["beta"],
                                           initial_state=inp["initial_state"], do=do, ds=ds,
                                           scale=scale, qk_l2norm=qk_l2norm)
        bad_c = max(ref.rel_err(as_delta[n], fd[n]) for n in ("k", "beta", "initial_state"))
        check(not bad_c <= TOL, f"{tag}: gradients with rank-1 coefficient 1 pass (rel_err {bad_c:.3e})")
        negatives += f", as delta {bad_c:.1e}"
        wrong_ok = wrong_ok and not bad_c <= TOL

    worst = max(errs.values())
    line = " ".join(f"{n}={e:.1e}" for n, e in errs.items())
    status = "OK" if worst <= TOL and wrong_ok else "FAIL"
    print(f"{tag}: {line} ({negatives}) {status}")
    return worst


def main():
    start = time.time()
    seed = 4321
    worst = 0.0
    for kind in ref.KINDS:
        for T in (1, 3, 5):
            for qk_l2norm in (False, True):
                seed += 1
                scale = 0.7 if (T + int(qk_l2norm)) % 2 else None  # default K**-0.5 on some
                worst = max(worst, run_case(kind, T=T, seed=seed, qk_l2norm=qk_l2norm, scale=scale))
        seed += 1
        worst = max(worst, run_case(kind, T=5, seed=seed, hard=True, scale=1.3))
        seed += 1
        worst = max(worst, run_case(kind, T=3, seed=seed, H=2, HV=4, qk_l2norm=True, scale=0.5))
        seed += 1
        worst = max(worst, run_case(kind, T=8, seed=seed, K=4, V=3, hard=True, beta_one=True))

    # Argument validation of the cotangents.
    rng = np.random.default_rng(0)
    inp = ref.make_inputs("delta", 1, 2, 1, 1, 3, 2, rng)
    try:
        gref.reference_backward("delta", inp["q"], inp["k"], inp["v"], beta=inp["beta"],
                                do=np.zeros((1, 2, 1, 3)))
        check(False, "reference_backward accepted a wrongly shaped do")
    except ValueError:
        pass

    elapsed = time.time() - start
    print(f"worst rel_err {worst:.1e} (tol {TOL:.0e}), {elapsed:.1f} s")
    if failures:
        print(f"grad oracle selfcheck FAILED ({len(failures)} failures)")
        return 1
    print("grad oracle selfcheck OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
