//===- LoopLowerings.h - The loop lowerings of the algorithm ops -*- C++ -*-===//

#ifndef LIB_CONVERSION_LINATTNTOLOOPS_LOOPLOWERINGS_H
#define LIB_CONVERSION_LINATTNTOLOOPS_LOOPLOWERINGS_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
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

/// What linattn.chunk_grad's loop lowering hands a kernel that computes
/// its key gradients (dq, dk and the gates' gradient) in place of its loops:
/// the op's inputs as buffers, the WY factors' loop results (P = keyPairs,
/// F = c dL = factorPairs, Y = A^T dW, each [B, T, HV, *] f32; null without
/// beta) and the results to fill (dgates null where the op has none). With
/// per-key gates only the GPU's WY kernel precedes the key kernel: yW then
/// holds dk's WY share and wyGateShare dL/dG's ([B, T, HV, K] f32), and P
/// and F stay null. qRNorm and kRNorm ([B, T, H] f32, null but with
/// qk_l2norm factored): dO's rows enter times s, the coefficients take r.
struct ChunkGradKeyInputs {
  Value q, k, beta, gates, newValues, states, gradOutput, gradStates;
  Value keyPairs, factorPairs, yW;
  Value dq, dk, dgates;
  Value batch, seqLen;
  Value wyGateShare;
  Value qRNorm, kRNorm;
};
using ChunkGradKeyKernel =
    function_ref<void(ImplicitLocOpBuilder &, const ChunkGradKeyInputs &)>;

/// The backward ops' lowerings, one per file. With `keyKernel`,
/// chunk_grad's loops stop before the key gradients (and skip the output
/// pairs only those read) and the kernel is emitted after them.
void lowerChunkStatePassGrad(ChunkStatePassGradOp op);
void lowerChunkGrad(ChunkGradOp op, ChunkGradKeyKernel keyKernel = nullptr);
void lowerQKGrad(QKGradOp op);

/// result[b, t, h] = the gradient of the query/key input x [B, T, H, K]
/// from its value heads' shares perValueHead [B, T, HV, K] f32: summed over
/// h's value heads, then back through the L2 normalisation with `l2norm`
/// (dx = r (dy - y (y . dy)), y = x r; `factored`: dy is with respect to x
/// with r held fixed, dx = dy - y (y . dy)). Buffers; parallel over (b, t,
/// h).
void emitQKGradient(LoopEmitter &e, Value x, Value perValueHead, Value result,
                    bool l2norm, bool factored = false);

} // namespace mlir::linattn

#endif // LIB_CONVERSION_LINATTNTOLOOPS_LOOPLOWERINGS_H
