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

  let arguments = (ins
    LinAttn_TransitionKindAttr:$kind,
    AnyRankedTensor:$q,
    AnyRankedTensor:$k,
    AnyRankedTensor:$v,
    Optional<AnyRankedTensor>:$gate,
    Optional<AnyRankedTensor>:$beta,
    AnyRankedTensor:$initial_state,
    OptionalAttr<F32Attr>:$scale,
    OptionalAttr<DenseF32ArrayAttr>:$decay,
    UnitAttr:$qk_l2norm
  );
  let results = (outs AnyRankedTensor:$output, AnyRankedTensor:$final_state);

  let assemblyFormat = [{
    custom<TransitionKind>($kind) `q` `(` $q `)` `k` `(` $k `)` `v` `(` $v `)`
    (`gate` `(` $gate^ `)`)? (`beta` `(` $beta^ `)`)?
    `state` `(` $initial_state `)` attr-dict
    `:` functional-type(operands, results)
  }];

  let hasVerifier = 1;

  let extraClassDeclaration = [{
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

    /// True for the kinds whose M_t has the rank-1 term beta k k^T.
    bool isDeltaRule();
    /// True for the kinds that take a gate operand.
    bool hasGateOperand();

    /// A pair of operand dimensions that must be equal at run time, with a
    /// name for messages ("B", "T", ...). The verifier checks those known
    /// statically; runners and lowerings check the dynamic ones.
    struct DimEquality {
      unsigned lhsOperand, lhsDim, rhsOperand, rhsDim;
      const char *what;
    };
    /// Every run-time dimension equality the semantics needs, for operands
    /// numbered as in getOperands().
    SmallVector<DimEquality> getDimEqualities();
    /// Name of operand `i` ("q", "k", "v", "gate", "beta", "initial_state").
    StringRef getOperandName(unsigned i);
  }];
}

#endif // LINATTN_DIALECT_LINATTN_IR_LINATTNOPS_TD
