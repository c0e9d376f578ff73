#!/usr/bin/env python3
"""Which intermediates of the chunked algorithm can be stored in bf16?

An fp64 model of the chunked delta rule as the GPU kernels compute it
(UT transform -> W, U; state pass D = U - W S_n, S_{n+1} = exp(G_C) S_n +
K^T D'; output o = scale (exp(G) Q S_n + P D)), rounding chosen
intermediates to bf16, against the token-by-token fp64 recurrence. Inputs
are those of bench/gpu/check.py (q, k, v rounded to bf16; soft: random keys,
logsigmoid gates, sigmoid beta; hard: nearly parallel keys, v x 3, log gates
in [-20, -5], beta in [0.97, 1]). Prints the norm-wise relative error of o
(rounded to bf16, as the kernels store it) and of the final state.

    /usr/bin/python3 bench/model/bf16_intermediates.py T [SEED]

Rounded intermediates per row: exact (none: o's error is its own bf16
rounding), S (the chunk states the output reads), W, U, WU, S+Do (the chunk
states and the new values the output reads), SW (what the kernels round
since c15), SWDoP (SW, the new values the output reads and the output's
intra-chunk matrix P), SWDo (the kernels since c16), and on top of it Sw
(S as the state pass's W S product reads it), Dk (D' = decayed D as the
state update K^T D' reads it), both (the gated kinds' kernels since
NOTES s2), and both with U (a 16-bit U as well). Kinds (third argument, comma
separated; default delta,gated_delta): delta, gated_delta, negeig_delta
(rank-1 factor 2 beta; its f32 W is never rounded), scalar_gate (no
rank-1 term: W = 0, U = v), weak_gated_delta (gated delta with log gates
in (-0.01, 0], outside bench/gpu/check.py's inputs). bench/NOTES.md c14/c15/c20/s2 cite it.

    /usr/bin/python3 bench/model/bf16_intermediates.py 4096 0 \
        delta,gated_delta,negeig_delta,scalar_gate
"""
import sys

import numpy as np


def bf16(x):
    """Round to bf16 (nearest even) and back to float64."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def recurrence(q, k, v, g, beta, s0, scale, c):
    """c: the rank-1 factor, beta (or 2 beta for negeig)."""
    S, o = s0.copy(), np.zeros_like(v)
    for t in range(q.shape[0]):
        S *= np.exp(g[t])
        S += np.outer(k[t], beta[t] * v[t] - c[t] * (k[t] @ S))
        o[t] = scale * q[t] @ S
    return o, S


def chunked(q, k, v, g, beta, s0, scale, c, rounded, C=64, inverse=None):
    """inverse(L): (I + L)^-1 of a chunk's strictly lower L (default: fp64;
    bench/model/inverse_precision.py passes the kernels' forms)."""
    r = lambda name, x: bf16(x) if name in rounded else x
    S, o = s0.copy(), np.zeros_like(v)
    for c0 in range(0, q.shape[0], C):
        sl = slice(c0, min(q.shape[0], c0 + C))
        qc, kc, vc, bc, cc = q[sl], k[sl], v[sl], beta[sl], c[sl]
        G = np.cumsum(g[sl])
        L = np.tril((cc[:, None] * (kc @ kc.T)) * np.exp(G[:, None] - G[None, :]), -1)
        T = inverse(L) if inverse else np.linalg.inv(np.eye(len(G)) + L)
        W = r("W", T @ (cc[:, None] * np.exp(G)[:, None] * kc))
        U = r("U", T @ (bc[:, None] * vc))
        D = U - W @ r("Sw", S)
        P = np.tril((qc @ kc.T) * np.exp(G[:, None] - G[None, :]))
        o[sl] = scale * (np.exp(G)[:, None] * (qc @ r("S", S)) + r("P", P) @ r("Do", D))
        S = np.exp(G[-1]) * S + kc.T @ r("Dk", np.exp(G[-1] - G)[:, None] * D)
    return o, S


def inputs(rng, T, kind, hard, K=128, V=128):
    nrm = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)
    q = nrm(rng.standard_normal((T, K)))
    if hard:
        k = nrm(nrm(rng.standard_normal(K)) + 1e-2 * rng.standard_normal((T, K)))
    else:
        k = nrm(rng.standard_normal((T, K)))
    v = rng.standard_normal((T, V)) * (3 if hard else 1)
    g = np.zeros(T)
    if kind in ("gated_delta", "scalar_gate"):
        g = -5 - 15 * rng.random(T) if hard else -np.log1p(np.exp(-rng.standard_normal(T)))
    if kind == "weak_gated_delta":  # decays in (0.99, 1]: nearly the delta rule
        g = -0.01 * rng.random(T)
    beta = 0.97 + 0.03 * rng.random(T) if hard else 1 / (1 + np.exp(-rng.standard_normal(T)))
    c = 2 * beta if kind == "negeig_delta" else beta
    if kind == "scalar_gate":  # no rank-1 term: W = 0, U = v
        beta, c = np.ones(T), np.zeros(T)
    s0 = 0.1 * rng.standard_normal((K, V))
    return bf16(q), bf16(k), bf16(v), g, beta, s0, c


def main():
    T = int(sys.argv[1])
    rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    err = lambda x, ref: np.linalg.norm(x - ref) / np.linalg.norm(ref)
    variants = [("exact", ()), ("S", ("S",)), ("W", ("W",)), ("U", ("U",)),
                ("WU", ("W", "U")), ("S+Do", ("S", "Do")),
                ("SW", ("S", "W")), ("SWDoP", ("S", "W", "Do", "P")),
                ("SWDo", ("S", "W", "Do")), ("SWDoSw", ("S", "W", "Do", "Sw")),
                ("SWDoDk", ("S", "W", "Do", "Dk")),
                ("SWDoSwDk", ("S", "W", "Do", "Sw", "Dk")),
                ("SWDoSwDkU", ("S", "W", "Do", "Sw", "Dk", "U"))]
    kinds = sys.argv[3].split(",") if len(sys.argv) > 3 else ["delta", "gated_delta"]
    # exp(G_i - G_j) above the diagonal overflows (and meets c = 0 for
    # scalar_gate); np.tril drops it.
    with np.errstate(over="ignore", invalid="ignore"):
        for kind in kinds:
            for hard in (False, True):
                q, k, v, g, beta, s0, c = inputs(rng, T, kind, hard)
                ro, rs = recurrence(q, k, v, g, beta, s0, 128 ** -0.5, c)
                for name, rounded in variants:
                    if kind == "negeig_delta" and "W" in rounded:
                        rounded = tuple(x for x in rounded if x != "W")  # f32 W
                    o, s = chunked(q, k, v, g, beta, s0, 128 ** -0.5, c, rounded)
                    print(f"{kind:12s} hard={int(hard)} {name:8s} "
                          f"o {err(bf16(o), ro):.2e}  state {err(s, rs):.2e}")


if __name__ == "__main__":
    main()
