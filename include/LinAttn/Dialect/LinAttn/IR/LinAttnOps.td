//===- LinAttnOps.td - LinAttn operations ------------------*- tablegen -*-===//
//
// Operations of the LinAttn dialect.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_DIALECT_LINATTN_IR_LINATTNOPS_TD
#define LINATTN_DIALECT_LINATTN_IR_LINATTNOPS_TD

include "LinAttn/Dialect/LinAttn/IR/LinAttnDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/OpAsmInterface.td"

//===----------------------------------------------------------------------===//
// What linattn.recurrence and linattn.recurrence_grad share: the spec's
// operands (q, k, v, [gate], [beta], initial_state first, in that order),
// attributes and what they mean. Defined once in LinAttnOps.cpp for both.
//===----------------------------------------------------------------------===//

defvar LinAttn_SpecOperands = (ins
    LinAttn_TransitionKindAttr:$kind,
    AnyRankedTensor:$q,
    AnyRankedTensor:$k,
    AnyRankedTensor:$v,
    Optional<AnyRankedTensor>:$gate,
    Optional<AnyRankedTensor>:$beta,
    AnyRankedTensor:$initial_state);
defvar LinAttn_SpecAttributes = (ins
    OptionalAttr<F32Attr>:$scale,
    OptionalAttr<DenseF32ArrayAttr>:$decay,
    UnitAttr:$qk_l2norm);

defvar LinAttn_SpecAccessors = [{
    /// Problem sizes read off the operand types; B and T may be
    /// ShapedType::kDynamic.
    int64_t getBatchSize() { return getQ().getType().getDimSize(0); }
    int64_t getSeqLen() { return getQ().getType().getDimSize(1); }
    int64_t getNumQKHeads() { return getQ().getType().getDimSize(2); }
    int64_t getKeyDim() { return getQ().getType().getDimSize(3); }
    int64_t getNumVHeads() { return getV().getType().getDimSize(2); }
    int64_t getValueDim() { return getV().getType().getDimSize(3); }

    /// The scale actually applied: the attribute, or K^-1/2 by default.
    float getEffectiveScale();
    /// gamma for value head `hv` of a constant_decay recurrence.
    float getDecayForHead(int64_t hv);
    /// gamma of every value head, in order.
    SmallVector<float> getDecayPerHead();

    /// What the op's kind means (TransitionKinds.h): its decay, its rank-1
    /// term, the operands it takes.
    const TransitionKindInfo &getKindInfo() {
      return getTransitionKindInfo(getKind());
    }

    /// A pair of operand dimensions that must be equal at run time, with a
    /// name for messages ("B", "T", ...). The verifier checks those known
    /// statically; runners and lowerings check the dynamic ones.
    using DimEquality = SpecDimEquality;
    /// Every run-time dimension equality the semantics needs, for operands
    /// numbered as in getOperands().
    SmallVector<DimEquality> getDimEqualities();
    /// Name of operand `i` ("q", "k", "v", "gate", "beta", "initial_state",
    /// and for the adjoint "grad_output", "grad_final_state").
    StringRef getOperandName(unsigned i);
    /// Index of `initial_state`, the last operand of the forward spec.
    unsigned getInitialStateIndex() {
      return 3 + (getGate() ? 1 : 0) + (getBeta() ? 1 : 0);
    }
}];

//===----------------------------------------------------------------------===//
// linattn.recurrence
//===----------------------------------------------------------------------===//

