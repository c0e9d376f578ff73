//===- WYGradParts.h - What chunk_grad's two WY kernels share ---*- C++ -*-===//
//
// The pieces of chunk_grad's WY share that the kernel holding a chunk's
// whole rows (WYGradKernel.cpp) and the kernel streaming them in 64-column
// slabs (WYSlabGradKernel.cpp) emit alike: the row scalars staged, the
// pairs P = (K K^T) * E and the factors F = c dL stored from their
// accumulators, and dbeta from the rows' terms:
//
//   dbeta_i = rank1_scale (exp(G_i) Y_i . k_i + sum_j dL_ij P_ij) + Z_i . v_i
//
// (with k_rnorm r, qk_l2norm factored: c = rank1_scale beta r^2, b = beta
// r, and dbeta's two parts take r^2 and r).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_CHUNKGRAD_WYGRADPARTS_H
#define LIB_CONVERSION_LINATTNTOGPU_CHUNKGRAD_WYGRADPARTS_H

#include "ChunkGradKernels.h"

#include "../Kernel/ChunkGeometry.h"
#include "../KernelSupport.h"

namespace mlir::linattn::kernel {

/// What both WY kernels' plans read of `op` first: the head counts and
/// sizes, and the operand forms of k and W (KernelSupport.h); none where
/// the op has no WY factors or its forms are not the kernels' (`whyNot`
/// says).
struct WYGradShapes {
  int64_t numQKHeads = 0, numVHeads = 0, K = 0, V = 0;
  BackwardOperandForms forms;
};
std::optional<WYGradShapes> wyGradShapes(ChunkGradOp op, std::string *whyNot);

/// dbeta's row terms, each a sum over the row's columns kept per quad of
/// the accumulator layout (and per column half): Y_i . k_i, Z_i . v_i,
/// sum_j dL_ij P_ij.
enum WYRowTerm : int64_t {
  kThroughW = 0,
  kThroughU = 1,
  kThroughL = 2,
  kWYRowTerms = 3
};

/// The WY kernels' row tiles in shared memory: the write coefficient b
/// (beta, or beta r with k_rnorm r), c = rank1_scale beta (r^2) and the
/// row gates G ([64][1] f32 each; g null without row gates), and the row
/// terms [64][kWYRowTerms * parts] f32.
struct WYRowTiles {
  Value beta, c, g, rowTerms;
  int64_t parts = 0;
};

/// k_rnorm r [B, T, H] f32 (qk_l2norm factored) and the value head's q/k
/// head, read from global memory where the row scalars are formed (no tile
/// of its own: KDA's WY kernel at eight warps has 240 bytes to spare);
/// null without.
struct WYRowNorms {
  Value kRNorm, qkHead;
};

/// Stores an accumulator pair (x0, x1) at [row][col] of a split 16-bit
/// tile: the rounded values to hi, the rest to lo.
void storeSplitPair(MmaEmitter &k, Value x0, Value x1, Value hi, Value lo,
                    Value row, Value col);

/// A thread per row: b, c and (where t.g) the row gate of token t0 + i,
/// 0 at or past valid (b and c with `norms`' r). No barrier.
void stageWYRowScalars(MmaEmitter &k, ChunkRows rows, Value batch, Value head,
                       Value beta, Value gates, const WYRowTiles &t,
                       float rank1Scale, const WYRowNorms &norms = {});

/// Stores the warp's two row partials of `term` (rows group and group + 8)
/// in its quad's (and column half's) column of the row terms.
void storeWYRowTerm(MmaEmitter &k, WarpTiling &tiling, const WYRowTiles &t,
                    WYRowTerm term, ArrayRef<Value> partial);

/// P_ij = (K K^T)_ij E_ij for j < i < valid (else 0) from the warp's
/// accumulator of K K^T (columns from col0) to pTile, L = diag(c) P to
/// lTile, and rows below valid to keyPairs. No barrier.
void storeKeyPairs(MmaEmitter &k, WarpTiling &tiling,
                   ArrayRef<SmallVector<Value>> acc, Value col0, ChunkRows rows,
                   const WYRowTiles &t, Value pTile, Value lTile,
                   Value keyPairs, Value batch, Value head);

/// From the warp's accumulator of Y W^T + Z U^T (columns from col0): dL =
/// -acc for j < i < valid, F = c_i dL_ij to factorPairs (rows below
/// valid), or, with factorPairs null, F returned in the accumulator's
/// layout; sum_j dL_ij P_ij to the row terms. Ends with a barrier.
SmallVector<SmallVector<Value>>
storeFactors(MmaEmitter &k, WarpTiling &tiling, SmallVector<SmallVector<Value>> acc,
             Value col0, ChunkRows rows, const WYRowTiles &t, Value pTile,
             Value factorPairs, Value batch, Value head);

/// A thread per row: dbeta_i from the row terms' parts (the file's
/// header; with row gates Y_i . k_i taken times exp(G_i) here; with
/// `norms`' r the parts times r^2 and r). No barrier.
void storeBetaGradient(MmaEmitter &k, ChunkRows rows, const WYRowTiles &t,
                       Value dbeta, Value batch, Value head, float rank1Scale,
                       const WYRowNorms &norms = {});

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_CHUNKGRAD_WYGRADPARTS_H
