//===- LinAttnDialect.td - LinAttn dialect definition ------*- tablegen -*-===//
//
// The LinAttn dialect: linear-attention recurrences as IR.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_DIALECT_LINATTN_IR_LINATTNDIALECT_TD
#define LINATTN_DIALECT_LINATTN_IR_LINATTNDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def LinAttn_Dialect : Dialect {
  let name = "linattn";
  let cppNamespace = "::mlir::linattn";
  let summary = "Linear-attention recurrences and their algorithms";
  let description = [{
    The LinAttn dialect represents the recurrence behind linear attention,
    RetNet, Mamba-2 / simple GLA, GLA, DeltaNet, Gated DeltaNet and DeltaNet
    with negative eigenvalues:

        S_t = M_t S_{t-1} + b_t k_t v_t^T        o_t = scale * S_t^T q_t

    `linattn.recurrence` is the specification; its semantics is the
    sequential loop over t. Algorithm ops (scans, chunked state passes) and
    their lowerings must agree with that loop to rounding.
  }];
  let useDefaultAttributePrinterParser = 1;
}

class LinAttn_Op<string mnemonic, list<Trait> traits = []>
    : Op<LinAttn_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Transition kinds
//===----------------------------------------------------------------------===//

def LinAttn_TransitionKind : I32EnumAttr<"TransitionKind",
    "the transition matrix M_t of a linear-attention recurrence", [
  I32EnumAttrCase<"Identity", 0, "identity">,
  I32EnumAttrCase<"ConstantDecay", 1, "constant_decay">,
  I32EnumAttrCase<"ScalarGate", 2, "scalar_gate">,
  I32EnumAttrCase<"KeyGate", 3, "key_gate">,
  I32EnumAttrCase<"Delta", 4, "delta">,
  I32EnumAttrCase<"GatedDelta", 5, "gated_delta">,
  I32EnumAttrCase<"NegEigDelta", 6, "negeig_delta">,
  I32EnumAttrCase<"KeyGatedDelta", 7, "kda">
]> {
  let cppNamespace = "::mlir::linattn";
  let genSpecializedAttr = 0;
}

def LinAttn_TransitionKindAttr
    : EnumAttr<LinAttn_Dialect, LinAttn_TransitionKind, "transition"> {
  let summary = "transition kind: identity, constant_decay, scalar_gate, "
                "key_gate, delta, gated_delta, negeig_delta or kda";
}

#endif // LINATTN_DIALECT_LINATTN_IR_LINATTNDIALECT_TD
