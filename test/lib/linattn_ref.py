"""Float64 reference ("oracle") for linattn.recurrence, plus test helpers.

The recurrence, per batch b and value head hv (query/key head h = hv // (HV // H)),
with a K x V state S and tokens t = 0..T-1:

    S_t = M_t S_{t-1} + b_t k_t v_t^T
    o_t = scale * S_t^T q_t

Transition kinds (`kind`), M_t and b_t:

    identity        M = I                          b_t = 1
    constant_decay  M = gamma[hv] I                b_t = 1
    scalar_gate     M = exp(g[b,t,hv]) I           b_t = 1
    key_gate        M = diag(exp(g[b,t,hv,:]))     b_t = 1
    delta           M = I - beta k k^T             b_t = beta
    gated_delta     M = exp(g) (I - beta k k^T)    b_t = beta
    negeig_delta    M = I - 2 beta k k^T           b_t = beta
    kda             M = (I - beta k k^T) diag(exp(g[b,t,hv,:]))   b_t = beta

kda (Kimi Delta Attention) decays the state first, then applies the delta
rule to the decayed state, as fla's naive_recurrent_kda and the Kimi Linear
paper do; for the scalar decays the order makes no difference.

Layouts: q, k [B,T,H,K]; v [B,T,HV,V]; gate (log space) [B,T,HV] or [B,T,HV,K];
beta [B,T,HV]; state [B,HV,K,V]; output o [B,T,HV,V].

Only numpy is used; this module must stay independent of the compiler.
"""

import numpy as np

# kind -> (gate rank: None / "scalar" / "key", uses beta, delta coefficient c in I - c beta k k^T)
KINDS = {
    "identity": (None, False, 0.0),
    "constant_decay": (None, False, 0.0),
    "scalar_gate": ("scalar", False, 0.0),
    "key_gate": ("key", False, 0.0),
    "delta": (None, True, 1.0),
    "gated_delta": ("scalar", True, 1.0),
    "negeig_delta": (None, True, 2.0),
    "kda": ("key", True, 1.0),
}

DTYPES = ("bf16", "f16", "f32")

L2NORM_EPS = 1e-6


def _check_kind(kind):
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {sorted(KINDS)}")
    return KINDS[kind]


