//===- RecurrenceUtils.h - Helpers for rewriting recurrences ----*- C++ -*-===//
//
// Pieces that several algorithm rewrites of linattn.recurrence (and of its
// adjoint, linattn.recurrence_grad: the helpers templated on SpecOp take
// either) share.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_TRANSFORMS_RECURRENCEUTILS_H
#define LIB_TRANSFORMS_RECURRENCEUTILS_H

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::linattn {

/// The per-token log gate of `op` as an f32 tensor: the gate operand, or for
/// constant_decay g = log(gamma_hv) on every token ([B, T, HV]); null for
/// kinds without a gate.
template <typename SpecOp>
Value buildLogGate(OpBuilder &b, SpecOp op);

/// q and k as the algorithms read them: L2-normalised (linattn.l2norm, its
/// results of element type `normalisedElem`) when the op says qk_l2norm, else
/// unchanged.
template <typename SpecOp>
std::pair<Value, Value> buildQueriesAndKeys(OpBuilder &b, SpecOp op,
                                            Type normalisedElem);

/// The reciprocal row norms of q and k (linattn.rnorm: s, r [B, T, H] f32)
/// where the chunked forms take `op`'s qk_l2norm factored (LinAttnOps.td,
/// "Chunked-state algorithm ops"): a kind with a rank-1 term, whose
/// coefficients take r^2 and r (c = rank1_scale beta r^2, b = beta r) while
/// q and k stay exact in their own type; none otherwise (no qk_l2norm, or
/// no rank-1 term: buildQueriesAndKeys normalises q and k then).
template <typename SpecOp>
std::optional<std::pair<Value, Value>> buildFactoredNorms(OpBuilder &b,
                                                         SpecOp op);

/// Dynamic sizes of the [B, T] prefix of q, for building [B, T, ...] tensors.
template <typename SpecOp>
SmallVector<Value> batchAndSeqSizes(OpBuilder &b, SpecOp op);

/// constant_decay's gamma_hv on every token ([B, T, HV] f32).
template <typename SpecOp>
Value buildConstantDecays(OpBuilder &b, SpecOp op);

/// The type of the WY factor W that `linattn.ut_transform` makes for keys
/// of `keyType` [B, T, H, K] and `numVHeads` value heads: for the delta
/// rule (rank1Scale 1) rounded to the keys' type; for the negative-
/// eigenvalue rule f32, or split into two 16-bit parts [B, T, HV, 2, K]
/// with `allowSplit` and 16-bit keys. Why: LowerRank1ToWY.cpp.
RankedTensorType getWYWeightType(RankedTensorType keyType, int64_t numVHeads,
                                 float rank1Scale, bool allowSplit);

/// How a scan element holds a diagonal transition.
enum class ScanDecay {
  None,          ///< no transition: the identity
  Log,           ///< its log g (gates given in log space)
  Multiplicative ///< the decay m itself (constant decays, exact as given)
};

/// Builds the combiner of a scan of affine maps whose transition is a
/// decay, broadcast over B's trailing dims:
///   Log:             (g1, B1) then (g2, B2) = (g1 + g2, exp(g2) B1 + B2),
///   Multiplicative:  (m1, B1) then (m2, B2) = (m1 m2,   m2 B1 + B2),
///   None (one input): B1 + B2.
void buildDecayCombiner(OpBuilder &b, ScanOp scan, ScanDecay form);

/// Builds the combiner of a scan of dense affine maps, per head:
/// (M1, B1) then (M2, B2) = (M2 M1, M2 B1 + B2).
void buildDenseAffineCombiner(OpBuilder &b, ScanOp scan);

/// An f32 tensor of `shape` filled with `value` (zeros by default).
Value buildZeros(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                 ValueRange dynamicSizes, float value = 0.0f);

/// Whether a state pass over `values` [B, T, HV, V] (static HV and V) has
/// few chains: B * HV * V at most `maxStateColumns`, as an i1. The run-time
/// condition of segments and of narrow and wide state-pass blocks.
Value buildFewStateColumns(OpBuilder &b, Location loc, Value values,
                           int64_t maxStateColumns);

/// Replaces `op` (a state pass) by an scf.if on `cond` yielding two clones
/// of it, the one in the then (`markThen`) or else branch marked with
/// chunked_kernels::kStateColumnsAttrName = `columns`: a state-pass block
/// width chosen at run time (linattn-narrow-state-blocks,
/// linattn-widen-state-blocks).
void branchOnStateColumns(Operation *op, Value cond, bool markThen,
                          int64_t columns);

} // namespace mlir::linattn

#endif // LIB_TRANSFORMS_RECURRENCEUTILS_H
