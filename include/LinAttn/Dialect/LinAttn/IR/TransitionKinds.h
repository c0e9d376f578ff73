//===- TransitionKinds.h - What each transition kind means ------*- C++ -*-===//
//
// One table, one row per `TransitionKind`, of what the kind means:
//
//   M_t = (I - c_t k_t k_t^T) D_t,   b_t = beta_t (1 without a rank-1 term)
//
// with D_t the decay (none, a constant gamma per value head, exp(g_t) of a
// scalar gate, diag(exp(g_t)) of a per-key gate) and c_t = rank1Scale beta_t
// (no rank-1 term for rank1Scale = 0). The state decays first, then the
// rank-1 term applies to the decayed state: for a scalar D_t the order is
// immaterial; for per-key gates (kda) it is that of Kimi Linear and fla's
// chunk_kda, whose chunked form is WY/UT with keys decayed per key (the
// other order, D_t (I - c k k^T), would need keys divided by the decay). The verifier (which operands a kind
// takes), the loops that define the semantics, the algorithm passes (which
// apply, the UT transform's scale) and the cost model read it here; a new
// kind is a row, plus the math that is really new.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_DIALECT_LINATTN_IR_TRANSITIONKINDS_H
#define LINATTN_DIALECT_LINATTN_IR_TRANSITIONKINDS_H

#include "LinAttn/Dialect/LinAttn/IR/LinAttnDialect.h"

namespace mlir::linattn {

/// How a transition decays the state.
enum class DecayForm {
  None,     ///< D_t = I
  Constant, ///< D_t = gamma_h I, gamma from the `decay` attribute
  Scalar,   ///< D_t = exp(g_t) I, gate [B, T, HV]
  PerKey,   ///< D_t = diag(exp(g_t)), gate [B, T, HV, K]
};

/// One row of the table.
struct TransitionKindInfo {
  TransitionKind kind;
  DecayForm decay;
  /// c_t = rank1Scale * beta_t; 0 for a kind without the rank-1 term
  /// (1 for the delta rule, 2 for negative eigenvalues).
  float rank1Scale;

  /// M_t has the rank-1 term (a delta rule): the kind takes `beta`, its
  /// chunked form goes through the WY/UT transform, and a composed
  /// transition is dense K x K.
  bool hasRank1() const { return rank1Scale != 0.0f; }
  /// The kind takes a `gate` operand (log space).
  bool hasGateOperand() const {
    return decay == DecayForm::Scalar || decay == DecayForm::PerKey;
  }
  /// M_t is diagonal, so that maps compose elementwise: the token-level
  /// associative scan applies.
  bool isDiagonal() const { return !hasRank1(); }
  /// M_t is a scalar times I, so that a segment's transitions compose to a
  /// scalar (linattn-segment-chunk-states).
  bool isScalar() const { return !hasRank1() && decay != DecayForm::PerKey; }
};

/// The row of `kind`.
const TransitionKindInfo &getTransitionKindInfo(TransitionKind kind);

} // namespace mlir::linattn

#endif // LINATTN_DIALECT_LINATTN_IR_TRANSITIONKINDS_H