def l2norm(x, eps=L2NORM_EPS):
    """x / sqrt(sum(x^2) + eps) over the last axis (the K axis), in float64."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


# ----------------------------------------------------------------------------
# Oracle
# ----------------------------------------------------------------------------

def reference(kind, q, k, v, gate=None, beta=None, initial_state=None, scale=None,
              qk_l2norm=False, decay=None):
    """Run the recurrence in float64; return (o [B,T,HV,V], final_state [B,HV,K,V]).

    Loops over t, vectorised over B and HV.  Inputs of any float dtype are
    cast to float64 first.  initial_state=None means zeros; scale=None means
    K**-0.5.  With qk_l2norm, q and k are replaced by l2norm(q), l2norm(k)
    before anything else.  `decay` (constant_decay only) is a list of HV
    gammas, or a single gamma shared by all heads.
    """
    gate_rank, uses_beta, delta_c = _check_kind(kind)

    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if q.ndim != 4:
        raise ValueError(f"q must be [B,T,H,K], got shape {q.shape}")
    if k.shape != q.shape:
        raise ValueError(f"k shape {k.shape} must equal q shape {q.shape}")
    B, T, H, K = q.shape
    if v.ndim != 4 or v.shape[:2] != (B, T):
        raise ValueError(f"v must be [B={B},T={T},HV,V], got shape {v.shape}")
    HV, V = v.shape[2], v.shape[3]
    if H == 0 or HV % H != 0:
        raise ValueError(f"HV={HV} must be a positive multiple of H={H}")

    # --- gate ---
    if gate_rank is None:
        if gate is not None:
            raise ValueError(f"kind {kind!r} takes no gate, but a gate was given")
    else:
        if gate is None:
            raise ValueError(f"kind {kind!r} requires a gate")
        gate = np.asarray(gate, dtype=np.float64)
        want = (B, T, HV) if gate_rank == "scalar" else (B, T, HV, K)
        if gate.shape != want:
            raise ValueError(f"gate for kind {kind!r} must have shape {want}, got {gate.shape}")

    # --- beta ---
    if not uses_beta:
        if beta is not None:
            raise ValueError(f"kind {kind!r} takes no beta, but a beta was given")
    else:
        if beta is None:
            raise ValueError(f"kind {kind!r} requires beta")
        beta = np.asarray(beta, dtype=np.float64)
        if beta.shape != (B, T, HV):
            raise ValueError(f"beta must have shape {(B, T, HV)}, got {beta.shape}")

    # --- decay ---
    if kind == "constant_decay":
        if decay is None:
            raise ValueError("kind 'constant_decay' requires decay (HV gammas or one gamma)")
        gammas = np.atleast_1d(np.asarray(decay, dtype=np.float64))
        if gammas.ndim != 1 or gammas.shape[0] not in (1, HV):
            raise ValueError(f"decay must hold 1 or HV={HV} gammas, got shape {gammas.shape}")
        gammas = np.broadcast_to(gammas, (HV,))
    elif decay is not None:
        raise ValueError(f"kind {kind!r} takes no decay, but decay was given")

    # --- initial state ---
    if initial_state is None:
        S = np.zeros((B, HV, K, V), dtype=np.float64)
    else:
        S = np.array(initial_state, dtype=np.float64)  # copy
        if S.shape != (B, HV, K, V):
            raise ValueError(f"initial_state must have shape {(B, HV, K, V)}, got {S.shape}")

    if scale is None:
        scale = K ** -0.5
    scale = float(scale)

    if qk_l2norm:
        q = l2norm(q)
        k = l2norm(k)

    # Expand query/key heads to value heads: head hv reads q/k head hv // (HV // H).
    head_of = np.arange(HV) // (HV // H)
    q = q[:, :, head_of, :]  # [B,T,HV,K]
    k = k[:, :, head_of, :]

    # Per-step multiplicative factor a_t applied to S (before the delta term).
    if kind == "constant_decay":
        a = np.broadcast_to(gammas[None, None, :, None, None], (B, T, HV, 1, 1))
    elif gate_rank == "scalar":
        a = np.exp(gate)[..., None, None]  # [B,T,HV,1,1]
    elif gate_rank == "key":
        a = np.exp(gate)[..., None]  # [B,T,HV,K,1]: diag(exp(g)) scales the rows of S
    else:
        a = None

    o = np.empty((B, T, HV, V), dtype=np.float64)
    for t in range(T):
        kt, vt, qt = k[:, t], v[:, t], q[:, t]  # [B,HV,K], [B,HV,V], [B,HV,K]
        kv = kt[..., :, None] * vt[..., None, :]  # k v^T, [B,HV,K,V]
        if uses_beta:
            bt = beta[:, t][..., None, None]  # [B,HV,1,1]
            if gate_rank == "key":
                S = a[:, t] * S  # kda: decay first, then the delta rule
            # (I - c beta k k^T) S = S - c beta k (k^T S)
            kS = np.einsum("bhk,bhkv->bhv", kt, S)
            S = S - delta_c * bt * (kt[..., :, None] * kS[..., None, :])
            if a is not None and gate_rank != "key":
                S = a[:, t] * S
            S = S + bt * kv
        else:
            if a is not None:
                S = a[:, t] * S
            S = S + kv
        o[:, t] = scale * np.einsum("bhkv,bhk->bhv", S, qt)  # scale * S^T q
    return o, S


# ----------------------------------------------------------------------------
# Rounding and error helpers
# ----------------------------------------------------------------------------

def bf16_round(x):
    """Round to the nearest bfloat16 value (round-to-nearest-even on the float32
    bit pattern; NaN kept as NaN; overflow goes to +-inf).  Returns float32."""
    x = np.asarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + lsb) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), out).astype(np.float32)


def f16_round(x):
    """Round to the nearest float16 value; returns float32."""
    return np.asarray(x).astype(np.float16).astype(np.float32)


def round_to(dtype, x):
    """Round x to the storage dtype ('bf16', 'f16', 'f32'); returns float32."""
    if dtype == "bf16":
        return bf16_round(x)
    if dtype == "f16":
        return f16_round(x)
    if dtype == "f32":
        return np.asarray(x, dtype=np.float32)
    raise ValueError(f"unknown dtype {dtype!r}; expected one of {DTYPES}")


def rel_err(x, ref):
    """||x - ref|| / max(||ref||, 1e-30), Frobenius norm over all elements, float64."""
    x = np.asarray(x, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    return float(np.linalg.norm((x - ref).ravel()) / max(np.linalg.norm(ref.ravel()), 1e-30))


# ----------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------

def retnet_decay(HV):
    """RetNet-style per-head gammas: 1 - 2**(-5 - hv)."""
    return [float(1.0 - 2.0 ** (-5 - i)) for i in range(HV)]


def _logsigmoid(x):
    # log(sigmoid(x)) = -log(1 + exp(-x)), computed stably.
    return -np.logaddexp(0.0, -x)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def make_inputs(kind, B, T, H, HV, K, V, rng, hard=False, init_state=True, normalise=True):
    """Random inputs for `kind`; dict of float32 arrays.

    Keys: 'q','k','v', 'gate' (gated kinds), 'beta' (delta kinds),
    'initial_state' (zeros if not init_state), and 'decay' (list of HV floats,
    constant_decay only).

    Regular: q,k,v ~ randn; gate = logsigmoid(randn); beta = sigmoid(randn);
    initial_state = 0.1 randn.
    hard: gate ~ U[-20,-5]; beta ~ U[0.97,1]; k = base direction per (b,h)
    + 1e-2 randn (nearly parallel keys); v = 3 randn.
    normalise: q and k L2-normalised along K.
    """
    gate_rank, uses_beta, _ = _check_kind(kind)
    if HV % H != 0:
        raise ValueError(f"HV={HV} must be a multiple of H={H}")

    q = rng.standard_normal((B, T, H, K))
    if hard:
        base = rng.standard_normal((B, 1, H, K))
        base /= np.linalg.norm(base, axis=-1, keepdims=True)
        k = base + 1e-2 * rng.standard_normal((B, T, H, K))
        v = 3.0 * rng.standard_normal((B, T, HV, V))
    else:
        k = rng.standard_normal((B, T, H, K))
        v = rng.standard_normal((B, T, HV, V))
    if normalise:
        q = l2norm(q)
        k = l2norm(k)

    out = {"q": q, "k": k, "v": v}
    if gate_rank is not None:
        gshape = (B, T, HV) if gate_rank == "scalar" else (B, T, HV, K)
        if hard:
            out["gate"] = rng.uniform(-20.0, -5.0, gshape)
        else:
            out["gate"] = _logsigmoid(rng.standard_normal(gshape))
    if uses_beta:
        if hard:
            out["beta"] = rng.uniform(0.97, 1.0, (B, T, HV))
        else:
            out["beta"] = _sigmoid(rng.standard_normal((B, T, HV)))
    if init_state:
        out["initial_state"] = 0.1 * rng.standard_normal((B, HV, K, V))
    else:
        out["initial_state"] = np.zeros((B, HV, K, V))

    out = {name: np.ascontiguousarray(a, dtype=np.float32) for name, a in out.items()}
    if kind == "constant_decay":
        out["decay"] = retnet_decay(HV)
    return out


def save_npy(path, arr):
    """Save as a float32 .npy file."""
    np.save(path, np.ascontiguousarray(arr, dtype=np.float32))


# ----------------------------------------------------------------------------
# MLIR spec writer
# ----------------------------------------------------------------------------

def format_f32(x):
    """Shortest decimal that round-trips the float32 value of x, always with a
    '.' (MLIR float literals need one: '1.0', '1.0e-30')."""
    x = np.float32(x)
    if not np.isfinite(x):
        raise ValueError(f"cannot print non-finite float attribute {x}")
    ax = abs(float(x))
    if ax == 0.0 or 1e-4 <= ax < 1e7:
        return np.format_float_positional(x, unique=True, trim="0")
    return np.format_float_scientific(x, unique=True, trim="0")


def _tensor(shape, dtype):
    return "tensor<" + "x".join(str(d) for d in shape) + "x" + dtype + ">"


def spec_text(kind, func_name, dtype, B, T, H, HV, K, V, gate_dtype="f32", beta_dtype="f32",
              scale=None, qk_l2norm=False, decay=None, dynamic_bt=True):
    """The MLIR text that write_spec writes (see write_spec)."""
    gate_rank, uses_beta, _ = _check_kind(kind)
    for name, d in (("dtype", dtype), ("gate_dtype", gate_dtype), ("beta_dtype", beta_dtype)):
        if d not in DTYPES:
            raise ValueError(f"{name} {d!r} must be one of {DTYPES}")
    if HV % H != 0:
        raise ValueError(f"HV={HV} must be a multiple of H={H}")

    b, t = ("?", "?") if dynamic_bt else (B, T)
    # (ssa name, type) of each operand group present, in order q,k,v,gate,beta,state.
    operands = [
        ("q", "q", _tensor((b, t, H, K), dtype)),
        ("k", "k", _tensor((b, t, H, K), dtype)),
        ("v", "v", _tensor((b, t, HV, V), dtype)),
    ]
    if gate_rank is not None:
        gshape = (b, t, HV) if gate_rank == "scalar" else (b, t, HV, K)
        operands.append(("gate", "g", _tensor(gshape, gate_dtype)))
    if uses_beta:
        operands.append(("beta", "beta", _tensor((b, t, HV), beta_dtype)))
    operands.append(("state", "s0", _tensor((b, HV, K, V), "f32")))
    results = [_tensor((b, t, HV, V), dtype), _tensor((b, HV, K, V), "f32")]

    attrs = []
    if scale is not None:
        attrs.append(f"scale = {format_f32(scale)} : f32")
    if qk_l2norm:
        attrs.append("qk_l2norm")
    if kind == "constant_decay":
        if decay is None:
            raise ValueError("kind 'constant_decay' requires decay")
        gammas = list(np.atleast_1d(np.asarray(decay, dtype=np.float64)))
        if len(gammas) not in (1, HV):
            raise ValueError(f"decay must hold 1 or HV={HV} gammas, got {len(gammas)}")
        attrs.append("decay = array<f32: " + ", ".join(format_f32(g) for g in gammas) + ">")
    elif decay is not None:
        raise ValueError(f"kind {kind!r} takes no decay")

    args = ", ".join(f"%{ssa}: {ty}" for _, ssa, ty in operands)
    res_types = ", ".join(results)
    groups = " ".join(f"{grp}(%{ssa})" for grp, ssa, _ in operands)
    attr_dict = (" {" + ", ".join(attrs) + "}") if attrs else ""
    op_types = ", ".join(ty for _, _, ty in operands)
    return (
        f"func.func @{func_name}({args}) -> ({res_types}) {{\n"
        f"  %o, %s = linattn.recurrence {kind} {groups}{attr_dict}\n"
        f"      : ({op_types}) -> ({res_types})\n"
        f"  return %o, %s : {res_types}\n"
        f"}}\n"
    )


def write_spec(path, kind, func_name, dtype, B, T, H, HV, K, V, gate_dtype="f32", beta_dtype="f32",
               scale=None, qk_l2norm=False, decay=None, dynamic_bt=True):
    """Write an MLIR file with one public function @func_name taking
    (q, k, v, [gate], [beta], initial_state) and returning (o, final_state),
    whose body is a single linattn.recurrence op.  With dynamic_bt, B and T
    are '?'.  Returns the text written."""
    text = spec_text(kind, func_name, dtype, B, T, H, HV, K, V, gate_dtype, beta_dtype,
                     scale, qk_l2norm, decay, dynamic_bt)
    with open(path, "w") as f:
        f.write(text)
    return text
