//===- OutputShareOfGradValues.h - dD's share through the output -*- C++ -*-===//
//
// The share of the reverse pass's dD that does not depend on H, under
// per-key gates, computed ahead of the pass in parallel over chunks:
//
//   X_n = scale (Q K^T * M)^T dO_n,  (Q K^T * M)_ji = sum_r q_jr k_ir exp(G_jr - G_ir), i <= j
//
// so that the sequential pass only adds it (dD_n = Kd H_n + X_n) instead of
// forming the chunk's per-key scores on its critical path.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_STATEPASS_OUTPUTSHAREOFGRADVALUES_H
#define LIB_CONVERSION_LINATTNTOGPU_STATEPASS_OUTPUTSHAREOFGRADVALUES_H

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::linattn::kernel {

/// Whether the kernel takes `op`: per-key gates, 16-bit q, k and dO, within
/// shared memory ("" if it does, else why not).
std::string whyNoOutputShareKernel(ChunkStatePassGradOp op,
                                   const GPUTargetInfo &target);

/// Launches the kernel, a block of four warps per (chunk, value head,
/// sequence), and returns X [B, T, HV, V] f32 (rows past T not written).
/// q, k, gates and dO are the op's operands as buffers, and qRNorm its
/// q_rnorm (null without: with it every q_j is s_j q_j).
Value emitOutputShareOfGradValues(ImplicitLocOpBuilder &b,
                                  ChunkStatePassGradOp op,
                                  const GPUTargetInfo &target, Value q, Value k,
                                  Value gates, Value gradOutput,
                                  Value qRNorm = Value());

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_STATEPASS_OUTPUTSHAREOFGRADVALUES_H
