//===- LinAttnOps.h - LinAttn operations ------------------------*- C++ -*-===//
//
// Operations of the LinAttn dialect.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_DIALECT_LINATTN_IR_LINATTNOPS_H
#define LINATTN_DIALECT_LINATTN_IR_LINATTNOPS_H

#include "LinAttn/Dialect/LinAttn/IR/LinAttnDialect.h"
#include "LinAttn/Dialect/LinAttn/IR/TransitionKinds.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::linattn {
/// Two operand dimensions of a recurrence (or its adjoint) that must be
/// equal at run time, with a name for messages ("B", "T", ...).
struct SpecDimEquality {
  unsigned lhsOperand, lhsDim, rhsOperand, rhsDim;
  const char *what;
};
} // namespace mlir::linattn

#define GET_OP_CLASSES
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h.inc"

namespace mlir::linattn {

/// NS = max(1, ceil(numChunks / segmentChunks)), the segments of a state
/// pass with `segment_chunks` (one, holding the initial state, when there
/// are no chunks); dynamic for a dynamic numChunks.
int64_t segmentCount(int64_t numChunks, int64_t segmentChunks);

/// Whether W ([B, T, HV, 2, K], 16-bit) is held split: W = w[:, :, :, 0] +
/// w[:, :, :, 1], the rounding of the fp32 W and the rounding of what it
/// leaves (`linattn.ut_transform`).
bool isSplitW(Type wType);

} // namespace mlir::linattn

#endif // LINATTN_DIALECT_LINATTN_IR_LINATTNOPS_H
