//===- ChunkedLowerings.h - Chunked algorithm ops to kernels ----*- C++ -*-===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_CHUNKEDLOWERINGS_H
#define LIB_CONVERSION_LINATTNTOGPU_CHUNKEDLOWERINGS_H

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

namespace mlir::linattn::kernel {

/// What a per-key cumsum kernel writes for the state pass besides G (GLA):
/// the keys decayed to their chunk's last row and the chunks' total gates,
///   K'[b, t, hv, :] = k[b, t, h, :] * exp(G_C - G_t)   (keys' type),
///   G_C[b, n, hv, :] = G at chunk n's last valid row    (f32),
/// so that the state pass stages K' and one row of G_C per chunk instead of
/// K and the chunk's [64][K] gates, and its loop has no decay pass
/// (bench/NOTES.md c38).
struct DecayedKeys {
  Value keys, chunkTotals;
};

void eraseCumsum(ChunkCumsumOp op);
ChunkCumsumOp cumsumForUTKernel(UTTransformOp op);
ChunkStatePassOp statePassForDecayedKeys(ChunkCumsumOp cumsum);

LogicalResult lowerL2Norm(L2NormOp op);
LogicalResult lowerChunkCumsum(ChunkCumsumOp op, ChunkStatePassOp decayFor = nullptr,
                               DecayedKeys *decayed = nullptr);
LogicalResult lowerUTTransform(UTTransformOp op, Type mmaType);
LogicalResult lowerChunkStatePass(ChunkStatePassOp op, Type mmaType,
                                  const GPUTargetInfo &target,
                                  const DecayedKeys *decayed = nullptr);
LogicalResult lowerSegmentCarries(SegmentCarriesOp op);
LogicalResult lowerChunkOutput(ChunkOutputOp op, Type mmaType,
                               const GPUTargetInfo &target);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_CHUNKEDLOWERINGS_H
