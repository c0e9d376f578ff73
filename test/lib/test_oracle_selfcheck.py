#!/usr/bin/env python3
"""Self-test of the float64 oracle in linattn_ref.py (no compiler needed).

(a) identity / constant_decay / scalar_gate / key_gate: compare with the
    quadratic ("parallel") closed form
        o_t = scale * sum_{s<=t} sum_k q_t[k] k_s[k] D_{s,t}[k] v_s
              + scale * sum_k q_t[k] D_{-1,t}[k] S_0[k,:]
    with D_{s,t} = prod_{r=s+1..t} a_r (a_r the per-step decay, per key for
    key_gate), and likewise the final state.
(b) delta kinds: compare with a dense formulation that builds M_t as an
    explicit K x K matrix and iterates S = M @ S + b * outer(k, v).
(c) argument validation raises ValueError.
(d) bf16_round / f16_round spot checks, and write_spec syntax against the
    reference example.
Prints 'oracle selfcheck OK' and exits 0 when everything passes.
"""

import os
import sys
import tempfile

import numpy as np

sys.dont_write_bytecode = True  # keep test/lib free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import linattn_ref as ref  # noqa: E402

TOL = 1e-10
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAILED:", msg)


def _norm(x):
    # Independent L2 normalisation (loop-free but written separately from ref.l2norm).
    x = np.asarray(x, dtype=np.float64)
    return x / np.sqrt((x ** 2).sum(-1, keepdims=True) + 1e-6)


