"""Float64 reference for the gradients of linattn.recurrence (the backward pass).

This is a second, independent derivation of the backward recurrence: it is
written from the forward equations below (those of linattn_ref.reference)
and nothing else, and it must stay independent of the compiler.  Only numpy
and linattn_ref (the forward oracle: argument checks, l2norm, KINDS) are used.

Forward, per batch b and value head hv (q/k head h = hv // (HV // H)), with a
K x V state S, tokens t = 0..T-1, column vectors q_t, k_t (K) and v_t (V):

    non-kda kinds:  U_t = S_{t-1} - c_t k_t (k_t^T S_{t-1})
                    S_t = A_t U_t + w_t k_t v_t^T
    kda:            P_t = A_t S_{t-1}
                    S_t = P_t - c_t k_t (k_t^T P_t) + w_t k_t v_t^T
    all kinds:      o_t = scale * S_t^T q_t

    A_t = a_t I with a_t = 1 (identity, delta, negeig_delta), gamma[hv]
          (constant_decay), exp(g[b,t,hv]) (scalar_gate, gated_delta);
    A_t = diag(a_t) with a_t = exp(g[b,t,hv,:]) (key_gate, kda);
    c_t = r beta_t, r = 1 (delta, gated_delta, kda), 2 (negeig_delta), 0 otherwise;
    w_t = beta_t for the delta kinds, 1 otherwise.

With qk_l2norm, q and k are first replaced by y = x r, r = 1/sqrt(|x|^2 + eps)
(over K, eps = linattn_ref.L2NORM_EPS).

Loss and cotangents.  L = sum(do * o) + sum(ds * S_T), so do = dL/do [B,T,HV,V]
and ds = dL/dS_T [B,HV,K,V].  Write G_t = dL/dS_t (the total derivative:
through o_t and through S_{t+1}).  For matrices, <X, Y> = sum_ij X_ij Y_ij.

Reverse loop.  G starts as ds (the derivative through the final state only)
and, for t = T-1 down to 0:

    G   += scale * q_t do_t^T                (o_t = scale S_t^T q_t reads S_t)
    dq_t = scale * S_t do_t                  (K vector)

  write term w_t k_t v_t^T:
    dv_t        = w_t G^T k_t
    dk_t(write) = w_t G v_t
    dw_t        = k_t^T G v_t

  non-kda kinds: Y = U_t (the argument of A_t), dY = A_t G (A_t is diagonal),
    da_t = <G, U_t>                          (scalar a)
    da_t[i] = sum_j G_ij U_t,ij              (per-key a: key_gate)
  kda: Y = P_t, dY = G  (S_t = P_t - c k k^T P_t + ...).

  rank-1 term Y -> Y - c k (k^T X), with X = S_{t-1} (non-kda) or P_t (kda);
  with x = X^T k_t and y = dY^T k_t (V vectors):
    dX          = dY - c_t k_t y^T           ((I - c k k^T) is symmetric)
    dc_t        = -x . y
    dk_t(rank1) = -c_t (dY x + X y)

  propagate to S_{t-1}:
    non-kda: G = dX
    kda:     da_t[i] = sum_j dX_ij S_{t-1,ij};  G = A_t dX

  after the loop G = dL/dS_{-1} = d initial_state.

Parameter gradients:
    dbeta_t = r dc_t + dw_t                  (delta kinds)
    dg_t    = a_t * da_t                     (a = exp(g), per key for key_gate/kda)
    constant_decay's gammas are attributes: no gradient.
    dk_t    = dk_t(write) + dk_t(rank1).

Head sharing: the value heads hv of one q/k head h all read q_h, k_h, so
dq_h = sum_{hv: hv // (HV//H) = h} dq_hv, likewise dk.

qk_l2norm: with y = x r, dy/dx = r (I - y y^T), symmetric, so
    dx = r (dy - y (y . dy)).

The loop keeps all T + 1 states in float64 (fine at test sizes) and is
vectorised over B and HV like linattn_ref.reference.
"""

import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep test/lib free of __pycache__
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import linattn_ref as ref  # noqa: E402


def _l2norm_backward(x, dy, eps=ref.L2NORM_EPS):
    """dL/dx for y = x / sqrt(|x|^2 + eps) over the last axis, given dy = dL/dy."""
    x = np.asarray(x, dtype=np.float64)
    r = 1.0 / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)
    y = x * r
    return r * (dy - y * np.sum(y * dy, axis=-1, keepdims=True))


