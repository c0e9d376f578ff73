//===- RecurrenceUtils.h - Helpers for rewriting recurrences ----*- C++ -*-===//
//
// Pieces that several algorithm rewrites of linattn.recurrence share.
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
Value buildLogGate(OpBuilder &b, RecurrenceOp op);

/// q and k as the algorithms read them: L2-normalised (linattn.l2norm) when
/// the op says qk_l2norm, else unchanged.
std::pair<Value, Value> buildQueriesAndKeys(OpBuilder &b, RecurrenceOp op);

/// Dynamic sizes of the [B, T] prefix of q, for building [B, T, ...] tensors.
SmallVector<Value> batchAndSeqSizes(OpBuilder &b, RecurrenceOp op);

} // namespace mlir::linattn

#endif // LIB_TRANSFORMS_RECURRENCEUTILS_H