def closed_form(kind, inp, scale, qk_l2norm):
    """Quadratic form for the diagonal (non-delta) kinds, float64."""
    q = np.asarray(inp["q"], np.float64)
    k = np.asarray(inp["k"], np.float64)
    v = np.asarray(inp["v"], np.float64)
    S0 = np.asarray(inp["initial_state"], np.float64)
    if qk_l2norm:
        q, k = _norm(q), _norm(k)
    B, T, H, K = q.shape
    HV = v.shape[2]
    idx = np.array([hv // (HV // H) for hv in range(HV)])
    q, k = q[:, :, idx], k[:, :, idx]

    # log of the per-step decay a_t, shape [B,T,HV,K]
    if kind == "identity":
        loga = np.zeros((B, T, HV, K))
    elif kind == "constant_decay":
        g = np.broadcast_to(np.asarray(inp["decay"], np.float64), (HV,))
        loga = np.broadcast_to(np.log(g)[None, None, :, None], (B, T, HV, K))
    elif kind == "scalar_gate":
        loga = np.broadcast_to(np.asarray(inp["gate"], np.float64)[..., None], (B, T, HV, K))
    elif kind == "key_gate":
        loga = np.asarray(inp["gate"], np.float64)
    else:
        raise AssertionError(kind)
    L = np.cumsum(loga, axis=1)  # L_t = sum_{r<=t} log a_r; D_{s,t} = exp(L_t - L_s)
    E = L[:, :, None] - L[:, None, :]  # [B,t,s,HV,K]
    causal = (np.arange(T)[:, None] >= np.arange(T)[None, :])[None, :, :, None, None]
    W = np.where(causal, np.exp(np.where(causal, E, 0.0)), 0.0)
    o = scale * np.einsum("bthk,bshk,btshk,bshv->bthv", q, k, W, v)
    o += scale * np.einsum("bthk,bthk,bhkv->bthv", q, np.exp(L), S0)
    LT = L[:, -1]  # [B,HV,K]
    S = np.einsum("bshk,bshv->bhkv", np.exp(LT[:, None] - L) * k, v) + np.exp(LT)[..., None] * S0
    return o, S


def dense_form(kind, inp, scale, qk_l2norm):
    """Explicit K x K transition matrices, plain Python loops, float64."""
    q = np.asarray(inp["q"], np.float64)
    k = np.asarray(inp["k"], np.float64)
    v = np.asarray(inp["v"], np.float64)
    if qk_l2norm:
        q, k = _norm(q), _norm(k)
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    o = np.zeros((B, T, HV, V))
    Sfin = np.zeros((B, HV, K, V))
    for b in range(B):
        for hv in range(HV):
            h = hv // (HV // H)
            S = np.array(inp["initial_state"][b, hv], np.float64)
            for t in range(T):
                kt, qt, vt = k[b, t, h], q[b, t, h], v[b, t, hv]
                beta = float(inp["beta"][b, t, hv])
                if kind == "delta":
                    M = np.eye(K) - beta * np.outer(kt, kt)
                elif kind == "gated_delta":
                    M = np.exp(float(inp["gate"][b, t, hv])) * (np.eye(K) - beta * np.outer(kt, kt))
                elif kind == "negeig_delta":
                    M = np.eye(K) - 2.0 * beta * np.outer(kt, kt)
                elif kind == "kda":
                    # decay first: (I - beta k k^T) diag(exp(g))
                    M = (np.eye(K) - beta * np.outer(kt, kt)) @ np.diag(
                        np.exp(np.asarray(inp["gate"][b, t, hv], np.float64)))
                else:
                    raise AssertionError(kind)
                S = M @ S + beta * np.outer(kt, vt)
                o[b, t, hv] = scale * S.T @ qt
            Sfin[b, hv] = S
    return o, Sfin


def run_case(kind, form, *, B, T, H, HV, K, V, seed, hard=False, init_state=True, qk_l2norm=False,
             scale=None, decay=None):
    rng = np.random.default_rng(seed)
    inp = ref.make_inputs(kind, B, T, H, HV, K, V, rng, hard=hard, init_state=init_state,
                          normalise=not qk_l2norm)
    if decay is not None:
        inp["decay"] = decay
    o, S = ref.reference(kind, inp["q"], inp["k"], inp["v"], gate=inp.get("gate"), beta=inp.get("beta"),
                         initial_state=inp["initial_state"], scale=scale, qk_l2norm=qk_l2norm,
                         decay=inp.get("decay"))
    eff_scale = K ** -0.5 if scale is None else scale
    o2, S2 = form(kind, inp, eff_scale, qk_l2norm)
    e_o, e_s = ref.rel_err(o, o2), ref.rel_err(S, S2)
    tag = (f"{kind} B={B} T={T} H={H} HV={HV} K={K} V={V} hard={hard} init={init_state} "
           f"l2norm={qk_l2norm} scale={scale}")
    check(o.shape == (B, T, HV, V) and S.shape == (B, HV, K, V), f"{tag}: bad output shapes")
    check(o.dtype == np.float64 and S.dtype == np.float64, f"{tag}: outputs not float64")
    check(e_o <= TOL and e_s <= TOL, f"{tag}: rel_err_o={e_o:.3e} rel_err_state={e_s:.3e}")
    check(ref.rel_err(S, 0 * S) > 0, f"{tag}: state is identically zero")


def expect_value_error(msg, fn):
    try:
        fn()
    except ValueError:
        return
    except Exception as e:  # noqa: BLE001
        check(False, f"{msg}: raised {type(e).__name__} instead of ValueError: {e}")
        return
    check(False, f"{msg}: no ValueError raised")


def main():
    configs = [
        dict(B=2, T=24, H=2, HV=4, K=8, V=6),
        dict(B=1, T=17, H=1, HV=3, K=5, V=4, init_state=False),
        dict(B=2, T=20, H=2, HV=2, K=8, V=5, hard=True),
        dict(B=2, T=13, H=1, HV=2, K=6, V=3, qk_l2norm=True, scale=0.3),
    ]
    seed = 1234
    # (a) diagonal kinds vs. the quadratic closed form
    for kind in ("identity", "constant_decay", "scalar_gate", "key_gate"):
        for cfg in configs:
            seed += 1
            run_case(kind, closed_form, seed=seed, **cfg)
    run_case("constant_decay", closed_form, seed=99, B=1, T=9, H=1, HV=3, K=4, V=2, decay=[0.9])
    # (b) delta kinds vs. dense K x K matrices
    for kind in ("delta", "gated_delta", "negeig_delta", "kda"):
        for cfg in configs:
            seed += 1
            run_case(kind, dense_form, seed=seed, **cfg)

    # (c) argument validation
    rng = np.random.default_rng(0)
    B, T, H, HV, K, V = 1, 3, 1, 2, 4, 5
    sg = ref.make_inputs("scalar_gate", B, T, H, HV, K, V, rng)
    gd = ref.make_inputs("gated_delta", B, T, H, HV, K, V, rng)
    expect_value_error("scalar_gate without gate",
                       lambda: ref.reference("scalar_gate", sg["q"], sg["k"], sg["v"]))
    expect_value_error("identity with extra beta",
                       lambda: ref.reference("identity", gd["q"], gd["k"], gd["v"], beta=gd["beta"]))
    expect_value_error("identity with extra gate",
                       lambda: ref.reference("identity", sg["q"], sg["k"], sg["v"], gate=sg["gate"]))
    expect_value_error("delta without beta", lambda: ref.reference("delta", gd["q"], gd["k"], gd["v"]))
    expect_value_error("key_gate with scalar-shaped gate",
                       lambda: ref.reference("key_gate", sg["q"], sg["k"], sg["v"], gate=sg["gate"]))
    expect_value_error("constant_decay without decay",
                       lambda: ref.reference("constant_decay", sg["q"], sg["k"], sg["v"]))
    expect_value_error("unknown kind", lambda: ref.reference("mamba", sg["q"], sg["k"], sg["v"]))
    expect_value_error("bad state shape",
                       lambda: ref.reference("identity", sg["q"], sg["k"], sg["v"],
                                             initial_state=np.zeros((B, HV, V, K))))
    expect_value_error("HV not a multiple of H",
                       lambda: ref.reference("identity", np.zeros((1, 2, 2, 4)), np.zeros((1, 2, 2, 4)),
                                             np.zeros((1, 2, 3, 5))))

    # (d) rounding helpers
    one = np.float32(1.0)
    x = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -2.5, np.inf, 3.4e38,
                  np.nan], np.float32)
    want = np.array([1.0, 1.0, 1 + 2 ** -6, 1 + 2 ** -7, -2.5, np.inf, np.inf, np.nan], np.float32)
    got = ref.bf16_round(x)
    check(got.dtype == np.float32, "bf16_round does not return float32")
    check(np.array_equal(got, want, equal_nan=True), f"bf16_round: got {got}, want {want}")
    check(ref.f16_round(np.array([1 + 2 ** -11], np.float32))[0] == one, "f16_round tie to even")

    # (d) write_spec against the reference example
    example = (
        "func.func @gated_deltanet(%q: tensor<?x?x8x128xbf16>, %k: tensor<?x?x8x128xbf16>, "
        "%v: tensor<?x?x8x128xbf16>, %g: tensor<?x?x8xf32>, %beta: tensor<?x?x8xf32>, "
        "%s0: tensor<?x8x128x128xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>) {\n"
        "  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0) "
        "{scale = 0.0883883 : f32}\n"
        "      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, "
        "tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x8x128x128xf32>) -> "
        "(tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)\n"
        "  return %o, %s : tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>\n"
        "}\n"
    )
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "spec.mlir")
        text = ref.write_spec(path, "gated_delta", "gated_deltanet", "bf16", 1, 1, 8, 8, 128, 128,
                              scale=0.0883883)
        with open(path) as f:
            check(f.read() == text == example, "write_spec output differs from the reference example:\n" + text)
    cd = ref.spec_text("constant_decay", "f", "f32", 2, 5, 1, 2, 4, 4, decay=[0.96875, 0.984375],
                       qk_l2norm=True, scale=1.0, dynamic_bt=False)
    check("linattn.recurrence constant_decay q(%q) k(%k) v(%v) state(%s0) "
          "{scale = 1.0 : f32, qk_l2norm, decay = array<f32: 0.96875, 0.984375>}" in cd
          and "%q: tensor<2x5x1x4xf32>" in cd, "write_spec constant_decay:\n" + cd)

    if failures:
        print(f"oracle selfcheck FAILED ({len(failures)} failures)")
        return 1
    print("oracle selfcheck OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
