//===- TriangularInverse.h - (I + L)^-1 of a chunk in shared memory -*- C++ -*-===//
//
// The UT transform's T = (I + L)^-1 for a strictly lower [64][64] fp32 L,
// by blocks of 16 rows in fp32 on CUDA cores: the forward's UT kernel
// (W = T diag(c exp(G)) K, U = T diag(beta) V) and the backward's WY
// kernel ([Y Z] = T^T [dW dD]) both take it.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_KERNEL_TRIANGULARINVERSE_H
#define LIB_CONVERSION_LINATTNTOGPU_KERNEL_TRIANGULARINVERSE_H

#include "KernelEmitter.h"

namespace mlir::linattn::kernel {

/// Rows of the fp32 tiles the inverse reads and writes: [64][64 + 4], each
/// row 16-byte aligned (the inverse reads L's rows as 4-vectors) and 16
/// bytes longer than 256 so that 16 lanes reading 16 rows at once do not
/// meet in one bank.
constexpr int64_t kInverseStride = kChunk + 4;
/// Bytes of the inverse's scratch M: [16][48] fp32.
constexpr int64_t kInverseScratchBytes = 16 * (kChunk - 16) * 4;

/// Zeroes the [64][64] fp32 square at the start of `tile`'s rows, by
/// 16-byte stores spread over the block.
void zeroSquareTile(KernelEmitter &k, Value tile);

/// T = (I + L)^-1 into `t`, for L strictly lower in `l` (both fp32
/// [64][kInverseStride] tiles), with `m` the [16][48] fp32 scratch. Block
/// row I of (I + L) T = I gives, for column blocks J < I,
///   T_II = (I + L_II)^-1,   T_IJ = -T_II M_IJ,
///   M_IJ = sum_{J <= K < I} L_IK T_KJ
/// (T is zero above its diagonal blocks). Expects L visible to every
/// thread and t's blocks above the diagonal zero (zeroSquareTile before
/// the barrier that publishes L); T is complete after the caller's next
/// barrier. Takes the block's first 128 threads (four warps); in a larger
/// block the others skip it.
void invertUnitLowerTriangular(KernelEmitter &k, Value l, Value t, Value m);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_KERNEL_TRIANGULARINVERSE_H
