//===- LoopLowerings.h - The loop lowerings of the algorithm ops -*- C++ -*-===//

#ifndef LIB_CONVERSION_LINATTNTOLOOPS_LOOPLOWERINGS_H
#define LIB_CONVERSION_LINATTNTOLOOPS_LOOPLOWERINGS_H

#include "mlir/IR/Operation.h"

namespace mlir::linattn {

/// Lowers every linattn.scan under `root` to a sequential scf.for nest on
/// tensors, the combiner inlined.
void lowerScansToLoops(Operation *root);

/// Lowers every chunked-state algorithm op (linattn.l2norm, chunk_cumsum,
/// ut_transform, chunk_state_pass, chunk_output) under `root` to loops.
void lowerChunkedOpsToLoops(Operation *root);

/// Lowers every linattn.recurrence_grad under `root` to its reverse loop
/// (with checkpointed forward states), the oracle of the backward.
void lowerRecurrenceGradsToLoops(Operation *root);

} // namespace mlir::linattn

#endif // LIB_CONVERSION_LINATTNTOLOOPS_LOOPLOWERINGS_H