def LinAttn_RecurrenceOp : LinAttn_Op<"recurrence",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "a linear-attention recurrence over a batch of sequences";
  let description = [{
    The specification op of LinAttn. For every sequence `b < B` and value head
    `hv < HV` (whose query/key head is `h = hv / (HV / H)`), starting from
    `S_0 = initial_state[b, hv]` (a `K x V` fp32 matrix), for `t = 1..T`:

        S_t = M_t S_{t-1} + b_t k_t v_t^T
        o_t = scale * S_t^T q_t

    with `q_t = q[b, t, h]`, `k_t = k[b, t, h]` in `R^K`, `v_t = v[b, t, hv]`
    in `R^V`, and `M_t`, `b_t` given by `kind`:

    | kind             | `M_t`                             | `b_t`  | operands         |
    |------------------|-----------------------------------|--------|------------------|
    | `identity`       | `I`                               | 1      |                  |
    | `constant_decay` | `gamma[hv] I` (attribute `decay`) | 1      |                  |
    | `scalar_gate`    | `exp(g_t) I`, `g_t = gate[b,t,hv]`| 1      | `gate` [B,T,HV]  |
    | `key_gate`       | `diag(exp(gate[b,t,hv,:]))`       | 1      | `gate` [B,T,HV,K]|
    | `delta`          | `I - beta_t k_t k_t^T`            | beta_t | `beta` [B,T,HV]  |
    | `gated_delta`    | `exp(g_t) (I - beta_t k_t k_t^T)` | beta_t | `gate`, `beta`   |
    | `negeig_delta`   | `I - 2 beta_t k_t k_t^T`          | beta_t | `beta` [B,T,HV]  |
    | `kda`            | `(I - beta_t k_t k_t^T) diag(exp(gate[b,t,hv,:]))` | beta_t | `gate` [B,T,HV,K], `beta` |

    `kda` (Kimi Delta Attention) decays the state per key first, then
    applies the delta rule to the decayed state, as Kimi Linear and
    flash-linear-attention's `chunk_kda` do.

    Gates are in log space (`g <= 0` keeps the recurrence contracting).
    Results: `o[b, t, hv] = o_t`, shaped `[B, T, HV, V]` in v's element type,
    and the final state `S_T` shaped `[B, HV, K, V]` in f32. All arithmetic
    and the state are fp32; inputs are bf16, f16 or f32 (q, k and v share one
    element type; gate and beta are any of the three).

    Attributes:
    - `scale` (f32, default `K^-1/2`), the output scale.
    - `qk_l2norm` (unit): first replace q_t and k_t by `x / sqrt(sum(x^2) +
      1e-6)`. Without it q and k are taken as given (delta kinds expect unit
      keys so that the eigenvalues of `M_t` stay in [-1, 1]).
    - `decay` (`array<f32>`, only with `constant_decay`): `gamma` per value
      head, HV values (or one shared by all heads), each in (0, 1].

    B and T may be dynamic; H, HV, K and V are static and HV is a multiple
    of H (value heads share query/key heads, as in grouped value attention).

    Example (Gated DeltaNet, bf16, 8 heads of 128):

    ```mlir
    %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g)
        beta(%beta) state(%s0) {scale = 0.0883883 : f32}
        : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>,
           tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x?x8xf32>,
           tensor<?x8x128x128xf32>)
        -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
    ```
  }];

  let arguments = !con(LinAttn_SpecOperands, LinAttn_SpecAttributes);
  let results = (outs AnyRankedTensor:$output, AnyRankedTensor:$final_state);

  let assemblyFormat = [{
    custom<TransitionKind>($kind) `q` `(` $q `)` `k` `(` $k `)` `v` `(` $v `)`
    (`gate` `(` $gate^ `)`)? (`beta` `(` $beta^ `)`)?
    `state` `(` $initial_state `)` attr-dict
    `:` functional-type(operands, results)
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = LinAttn_SpecAccessors;
}

//===----------------------------------------------------------------------===//
// linattn.recurrence_grad
//===----------------------------------------------------------------------===//

def LinAttn_RecurrenceGradOp : LinAttn_Op<"recurrence_grad",
    [Pure, AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "the adjoint of a linattn.recurrence: gradients of every input";
  let description = [{
    The backward pass of `linattn.recurrence` with the same kind, operands
    and attributes: given `grad_output` (`dL/do`, shaped like `o`, in v's
    element type) and `grad_final_state` (`dL/dS_T`, f32), it returns
    `dL/dx` for every operand x of the forward op, in that operand's order
    and shape: `dq`, `dk`, `dv` in q's element type, then `dgate`, `dbeta`
    (when the kind takes them) and `d initial_state` in f32.
    `linattn-generate-backward` creates it; nothing else is needed to train
    with a spec.

    The adjoint is again a linear recurrence, run backwards in time with the
    transposed transitions. Write the forward step as the kind table does,
    with `A_t` the decay (a scalar `a_t`, or `diag(a_t)` for per-key gates,
    `a_t = exp(g_t)`), `c_t = rank1Scale beta_t` and `w_t = beta_t` for the
    delta kinds (`c = 0`, `w = 1` otherwise), and q, k already normalised
    under `qk_l2norm`:

        X = S_{t-1},  u = X^T k            (kda: P = diag(a) X, u = P^T k)
        S_t = A (X - c k u^T) + w k v^T    (kda: S_t = P - c k u^T + w k v^T)
        o_t = scale S_t^T q_t

    With `G = dL/dS_t` (starting from `grad_final_state` at t = T), for
    t = T..1:

        G    += scale q_t do_t^T                    dq_t = scale S_t do_t
        z     = G^T k                               dv_t = w z
        dw    = v_t . z                             dc   = -a (z . u)   (kda: -(z . u))
        dk_t  = w G v_t - c a (G u + X z)           (kda: w G v - c (G u + P z))
        da_i  = sum_j G_ij (X - c k u^T)_ij         (kda: sum_j (G - c k z^T)_ij X_ij)
        G    <- A^T (G - c k z^T)                   (= dL/dS_{t-1}; A and M_t are symmetric)

    then `dgate = a * da` (per key for `key_gate` and `kda`; a scalar gate
    sums `da_i` over i), `dbeta = rank1Scale dc + dw`, and
    `d initial_state = G` after t = 1. Value heads sharing a query/key head
    add their `dq`, `dk`; under `qk_l2norm` the sum goes back through the
    normalisation `y = x r`, `r = (|x|^2 + 1e-6)^-1/2`:
    `dx = r (dy - y (y . dy))`. `decay` is an attribute and has no gradient.

    The loop lowering (`convert-linattn-to-loops`) computes this on the
    CPU: a forward pass stores the state every `C = ceil(sqrt(T))` tokens,
    then each segment of C tokens is recomputed from its checkpoint before
    its reverse steps, so the memory beyond inputs and outputs is about
    `(T / C + C + 1) K V` floats per (b, hv) plus f32 dq, dk per value head.

    ```mlir
    %dq, %dk, %dv, %dg, %dbeta, %ds0 = linattn.recurrence_grad gated_delta
        q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
        grad_output(%do) grad_final_state(%ds)
        : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>,
           tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x?x8xf32>,
           tensor<?x8x128x128xf32>, tensor<?x?x8x128xbf16>,
           tensor<?x8x128x128xf32>)
        -> (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>,
            tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x?x8xf32>,
            tensor<?x8x128x128xf32>)
    ```
  }];

  let arguments = !con(LinAttn_SpecOperands,
                       (ins AnyRankedTensor:$grad_output,
                            AnyRankedTensor:$grad_final_state),
                       LinAttn_SpecAttributes);
  let results = (outs Variadic<AnyRankedTensor>:$gradients);

  let assemblyFormat = [{
    custom<TransitionKind>($kind) `q` `(` $q `)` `k` `(` $k `)` `v` `(` $v `)`
    (`gate` `(` $gate^ `)`)? (`beta` `(` $beta^ `)`)?
    `state` `(` $initial_state `)` `grad_output` `(` $grad_output `)`
    `grad_final_state` `(` $grad_final_state `)` attr-dict
    `:` functional-type(operands, results)
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = LinAttn_SpecAccessors # [{
    /// dL/d(forward operand i), i numbered as the forward op's operands
    /// (q, k, v, [gate], [beta], initial_state).
    Value getGradientOf(unsigned i) { return getGradients()[i]; }
    /// The type gradient i has: operand i's shape, in q's element type for
    /// q, k and v, in f32 for gates, beta and the state.
    static RankedTensorType getGradientType(RankedTensorType operandType,
                                            unsigned i);
  }];
}

//===----------------------------------------------------------------------===//
// linattn.scan
//===----------------------------------------------------------------------===//

def LinAttn_YieldOp : LinAttn_Op<"yield",
    [Pure, Terminator, HasParent<"ScanOp">]> {
  let summary = "yields the combined element of a linattn.scan combiner";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let builders = [OpBuilder<(ins), [{ /* no values */ }]>];
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

def LinAttn_ScanOp : LinAttn_Op<"scan", [Pure, AttrSizedOperandSegments,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "associative scan of tuples along one dimension";
  let description = [{
    Scans N tensors together along `dimension`. The element at index i is the
    tuple of slices `x_n[l..., i, :...]` (dimensions before `dimension` are
    independent batch dimensions, those after it form the element). The
    combiner region takes the accumulated tuple (N arguments, earlier in scan
    order) then the next tuple (N arguments) and yields their combination; it
    must be associative for the result to be independent of the evaluation
    order, which is what lets a target evaluate the scan as a tree.

    Inclusive: `out[i] = x[first] (+) ... (+) x[i]`; exclusive:
    `out[i] = init (+) ... (+) x[i - 1]` (requires `init`). With `init`
    (the carry-in, shaped like an input without `dimension`) the scan starts
    from it. `reverse` scans from the last index down. Results: the N scanned
    tensors, then the N carries out (the total, shaped like `init`).

    The element of an affine map `S -> M S + B` with scalar `M` per head is
    `(m, B)`; composing an earlier map with a later one gives
    `(m2 m1, m2 B1 + B2)`:

    ```mlir
    %S:2, %carry:2 = linattn.scan dimension(1)
        ins(%m, %kv : tensor<2x8x4xf32>, tensor<2x8x4x16x32xf32>)
        init(%one, %s0 : tensor<2x4xf32>, tensor<2x4x16x32xf32>) {
    ^bb0(%m1: tensor<4xf32>, %b1: tensor<4x16x32xf32>,
         %m2: tensor<4xf32>, %b2: tensor<4x16x32xf32>):
      %m = arith.mulf %m2, %m1 : tensor<4xf32>
      %e = tensor.empty() : tensor<4x16x32xf32>
      %b = linalg.generic {
          indexing_maps = [affine_map<(h, i, j) -> (h)>,
                           affine_map<(h, i, j) -> (h, i, j)>,
                           affine_map<(h, i, j) -> (h, i, j)>,
                           affine_map<(h, i, j) -> (h, i, j)>],
          iterator_types = ["parallel", "parallel", "parallel"]}
          ins(%m2, %b1, %b2 : tensor<4xf32>, tensor<4x16x32xf32>, tensor<4x16x32xf32>)
          outs(%e : tensor<4x16x32xf32>) {
      ^bb0(%a: f32, %x: f32, %y: f32, %o: f32):
        %p = arith.mulf %a, %x : f32
        %r = arith.addf %p, %y : f32
        linalg.yield %r : f32
      } -> tensor<4x16x32xf32>
      linattn.yield %m, %b : tensor<4xf32>, tensor<4x16x32xf32>
    } -> tensor<2x8x4xf32>, tensor<2x8x4x16x32xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       Variadic<AnyRankedTensor>:$inits,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dimension,
                       UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$combiner);
  let assemblyFormat = [{
    `dimension` `(` $dimension `)` (`exclusive` $exclusive^)? (`reverse` $reverse^)?
    `ins` `(` $inputs `:` type($inputs) `)`
    (`init` `(` $inits^ `:` type($inits) `)`)? $combiner attr-dict
    `->` type($results)
  }];
  let hasRegionVerifier = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The N scanned tensors (the first N results).
    ResultRange getOutputs() {
      return getResults().take_front(getInputs().size());
    }
    /// The N carries out (the last N results).
    ResultRange getCarries() {
      return getResults().drop_front(getInputs().size());
    }
    /// The element type of input `i`: its shape after `dimension`.
    RankedTensorType getElementType(unsigned i);
    /// The carry type of input `i`: its shape without `dimension`.
    RankedTensorType getCarryType(unsigned i);
  }];
}

//===----------------------------------------------------------------------===//
// Chunked-state algorithm ops
//
// The chunkwise two-pass algorithm splits T into chunks of `chunk_size`
// tokens (the last one may be shorter). With G the cumulative log gate
// inside each chunk, c_t the rank-1 coefficient and b_t the write
// coefficient of the delta kinds (c = b = beta, or c = 2 beta for
// negeig_delta), the state entering chunk n is S_n and
//
//   A   = (I + StrictLower(diag(c) K K^T * exp(G_i - G_j)))^-1
//   W   = A diag(c exp(G)) K              U = A diag(b) V
//   D   = U - W S_n                       (the new values)
//   S_{n+1} = exp(G_C) S_n + (K * exp(G_C - G))^T D
//   O   = scale ((Q * exp(G)) S_n + (Q K^T * exp(G_i - G_j) * causal) D)
//
// Kinds without a rank-1 term have A = I, W = 0 and D = V.
//
// `qk_l2norm` of a delta kind may be taken factored: with r and s the
// reciprocal L2 norms of k's and q's rows (`linattn.rnorm`), the
// normalised keys' recurrence is the one over k itself with c = rank1_scale
// beta r^2 and b = beta r, its output scaled by s. The ops that read q or
// k then take r (`k_rnorm`) or s (`q_rnorm`) and q and k stay exact in
// their own type: their W, U and D are the normalised ones with rows
// scaled by r, their chunk states the normalised ones.
//===----------------------------------------------------------------------===//

def LinAttn_L2NormOp : LinAttn_Op<"l2norm", [Pure]> {
  let summary = "L2-normalise the last dimension";
  let description = [{
    `y = x / sqrt(sum(x^2) + 1e-6)` over the last dimension, in fp32. The
    result has x's shape and element type f32, or x's own element type (y
    rounded once). Emitted for `qk_l2norm` when a recurrence is split into
    algorithm ops: the chunked form takes x's type (its ops feed q and k to
    tensor cores in that type), the scan and the backward f32.

    ```mlir
    %qn = linattn.l2norm %q : tensor<?x?x8x128xbf16> -> tensor<?x?x8x128xbf16>
    %kn = linattn.l2norm %k : tensor<?x?x8x128xbf16> -> tensor<?x?x8x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let extraClassDeclaration = [{
    /// eps of y = x / sqrt(sum(x^2) + eps), also what `qk_l2norm` means.
    static constexpr float kEpsilon = 1e-6f;
  }];
  let hasVerifier = 1;
}

def LinAttn_RNormOp : LinAttn_Op<"rnorm", [Pure]> {
  let summary = "the reciprocal L2 norm of each row";
  let description = [{
    `r = (sum(x^2) + 1e-6)^-1/2` over x's last dimension, in fp32: x
    [B, T, H, K] gives r [B, T, H] f32, the factor by which
    `linattn.l2norm` scales each row. Emitted for `qk_l2norm` where the
    chunked ops take the normalisation factored (`q_rnorm`, `k_rnorm`), so
    that q and k reach them exact in their own type.

    ```mlir
    %rk = linattn.rnorm %k : tensor<?x?x8x128xbf16> -> tensor<?x?x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def LinAttn_ChunkCumsumOp : LinAttn_Op<"chunk_cumsum",
    [Pure, AttrSizedResultSegments]> {
  let summary = "cumulative sum of log gates inside each chunk along T";
  let description = [{
    `G[b, t, ...] = sum of g[b, s, ...] for s from the first token of t's
    chunk up to t` (chunks of `chunk_size` tokens along dimension 1), in
    fp32. Gates stay in log space: later ops only take exp of differences
    `G_i - G_j` with `i >= j` and of `G` itself, which are <= 0 for gates
    <= 0.

    With `keys` k [B, T, H, K] (per-key gates only; value head hv reads
    head hv / (HV / H)), the op also returns what a state pass over these
    gates needs of each chunk n (last valid token C):

        decayed_keys[b, t, hv, :] = k[b, t, h, :] * exp(G_C - G_t)
        chunk_totals[b, n, hv, :] = G_C

    the keys decayed to their chunk's end ([B, T, HV, K] in the keys'
    element type; exp(G_C - G_t) <= 1) and the chunks' total log gates
    ([B, NC, HV, K] f32), for a `linattn.chunk_state_pass` with
    `decayed_keys` (`linattn-fuse-chunk-cumsum` makes this form).

    ```mlir
    %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64}
        : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    %Gk, %kd, %gc = linattn.chunk_cumsum %gk keys(%k : tensor<?x?x8x128xbf16>)
        {chunk_size = 64 : i64} : tensor<?x?x8x128xf32>
        -> tensor<?x?x8x128xf32>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$gate,
                       Optional<AnyRankedTensor>:$keys,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_size);
  let results = (outs AnyRankedTensor:$result,
                      Optional<AnyRankedTensor>:$decayed_keys,
                      Optional<AnyRankedTensor>:$chunk_totals);
  let assemblyFormat = [{
    $gate (`keys` `(` $keys^ `:` type($keys) `)`)? attr-dict `:` type($gate)
    `->` type($result) (`,` type($decayed_keys)^ `,` type($chunk_totals))?
  }];
  let hasVerifier = 1;
}

def LinAttn_UTTransformOp : LinAttn_Op<"ut_transform",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "the UT/WY factors W and U of every chunk";
  let description = [{
    For every sequence, value head and chunk of `chunk_size` tokens:

        A = (I + StrictLower(diag(c) P))^-1,  P_ij = sum_d k_id k_jd exp(G_id - G_jd)
        W = A diag(c) (K * exp(G))        U = A diag(beta) V

    with `c = rank1_scale * beta` (1 for delta rules, 2 for negative
    eigenvalues) and G the in-chunk cumulative log gate (absent: 0), per
    row (P = K K^T * exp(G_i - G_j)) or per key (kda). The
    inverse is never formed: W and U come from forward substitution in
    fp32. k is [B, T, H, K] (value head hv reads head hv / (HV / H)), v is
    [B, T, HV, V], beta [B, T, HV], gates [B, T, HV] or [B, T, HV, K]; W is [B, T, HV, K] and
    U is [B, T, HV, V]. U is f32; W is f32 or the keys' element type, rounded
    once from its fp32 value (it only ever multiplies states, so its bf16
    rounding costs about as much accuracy as the inputs' own; U's would not:
    D = U - W S cancels); with f32 keys (normalised from 16-bit inputs, as
    the backward takes them) either 16-bit type. W may also be split, [B,
    T, HV, 2, K] in the keys' 16-bit type (either, with f32 keys):
    `w[..., 0, :]` is the fp32 W rounded, `w[..., 1, :]` the
    rounding of what that leaves, and W = hi + lo to about 16 significant
    bits. A split W is what 16-bit tensor cores take without converting it
    (the negative-eigenvalue rule, whose reflections do not damp a rounded
    W's error, keeps that precision at 16-bit operand cost).

    With `raw_gates` g [B, T, HV] in place of `gates`, the op sums them
    itself, G = chunk_cumsum(g) in chunks of `chunk_size`, and returns G as
    a third result for the ops after it: the form in which
    `linattn-fuse-chunk-cumsum` folds a `linattn.chunk_cumsum` into its
    first reader.

    With `k_rnorm` r [B, T, H] f32 (`linattn.rnorm` of k: the normalisation
    of `qk_l2norm` factored), the coefficients are c = rank1_scale beta r^2
    and b = beta r in place of c and beta, with k itself:

        A = (I + StrictLower(diag(c) P))^-1,  W = A diag(c) (K * exp(G)),
        U = A diag(b) V

    the factors of the keys k r, with rows scaled by r (W = diag(r) W^, U =
    diag(r) U^, A = diag(r) A^ diag(r)^-1 for the normalised keys' W^, U^,
    A^), and so the state pass over k makes the normalised keys' states.
    With `k_l2norm` (no `k_rnorm`) the op forms r = rnorm(k) itself from
    the key rows it reads: the same results without an r operand
    (`linattn-fuse-row-norms` makes this form).

    ```mlir
    %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G)
        {chunk_size = 64 : i64, rank1_scale = 1.0 : f32}
        : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>,
           tensor<?x?x8xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xf32>)
    %w2, %u2, %G2 = linattn.ut_transform k(%k) v(%v) beta(%beta) raw_gates(%g)
        {chunk_size = 64 : i64, rank1_scale = 1.0 : f32}
        : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>,
           tensor<?x?x8xf32>)
        -> (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xf32>, tensor<?x?x8xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$k,
                       Optional<AnyRankedTensor>:$k_rnorm,
                       AnyRankedTensor:$v,
                       AnyRankedTensor:$beta,
                       Optional<AnyRankedTensor>:$gates,
                       Optional<AnyRankedTensor>:$raw_gates,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_size,
                       F32Attr:$rank1_scale,
                       UnitAttr:$k_l2norm);
  let results = (outs AnyRankedTensor:$w, AnyRankedTensor:$u,
                      Optional<AnyRankedTensor>:$cumulative_gates);
  let assemblyFormat = [{
    `k` `(` $k `)` (`k_rnorm` `(` $k_rnorm^ `)`)? `v` `(` $v `)` `beta` `(` $beta `)`
    (`gates` `(` $gates^ `)`)? (`raw_gates` `(` $raw_gates^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LinAttn_ChunkStatePassOp : LinAttn_Op<"chunk_state_pass",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "the inter-chunk state pass: chunk states and new values";
  let description = [{
    Carries the state across chunks, sequentially, for every sequence and
    value head, and returns the new values D [B, T, HV, V], the state
    entering every chunk [B, NC, HV, K, V] (NC = ceil(T / chunk_size)) and
    the final state [B, HV, K, V]. The final state is f32; D and the chunk
    states may be stored narrower (bf16/f16: they only feed the output,
    and the state carried between chunks and D are computed in fp32; D is
    rounded only after its cancellation D = U - W S_n).

    Three forms, by operands:
    - no `w`, no `beta` (kinds without a rank-1 term): D = u.
    - `w` (WY form, after `linattn.ut_transform`, plain or split as it
      makes it): D = u - W S_n.
    - `beta` (rank-1 product form, before `linattn-lower-rank1-to-wy`): the
      chunk's product of rank-1 transitions applied token by token to the
      decayed state `S'_t = diag(exp(g_t)) S_{t-1}`,
      `D_t = beta_t u_t - rank1_scale beta_t S'_t^T k_t`,
      `S_t = S'_t + k_t D_t^T`; with `k_rnorm` r (`qk_l2norm` factored,
      as `linattn.ut_transform` takes it) the coefficients are r beta_t
      and rank1_scale r^2 beta_t.
    In every form `S_{n+1} = diag(exp(G_C)) S_n + (K * exp(G_C - G))^T D`,
    with `gates` the in-chunk cumulative log gates, [B, T, HV] or per key
    [B, T, HV, K].

    With `segment_chunks = M` the pass restarts every M chunks: the
    chunks are cut into NS = max(1, ceil(NC / M)) segments that run
    independently, and `final_state` is [B, NS, HV, K, V]: the state at
    every segment's end. Two forms, by `initial_state`'s rank:
    - [B, HV, K, V] (no rank-1 term, gates per row or none: transitions
      that are scalars): segment 0 starts from `initial_state`, the others
      from zero. The chunk states are each segment's local ones;
      `linattn.segment_carries` composes the ends into what each segment
      lacks, and `linattn.chunk_output` adds it back (its `carries`).
    - [B, NS, HV, K, V] (any transitions but the rank-1 product form):
      segment s starts from `initial_state[:, s]`, the state entering it
      as `linattn.segment_entries` composes it, so the chunk states and
      new values are the unsegmented pass's.

    With `decayed_keys` (per-key gates, without `beta`), `k` holds the keys
    already decayed to their chunk's end, Kd = k * exp(G_C - G), one per
    value head [B, T, HV, K], and `gates` the chunks' total log gates G_C
    [B, NC, HV, K], as a `linattn.chunk_cumsum` with `keys` returns them:
    `S_{n+1} = diag(exp(G_C)) S_n + Kd^T D`.

    ```mlir
    %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w)
        gates(%G) state(%s0) {chunk_size = 64 : i64}
        : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xf32>, tensor<?x?x8x128xf32>,
           tensor<?x?x8xf32>, tensor<?x8x128x128xf32>)
        -> (tensor<?x?x8x128xf32>, tensor<?x?x8x128x128xf32>, tensor<?x8x128x128xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$k,
                       Optional<AnyRankedTensor>:$k_rnorm,
                       AnyRankedTensor:$u,
                       Optional<AnyRankedTensor>:$w,
                       Optional<AnyRankedTensor>:$beta,
                       Optional<AnyRankedTensor>:$gates,
                       AnyRankedTensor:$initial_state,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_size,
                       OptionalAttr<F32Attr>:$rank1_scale,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$segment_chunks,
                       UnitAttr:$decayed_keys);
  let results = (outs AnyRankedTensor:$new_values,
                      AnyRankedTensor:$chunk_states,
                      AnyRankedTensor:$final_state);
  let assemblyFormat = [{
    `k` `(` $k `)` (`k_rnorm` `(` $k_rnorm^ `)`)? `u` `(` $u `)` (`w` `(` $w^ `)`)? (`beta` `(` $beta^ `)`)?
    (`gates` `(` $gates^ `)`)? `state` `(` $initial_state `)` attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LinAttn_ChunkTransitionsOp : LinAttn_Op<"chunk_transitions",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "each chunk as one affine map S_{n+1} = M_n S_n + B_n";
  let description = [{
    With `Kd_j = k_j * exp(G_C - G_j)` (G the in-chunk cumulative log gate,
    G_C its value at the chunk's last token):

        WY form (with w):  M_n = diag(exp(G_C)) - Kd^T W  (dense [K, K])
                           B_n = Kd^T U
        otherwise:         M_n = diag(exp(G_C)), returned as its log G_C
                           ([HV] or per key [HV, K]; 0 without gates)
                           B_n = Kd^T u

    Results: `transitions` [B, NC, HV, K, K] (WY form) or log decays
    [B, NC, HV] / [B, NC, HV, K], and `offsets` [B, NC, HV, K, V], all f32.
    Composing them with a `linattn.scan` over NC gives every chunk's
    entering state at once: the segment scan.

    ```mlir
    %m, %b = linattn.chunk_transitions k(%k) u(%u) w(%w) gates(%G)
        {chunk_size = 64 : i64}
        : (tensor<1x?x8x128xbf16>, tensor<1x?x8x128xf32>, tensor<1x?x8x128xf32>,
           tensor<1x?x8xf32>) -> (tensor<1x?x8x128x128xf32>, tensor<1x?x8x128x128xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$k, AnyRankedTensor:$u,
                       Optional<AnyRankedTensor>:$w,
                       Optional<AnyRankedTensor>:$gates,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_size);
  let results = (outs AnyRankedTensor:$transitions, AnyRankedTensor:$offsets);
  let assemblyFormat = [{
    `k` `(` $k `)` `u` `(` $u `)` (`w` `(` $w^ `)`)? (`gates` `(` $gates^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LinAttn_ChunkNewValuesOp : LinAttn_Op<"chunk_new_values", [Pure]> {
  let summary = "the new values D = U - W S_n of every chunk";
  let description = [{
    Given every chunk's entering state S_n [B, NC, HV, K, V]:
    `D_t = u_t - W_t^T S_n` for t in chunk n (WY form, with w), or
    `D_t = u_t` (no rank-1 term). D is [B, T, HV, V] f32.

    ```mlir
    %d = linattn.chunk_new_values u(%u) w(%w) states(%states) {chunk_size = 64 : i64}
        : (tensor<1x?x8x128xf32>, tensor<1x?x8x128xf32>, tensor<1x?x8x128x128xf32>)
        -> tensor<1x?x8x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$u, Optional<AnyRankedTensor>:$w,
                       AnyRankedTensor:$chunk_states,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_size);
  let results = (outs AnyRankedTensor:$new_values);
  let assemblyFormat = [{
    `u` `(` $u `)` (`w` `(` $w^ `)`)? `states` `(` $chunk_states `)` attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LinAttn_SegmentCarriesOp : LinAttn_Op<"segment_carries", [Pure]> {
  let summary = "the state each segment of a segmented state pass lacks";
  let description = [{
    Composes the local end states E_s [B, NS, HV, K, V] of a
    `linattn.chunk_state_pass` with `segment_chunks = M` along the
    segments, for every sequence, value head and state element:

        C_0 = 0,  C_{s+1} = exp(L_s) C_s + E_s,  final = C_NS

    where L_s is the sum of the chunk totals G_C(m) = G[b, min(chunk_size
    (m + 1), T) - 1, hv] over the chunks m of segment s (`gates` the
    in-chunk cumulative log gates [B, T, HV]; L_s = 0 without them). The
    state entering chunk n of segment s is its local state plus
    exp(sum of G_C(m) for m from s M to n - 1) C_s. Returns the carries C
    [B, NS, HV, K, V] (C_0 = 0 included; they only feed the output, so
    they may be bf16/f16) and the f32 final state [B, HV, K, V].

    ```mlir
    %carries, %final = linattn.segment_carries ends(%ends) gates(%G)
        {chunk_size = 64 : i64, segment_chunks = 64 : i64}
        : (tensor<?x?x8x128x128xf32>, tensor<?x?x8xf32>)
        -> (tensor<?x?x8x128x128xbf16>, tensor<?x8x128x128xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$ends,
                       Optional<AnyRankedTensor>:$gates,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_size,
                       ConfinedAttr<I64Attr, [IntPositive]>:$segment_chunks);
  let results = (outs AnyRankedTensor:$carries, AnyRankedTensor:$final_state);
  let assemblyFormat = [{
    `ends` `(` $ends `)` (`gates` `(` $gates^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LinAttn_SegmentMapsOp : LinAttn_Op<"segment_maps",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "each segment of M chunks as one affine map of the state";
  let description = [{
    The state pass over segment s (chunks s M .. min((s + 1) M, NC) - 1)
    maps the state entering it to the state leaving it by an affine map
    `S -> A_s S + E_s`, A_s [K, K] the product of the chunks' transitions
    (dense with a rank-1 term: diag(exp(G_C)) (I - Kd^T W) per chunk in WY
    form) and E_s [K, V] the state the segment makes from zero. Returns
    `maps` [B, NS, HV, K, K + V] f32, [A_s | E_s] side by side: exactly the
    final states of a `linattn.chunk_state_pass` with the same operands
    over u' = [0 | u] (K zero columns, then u), every segment starting
    from [I | 0]. The segments run independently, so a few long chains
    become NS times as many short ones; `linattn.segment_entries` then
    composes the maps into every segment's entering state, and a
    `linattn.chunk_state_pass` with those states (`segment_chunks`, a
    [B, NS, HV, K, V] `initial_state`) makes the chunk states and new
    values. Operands as `linattn.chunk_state_pass` takes them (no `beta`).

    ```mlir
    %maps = linattn.segment_maps k(%k) u(%u) w(%w) gates(%G)
        {chunk_size = 64 : i64, segment_chunks = 16 : i64}
        : (tensor<1x?x8x128xbf16>, tensor<1x?x8x128xbf16>, tensor<1x?x8x128xbf16>,
           tensor<1x?x8xf32>) -> tensor<1x?x8x128x256xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$k, AnyRankedTensor:$u,
                       Optional<AnyRankedTensor>:$w,
                       Optional<AnyRankedTensor>:$gates,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_size,
                       ConfinedAttr<I64Attr, [IntPositive]>:$segment_chunks,
                       UnitAttr:$decayed_keys);
  let results = (outs AnyRankedTensor:$maps);
  let assemblyFormat = [{
    `k` `(` $k `)` `u` `(` $u `)` (`w` `(` $w^ `)`)? (`gates` `(` $gates^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LinAttn_SegmentEntriesOp : LinAttn_Op<"segment_entries", [Pure]> {
  let summary = "the state entering every segment, from the segments' maps";
  let description = [{
    Composes the maps [A_s | E_s] of `linattn.segment_maps` ([B, NS, HV,
    K, K + V]) along the segments from the initial state S_0 [B, HV, K, V]:

        C_0 = S_0,  C_{s+1} = A_s C_s + E_s,  final = C_NS

    Returns the entering states C [B, NS, HV, K, V] (C_0 included) and the
    final state [B, HV, K, V], both f32.

    ```mlir
    %entries, %final = linattn.segment_entries maps(%maps) state(%s0)
        : (tensor<1x?x8x128x256xf32>, tensor<1x8x128x128xf32>)
        -> (tensor<1x?x8x128x128xf32>, tensor<1x8x128x128xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$maps, AnyRankedTensor:$initial_state);
  let results = (outs AnyRankedTensor:$entries, AnyRankedTensor:$final_state);
  let assemblyFormat = [{
    `maps` `(` $maps `)` `state` `(` $initial_state `)` attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LinAttn_ChunkOutputOp : LinAttn_Op<"chunk_output",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "outputs of every chunk from its entering state and new values";
  let description = [{
    For token i of chunk n (of `chunk_size` tokens):

        o_i = scale (S_n^T (q_i * exp(G_i))
                     + sum over j <= i in the chunk of
                       (sum_k q_ik k_jk exp(G_ik - G_jk)) D_j)

    q, k [B, T, H, K]; new values D [B, T, HV, V] and chunk states
    [B, NC, HV, K, V] (each f32, bf16 or f16); gates (in-chunk cumulative,
    optional) [B, T, HV] or [B, T, HV, K]. The result is [B, T, HV, V] in
    its declared element type.

    With `carries` (and `segment_chunks = M`, from a segmented
    `linattn.chunk_state_pass` and `linattn.segment_carries`), the chunk
    states are segment-local and chunk n of segment s = n / M enters with

        S_n = states[n] + exp(sum of G_C(m) for m from s M to n - 1) C_s

    (G_C(m) the gate of chunk m's last token; row gates or none).

    With `q_rnorm` s [B, T, H] f32 (`qk_l2norm` factored: `linattn.rnorm`
    of q), o_i is the above times s_i, the output of the normalised queries
    q s. With `q_l2norm` (no `q_rnorm`) the op forms s = rnorm(q) itself
    from the query rows it reads (`linattn-fuse-row-norms`).

    ```mlir
    %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states)
        gates(%G) {chunk_size = 64 : i64, scale = 0.0883883 : f32}
        : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xf32>,
           tensor<?x?x8x128x128xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8x128xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$q,
                       Optional<AnyRankedTensor>:$q_rnorm,
                       AnyRankedTensor:$k,
                       AnyRankedTensor:$new_values,
                       AnyRankedTensor:$chunk_states,
                       Optional<AnyRankedTensor>:$gates,
                       Optional<AnyRankedTensor>:$carries,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_size,
                       F32Attr:$scale,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$segment_chunks,
                       UnitAttr:$q_l2norm);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    `q` `(` $q `)` (`q_rnorm` `(` $q_rnorm^ `)`)? `k` `(` $k `)` `new_values` `(` $new_values `)`
    `states` `(` $chunk_states `)` (`gates` `(` $gates^ `)`)?
    (`carries` `(` $carries^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}


def LinAttn_ChunkStatePassOutputOp : LinAttn_Op<"chunk_state_pass_output",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "the state pass with every chunk's output formed in it";
  let description = [{
    A `linattn.chunk_state_pass` and the `linattn.chunk_output` that alone
    reads its chunk states and new values, as one op: the same results as

        %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w)
            gates(%G) state(%s0) {chunk_size}
        %o = linattn.chunk_output q(%q) k(%k) new_values(%d)
            states(%states) gates(%G) {chunk_size, scale, q_l2norm}

    with D and the chunk states S_n held in k's element type, so that
    neither is stored: on the GPU, the state pass's block forms every
    chunk's output from S_n and D_n as it makes them
    (`linattn-fuse-chunk-output` folds the pair where that kernel exists;
    the CPU loops lower the op as the two ops it stands for). Operands as
    the two ops take them, unsegmented: W (rounded once or split) or none
    (D = u; the GPU kernel takes the WY form); row gates [B, T, HV] or
    none; one state [B, HV, K, V]. Results: the output [B, T, HV, V] and
    the f32 final state [B, HV, K, V].

    ```mlir
    %o, %final = linattn.chunk_state_pass_output q(%q) k(%k) u(%u) w(%w)
        gates(%G) state(%s0) {chunk_size = 64 : i64, scale = 0.0883883 : f32}
        : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xf32>,
           tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x8x128x128xf32>)
        -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$q,
                       AnyRankedTensor:$k,
                       AnyRankedTensor:$u,
                       Optional<AnyRankedTensor>:$w,
                       Optional<AnyRankedTensor>:$gates,
                       AnyRankedTensor:$initial_state,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_size,
                       F32Attr:$scale,
                       UnitAttr:$q_l2norm);
  let results = (outs AnyRankedTensor:$output,
                      AnyRankedTensor:$final_state);
  let assemblyFormat = [{
    `q` `(` $q `)` `k` `(` $k `)` `u` `(` $u `)` (`w` `(` $w^ `)`)?
    (`gates` `(` $gates^ `)`)? `state` `(` $initial_state `)` attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Replaces the op with the two ops it stands for (the new values and
    /// chunk states in k's element type) and erases it.
    void unfuse();
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Chunked backward ops
//
// The adjoint of the chunked algorithm (linattn-recurrence-grad-to-chunked):
// the forward's chunk ops recompute W, U, D and the chunk states S_n; then,
// with dO the output gradient and H_n = dL/dS_{n+1} the gradient of the
// state leaving chunk n,
//
//   dD      = scale (Q K^T * exp(G_i - G_j) * causal)^T dO + Kd H_n
//   H_{n-1} = exp(G_C) H_n + scale (Q * exp(G))^T dO - W^T dD
//
// (Kd = K * exp(G_C - G)) runs backwards over the chunks, and every other
// gradient is local to a chunk (linattn.chunk_grad).
//===----------------------------------------------------------------------===//

def LinAttn_ChunkStatePassGradOp : LinAttn_Op<"chunk_state_pass_grad",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "the reverse inter-chunk pass: state gradients and dL/dD";
  let description = [{
    The adjoint of `linattn.chunk_state_pass` and the `D` input of
    `linattn.chunk_output`, run from the last chunk back to the first for
    every sequence and value head. With `H` starting at
    `grad_final_state` (dL/dS_T) and, for chunk n with tokens i, j, last
    token C and in-chunk cumulative log gates G (per row or per key; 0
    without `gates`):

        grad_chunk_states[n] = H                          (dL/dS_{n+1})
        dD_i = scale sum_{j >= i} (sum_d q_jd k_id exp(G_jd - G_id)) dO_j
               + sum_d k_id exp(G_Cd - G_id) H_d
        H   <- diag(exp(G_C)) H + scale (Q * exp(G))^T dO - W^T dD

    (the `W` term in the WY form only, with `w` from
    `linattn.ut_transform`), and `grad_initial_state = H` after chunk 0.
    Every state column evolves on its own: the pass is parallel over
    (b, hv, value column) and sequential over chunks.

    q, k [B, T, H, K] (value head hv reads head hv / (HV / H)), w as
    `linattn.ut_transform` makes it (f32, rounded or split), gates [B, T, HV] or [B, T, HV, K] f32,
    grad_output [B, T, HV, V], grad_final_state [B, HV, K, V] f32.
    Results, all f32: grad_new_values [B, T, HV, V], grad_chunk_states
    [B, NC, HV, K, V] and grad_initial_state [B, HV, K, V].

    With `q_rnorm` s [B, T, H] f32 (`qk_l2norm` factored, as
    `linattn.chunk_output` takes it), every q_j above is s_j q_j: the pass
    of the output o = s o' (k and w then come as the factored
    `linattn.ut_transform` leaves them).

    ```mlir
    %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) w(%w)
        gates(%G) grad_output(%do) grad_final_state(%ds)
        {chunk_size = 64 : i64, scale = 0.125 : f32}
        : (tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>,
           tensor<?x?x4xf32>, tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>)
        -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64x64xf32>, tensor<?x4x64x64xf32>)
    ```
  }];
  let arguments = (ins AnyRankedTensor:$q,
                       Optional<AnyRankedTensor>:$q_rnorm,
                       AnyRankedTensor:$k,
                       Optional<AnyRankedTensor>:$w,
                       Optional<AnyRankedTensor>:$gates,
                       AnyRankedTensor:$grad_output,
                       AnyRankedTensor:$grad_final_state,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_size,
                       F32Attr:$scale);
  let results = (outs AnyRankedTensor:$grad_new_values,
                      AnyRankedTensor:$grad_chunk_states,
                      AnyRankedTensor:$grad_initial_state);
  let assemblyFormat = [{
    `q` `(` $q `)` (`q_rnorm` `(` $q_rnorm^ `)`)? `k` `(` $k `)` (`w` `(` $w^ `)`)? (`gates` `(` $gates^ `)`)?
    `grad_output` `(` $grad_output `)`
    `grad_final_state` `(` $grad_final_state `)` attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LinAttn_ChunkGradOp : LinAttn_Op<"chunk_grad",
    [Pure, AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "every gradient local to a chunk, from its boundary gradients";
  let description = [{
    Given each chunk's entering state S_n and new values D (the forward's
    `linattn.chunk_state_pass`), the gradients dD and H_n = dL/dS_{n+1}
    (`linattn.chunk_state_pass_grad`) and dO, returns the gradients of the
    chunk's inputs, chunk by chunk and in parallel. With E_ij = exp(G_i -
    G_j) (per key d for per-key gates), c = rank1_scale beta, C the chunk's
    last token:

    - the output: `dq_i += scale (S_n dO_i) * exp(G_i)`; with
      `dP_ij = scale dO_i . D_j` (j <= i), `dq_i += sum_j dP_ij k_j E_ij`,
      `dk_j += sum_i dP_ij q_i E_ij`;
    - the state update `S_{n+1} = exp(G_C) S_n + Kd^T D`:
      `dk_j += (H_n D_j) * exp(G_C - G_j)`;
    - the WY factors (with `beta`; `w`, `u` the forward's W and U):
      `dW = -dD S_n^T`, `dU = dD`; `Y = A^T dW`, `Z = A^T dU` by back
      substitution through `(I + L)^T` (L = StrictLower(diag(c) P),
      P_ij = sum_d k_id k_jd E_ij); then `dk_i += c_i Y_i * exp(G_i)`,
      `dv_i = beta_i Z_i`, `dL_ij = -(Y_i . W_j + Z_i . U_j)` for i > j,
      `dP_ij = c_i dL_ij` back to both keys, and
      `dbeta_i = rank1_scale (Y_i . (k_i * exp(G_i)) + sum_j dL_ij P_ij)
      + Z_i . v_i`. Without `beta`, `dv = dD`.
    - the gates: every `exp(G ...)` factor above adds its share to dL/dG
      (the factor's exponent times the term it scales, per key), and
      `grad_gates` is the gradient of the raw log gates, the reverse
      cumulative sum of dL/dG inside each chunk (summed over keys for
      gates per row). Only with `gates` and when the result is asked for
      (constant decays have none).

    q, k [B, T, H, K] (f32 after qk_l2norm), v [B, T, HV, V], beta
    [B, T, HV], gates [B, T, HV] or [B, T, HV, K] (in-chunk cumulative,
    f32), w as `linattn.ut_transform` makes it (f32, rounded or split) and
    u [B, T, HV, V] f32, new_values,
    grad_output and grad_new_values [B, T, HV, V], chunk_states (f32 or
    16-bit, read as stored) and grad_chunk_states (f32) [B, NC, HV, K,
    V]. Results: grad_q and grad_k per
    value head [B, T, HV, K] f32 (`linattn.qk_grad` sums them over a
    head's value heads); where each q/k head has one value head (HV = H)
    they may instead be q's and k's gradients in q's and k's element type,
    rounded once from the f32 sums (what `linattn.qk_grad` without
    `qk_l2norm` would return, so that none is needed); grad_v [B, T, HV,
    V] in its declared type, then
    grad_gates (the gates' shape, f32) and grad_beta ([B, T, HV] f32) when
    present.

    With `q_rnorm` s and `k_rnorm` r ([B, T, H] f32: `qk_l2norm` factored,
    after a `linattn.ut_transform` with `k_rnorm`; the WY form only): dO_i
    enters as s_i dO_i, c = rank1_scale beta r^2 and b = beta r (so dv_i =
    b_i Z_i and dbeta_i = rank1_scale r_i^2 (Y_i . (k_i * exp(G_i)) + sum_j
    dL_ij P_ij) + r_i Z_i . v_i), and grad_q, grad_k are the gradients with
    respect to q and k themselves, s and r held fixed (per value head, f32:
    `linattn.qk_grad {factored}` takes them back to the spec's q and k).

    ```mlir
    %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v)
        beta(%beta) gates(%G) w(%w) u(%u) new_values(%d) states(%s)
        grad_output(%do) grad_new_values(%dd) grad_states(%hs)
        {chunk_size = 64 : i64, scale = 0.125 : f32, rank1_scale = 1.0 : f32}
        : (...) -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>,
                    tensor<?x?x4x64xbf16>)
          grad_gates tensor<?x?x4xf32> grad_beta tensor<?x?x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$q,
                       Optional<AnyRankedTensor>:$q_rnorm,
                       AnyRankedTensor:$k,
                       Optional<AnyRankedTensor>:$k_rnorm,
                       AnyRankedTensor:$v,
                       Optional<AnyRankedTensor>:$beta,
                       Optional<AnyRankedTensor>:$gates,
                       Optional<AnyRankedTensor>:$w,
                       Optional<AnyRankedTensor>:$u,
                       AnyRankedTensor:$new_values,
                       AnyRankedTensor:$chunk_states,
                       AnyRankedTensor:$grad_output,
                       AnyRankedTensor:$grad_new_values,
                       AnyRankedTensor:$grad_chunk_states,
                       ConfinedAttr<I64Attr, [IntPositive]>:$chunk_size,
                       F32Attr:$scale,
                       OptionalAttr<F32Attr>:$rank1_scale);
  let results = (outs AnyRankedTensor:$grad_q, AnyRankedTensor:$grad_k,
                      AnyRankedTensor:$grad_v,
                      Optional<AnyRankedTensor>:$grad_gates,
                      Optional<AnyRankedTensor>:$grad_beta);
  let assemblyFormat = [{
    `q` `(` $q `)` (`q_rnorm` `(` $q_rnorm^ `)`)? `k` `(` $k `)`
    (`k_rnorm` `(` $k_rnorm^ `)`)? `v` `(` $v `)` (`beta` `(` $beta^ `)`)?
    (`gates` `(` $gates^ `)`)? (`w` `(` $w^ `)`)? (`u` `(` $u^ `)`)?
    `new_values` `(` $new_values `)` `states` `(` $chunk_states `)`
    `grad_output` `(` $grad_output `)`
    `grad_new_values` `(` $grad_new_values `)`
    `grad_states` `(` $grad_chunk_states `)` attr-dict
    `:` `(` type(operands) `)` `->` `(` type($grad_q) `,` type($grad_k) `,`
    type($grad_v) `)` (`grad_gates` type($grad_gates)^)?
    (`grad_beta` type($grad_beta)^)?
  }];
  let hasVerifier = 1;
}

def LinAttn_QKGradOp : LinAttn_Op<"qk_grad", [Pure]> {
  let summary = "a query/key input's gradient from its value heads' shares";
  let description = [{
    `dy[b, t, h, :] = sum of grad[b, t, hv, :]` over the HV / H value heads
    hv of query/key head h (heads h * HV / H up to (h + 1) * HV / H - 1),
    then, with `qk_l2norm`, back through the normalisation `y = x r`,
    `r = (|x|^2 + 1e-6)^-1/2`: `dx = r (dy - y (y . dy))`; without it
    `dx = dy`. With `factored` (and `qk_l2norm`), dy is the gradient of the
    factored form (`linattn.chunk_grad` with `q_rnorm` and `k_rnorm`), with
    respect to x itself with r held fixed: `dx = dy - y (y . dy)` (the
    normalised recurrence does not change under x -> a x, r -> r / a, so
    r's share is -y (y . dy)). input x [B, T, H, K] (the spec's q or k),
    grad [B, T, HV, K] f32; the result has x's shape in its declared
    element type.

    ```mlir
    %dq = linattn.qk_grad %q grad(%dq_heads) {qk_l2norm}
        : (tensor<?x?x4x64xbf16>, tensor<?x?x8x64xf32>) -> tensor<?x?x4x64xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$grad,
                       UnitAttr:$qk_l2norm, UnitAttr:$factored);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `grad` `(` $grad `)` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // LINATTN_DIALECT_LINATTN_IR_LINATTNOPS_TD