def reference_backward(kind, q, k, v, gate=None, beta=None, initial_state=None, do=None, ds=None,
                       scale=None, qk_l2norm=False, decay=None):
    """Gradients of L = sum(do * o) + sum(ds * S_T) in float64.

    Arguments as linattn_ref.reference, plus the cotangents do [B,T,HV,V]
    (dL/do) and ds [B,HV,K,V] (dL/d final state); None means zeros.
    Returns a dict of float64 arrays, each in its input's shape: 'q', 'k',
    'v', 'gate' (gated kinds, not constant_decay), 'beta' (delta kinds) and
    'initial_state' (also when initial_state is None, i.e. zeros).
    """
    gate_rank, uses_beta, rank1 = ref._check_kind(kind)
    # The forward oracle validates every argument (kinds, shapes, gate/beta/decay presence).
    ref.reference(kind, q, k, v, gate=gate, beta=beta, initial_state=initial_state, scale=scale,
                  qk_l2norm=qk_l2norm, decay=decay)

    q_in = np.asarray(q, dtype=np.float64)
    k_in = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    B, T, H, K = q_in.shape
    HV, V = v.shape[2], v.shape[3]
    G_per_H = HV // H

    if do is None:
        do = np.zeros((B, T, HV, V))
    do = np.asarray(do, dtype=np.float64)
    if do.shape != (B, T, HV, V):
        raise ValueError(f"do must have shape {(B, T, HV, V)}, got {do.shape}")
    if ds is None:
        ds = np.zeros((B, HV, K, V))
    ds = np.asarray(ds, dtype=np.float64)
    if ds.shape != (B, HV, K, V):
        raise ValueError(f"ds must have shape {(B, HV, K, V)}, got {ds.shape}")

    if initial_state is None:
        S0 = np.zeros((B, HV, K, V))
    else:
        S0 = np.asarray(initial_state, dtype=np.float64)
    if scale is None:
        scale = K ** -0.5
    scale = float(scale)

    qn = ref.l2norm(q_in) if qk_l2norm else q_in
    kn = ref.l2norm(k_in) if qk_l2norm else k_in
    head_of = np.arange(HV) // G_per_H
    qe = qn[:, :, head_of, :]  # [B,T,HV,K]
    ke = kn[:, :, head_of, :]

    # a: per-step decay broadcastable against [B,HV,K,V] after indexing [:, t]; None = 1.
    if kind == "constant_decay":
        gammas = np.broadcast_to(np.atleast_1d(np.asarray(decay, dtype=np.float64)), (HV,))
        a = np.broadcast_to(gammas[None, None, :, None, None], (B, T, HV, 1, 1))
    elif gate_rank == "scalar":
        a = np.exp(np.asarray(gate, dtype=np.float64))[..., None, None]  # [B,T,HV,1,1]
    elif gate_rank == "key":
        a = np.exp(np.asarray(gate, dtype=np.float64))[..., None]  # [B,T,HV,K,1]
    else:
        a = None
    is_kda = kind == "kda"
    if uses_beta:
        beta = np.asarray(beta, dtype=np.float64)
        c = rank1 * beta  # [B,T,HV]
        w = beta
    else:
        c = None
        w = np.ones((B, T, HV))

    def rank1_arg(S_prev, t):
        """X: the matrix the rank-1 term reads (S_{t-1}, or P_t for kda)."""
        return a[:, t] * S_prev if is_kda else S_prev

    def kT(kt, M):  # k^T M, [B,HV,V]
        return np.einsum("bhk,bhkv->bhv", kt, M)

    # --- forward, keeping every state ---
    states = np.empty((T + 1, B, HV, K, V))
    states[0] = S0
    for t in range(T):
        kt, vt = ke[:, t], v[:, t]
        X = rank1_arg(states[t], t)
        Y = X
        if c is not None:
            Y = X - c[:, t][..., None, None] * (kt[..., :, None] * kT(kt, X)[..., None, :])
        if a is not None and not is_kda:
            Y = a[:, t] * Y
        states[t + 1] = Y + w[:, t][..., None, None] * (kt[..., :, None] * vt[..., None, :])

    # --- reverse ---
    dqe = np.zeros((B, T, HV, K))
    dke = np.zeros((B, T, HV, K))
    dv = np.zeros((B, T, HV, V))
    dw = np.zeros((B, T, HV))
    dc = np.zeros((B, T, HV))
    da = None
    if gate_rank is not None:
        da = np.zeros((B, T, HV) if gate_rank == "scalar" else (B, T, HV, K))
    G = ds.copy()
    for t in range(T - 1, -1, -1):
        kt, vt, qt, dot = ke[:, t], v[:, t], qe[:, t], do[:, t]
        S_prev, S_t = states[t], states[t + 1]
        wt = w[:, t]
        G = G + scale * (qt[..., :, None] * dot[..., None, :])
        dqe[:, t] = scale * np.einsum("bhkv,bhv->bhk", S_t, dot)

        # write term w k v^T
        Gk = kT(kt, G)  # G^T k
        dv[:, t] = wt[..., None] * Gk
        dke[:, t] = wt[..., None] * np.einsum("bhkv,bhv->bhk", G, vt)
        dw[:, t] = np.einsum("bhv,bhv->bh", Gk, vt)

        X = rank1_arg(S_prev, t)
        if is_kda:
            dY = G
        else:
            if a is not None:
                # U_t = (S_t - w k v^T) / a would divide by a tiny a; recompute it instead.
                U = X
                if c is not None:
                    U = X - c[:, t][..., None, None] * (kt[..., :, None] * kT(kt, X)[..., None, :])
                if gate_rank == "scalar":
                    da[:, t] = np.sum(G * U, axis=(-2, -1))
                elif gate_rank == "key":
                    da[:, t] = np.sum(G * U, axis=-1)
                dY = a[:, t] * G
            else:
                dY = G

        # rank-1 term Y = X - c k (k^T X)
        if c is not None:
            ct = c[:, t]
            x = kT(kt, X)  # X^T k
            y = kT(kt, dY)  # dY^T k
            dX = dY - ct[..., None, None] * (kt[..., :, None] * y[..., None, :])
            dc[:, t] = -np.sum(x * y, axis=-1)
            dke[:, t] -= ct[..., None] * (np.einsum("bhkv,bhv->bhk", dY, x)
                                          + np.einsum("bhkv,bhv->bhk", X, y))
        else:
            dX = dY

        if is_kda:
            da[:, t] = np.sum(dX * S_prev, axis=-1)  # P = diag(a) S_{t-1}
            G = a[:, t] * dX
        else:
            G = dX

    # --- parameters, head sharing, l2norm ---
    dq = dqe.reshape(B, T, H, G_per_H, K).sum(axis=3)
    dk = dke.reshape(B, T, H, G_per_H, K).sum(axis=3)
    if qk_l2norm:
        dq = _l2norm_backward(q_in, dq)
        dk = _l2norm_backward(k_in, dk)
    grads = {"q": dq, "k": dk, "v": dv}
    if gate_rank is not None:
        a_t = a[..., 0, 0] if gate_rank == "scalar" else a[..., 0]
        grads["gate"] = a_t * da
    if uses_beta:
        grads["beta"] = rank1 * dc + dw
    grads["initial_state"] = G
    return grads


def loss(kind, do, ds, q, k, v, gate=None, beta=None, initial_state=None, scale=None,
         qk_l2norm=False, decay=None):
    """L = sum(do * o) + sum(ds * S_T) of the forward oracle, float64 (the
    function reference_backward differentiates)."""
    o, S = ref.reference(kind, q, k, v, gate=gate, beta=beta, initial_state=initial_state,
                         scale=scale, qk_l2norm=qk_l2norm, decay=decay)
    return float(np.sum(np.asarray(do, np.float64) * o) + np.sum(np.asarray(ds, np.float64) * S))


def make_cotangents(B, T, HV, K, V, rng):
    """Random cotangents (do [B,T,HV,V] ~ randn, ds [B,HV,K,V] ~ 0.1 randn), float32."""
    do = rng.standard_normal((B, T, HV, V))
    ds = 0.1 * rng.standard_normal((B, HV, K, V))
    return np.ascontiguousarray(do, dtype=np.float32), np.ascontiguousarray(ds, dtype=np.float32)
