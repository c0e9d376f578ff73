//===- LoopLowerings.h - The loop lowerings of the algorithm ops -*- C++ -*-===//

#ifndef LIB_CONVERSION_LINATTNTOLOOPS_LOOPLOWERINGS_H
#define LIB_CONVERSION_LINATTNTOLOOPS_LOOPLOWERINGS_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace mlir::linattn {

class LoopEmitter;
class ChunkStatePassGradOp;
class ChunkGradOp;
class QKGradOp;

/// Lowers every linattn.scan under `root` to a sequential scf.for nest on
/// tensors, the combiner inlined.
void lowerScansToLoops(Operation *root);

/// Lowers every chunked-state algorithm op (linattn.l2norm, chunk_cumsum,
/// ut_transform, chunk_state_pass, chunk_output) under `root` to loops.
void lowerChunkedOpsToLoops(Operation *root);

/// Lowers every linattn.recurrence_grad under `root` to its reverse loop
/// (with checkpointed forward states), the oracle of the backward.
void lowerRecurrenceGradsToLoops(Operation *root);

/// Lowers every op of the chunked backward (linattn.chunk_state_pass_grad,
/// chunk_grad, qk_grad) under `root` to loops, parallel where the op is.
void lowerChunkGradOpsToLoops(Operation *root);

/// The backward ops' lowerings, one per file.
void lowerChunkStatePassGrad(ChunkStatePassGradOp op);
void lowerChunkGrad(ChunkGradOp op);
void lowerQKGrad(QKGradOp op);

/// result[b, t, h] = the gradient of the query/key input x [B, T, H, K]
/// from its value heads' shares perValueHead [B, T, HV, K] f32: summed over
/// h's value heads, then back through the L2 normalisation with `l2norm`
/// (dx = r (dy - y (y . dy)), y = x r). Buffers; parallel over (b, t, h).
void emitQKGradient(LoopEmitter &e, Value x, Value perValueHead, Value result,
                    bool l2norm);

} // namespace mlir::linattn

#endif // LIB_CONVERSION_LINATTNTOLOOPS_LOOPLOWERINGS_H
