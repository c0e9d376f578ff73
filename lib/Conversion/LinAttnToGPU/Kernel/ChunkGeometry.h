//===- ChunkGeometry.h - Chunks of a sequence inside a kernel ---*- C++ -*-===//
//
// The chunk geometry every chunked kernel shares: chunk lengths, the rows of
// chunk n, and the row a 16-row block's per-key decay factors around.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_KERNEL_CHUNKGEOMETRY_H
#define LIB_CONVERSION_LINATTNTOGPU_KERNEL_CHUNKGEOMETRY_H

#include "LinAttn/Utils/LoopEmitter.h"
#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

namespace mlir::linattn::kernel {

/// The chunk lengths the kernels take (TargetInfo.h): 64 tokens, and the
/// long chunk of 128 where the kinds allow it. The long chunk's chunk states
/// are half the bytes, written once and read once, for 1.5x the intra-chunk
/// score work. Measured on the H200 the state pass gains (-15%) and the
/// output kernel loses more (+14%), so the GPU selector keeps 64
/// (bench/NOTES.md c25).
using chunked_kernels::kChunk;
using chunked_kernels::kLongChunk;

/// Chunk geometry inside a kernel: first token and number of valid rows
/// of chunk n of `rows` tokens, valid = min(rows, T - min(t0, T)): 0 for
/// a chunk past the end (the state pass prefetches one).
struct ChunkRows {
  Value t0, valid;
};
ChunkRows chunkRows(LoopEmitter &e, Value n, Value seqLen, int64_t rows = kChunk);

/// The last valid row of the 16-row block that starts at `row0`: the row
/// a per-key decay factors around, min(row0 + 15, valid - 1). The output
/// kernel's K' and its score operands must agree on it.
Value blockLastRow(LoopEmitter &e, Value row0, Value valid);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_KERNEL_CHUNKGEOMETRY_H
