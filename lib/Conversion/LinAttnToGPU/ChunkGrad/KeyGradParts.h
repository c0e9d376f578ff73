//===- KeyGradParts.h - What chunk_grad's two key kernels share -*- C++ -*-===//
//
// The pieces of chunk_grad's key gradients that the kernel per chunk
// (KeyGradKernel.cpp) and the kernel per key block (KeyBlockGradKernel.cpp)
// emit alike: L = F * E staged split, a warp's dq or dk rows stored, and
// the rows' dL/dG terms gathered from the warps' f64 partial sums.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_CHUNKGRAD_KEYGRADPARTS_H
#define LIB_CONVERSION_LINATTNTOGPU_CHUNKGRAD_KEYGRADPARTS_H

#include "../Kernel/ChunkGeometry.h"
#include "../Kernel/MmaEmitter.h"

namespace mlir::linattn::kernel {

/// Where stageFactorTiles reads and writes.
struct FactorTiles {
  /// factorPairs F and (with gates) keyPairs P: [B, T, HV, 64] f32.
  Value factorPairs, keyPairs;
  Value batch, valueHead;
  ChunkRows rows;
  /// Row gates G [64][1] f32 (null: none), M [64][65] f32 (null: no M).
  Value gTile, mTile;
  /// M_ij += F_ij P_ij only where this i1 holds (null: always).
  Value addToM;
  /// L's split tiles [64][64 + pad] of the kernel's 16-bit type.
  Value lHi, lLo;
};

/// L = F * E (F strictly lower, E_ij = exp(G_i - G_j), zero on and above
/// the diagonal and past valid) to its split tiles, read by rows four
/// entries at a time and stored split by rows: no branch and no column
/// store, so every load of the loop is issued before the first is used (a
/// store under a branch per element had exposed each load's latency in
/// turn: bench/NOTES.md b9); with M, M_ij += F_ij P_ij. No barrier.
void stageFactorTiles(MmaEmitter &k, const FactorTiles &t);

/// A thread per row of the chunk: G[i] = gates[batch, t0 + i, head] into
/// gTile (where given) and c_i = rank1Scale beta[batch, t0 + i, head] into
/// cTile (where given; times r_i^2 with kRNorm r [B, T, H], read at
/// qkHead: qk_l2norm factored), both 0 at or past valid. No barrier.
void stageRowScalars(MmaEmitter &k, ChunkRows rows, Value batch, Value head,
                     Value gates, Value gTile, Value beta, Value cTile,
                     float rank1Scale, Value kRNorm = Value(),
                     Value qkHead = Value());

/// qk_l2norm factored (chunk_grad's q_rnorm s, dO's rows entering times
/// s): s of the warp's rows accRow(m0, 0) and accRow(m0, 2) (clamped into
/// the chunk), read from qRNorm [B, T, H] at qkHead; empty without qRNorm.
SmallVector<Value> outputRowScales(MmaEmitter &k, Value qRNorm, ChunkRows rows,
                                   Value batch, Value qkHead, Value m0);

/// Stores a warp's 16 rows from m0 of an accumulator (tiles of 8 columns)
/// at dst[batch, t0 + row, head, firstKey + column] for rows below valid,
/// an adjacent pair a store, narrowed to dst's type (f32 per value head,
/// or q's and k's own type where chunk_grad returns their gradients).
void storeKeyRows(MmaEmitter &k, ArrayRef<SmallVector<Value>> acc, Value dst,
                  ChunkRows rows, Value m0, Value batch, Value head,
                  Value firstKey);

/// The tiles the rows' dL/dG terms are gathered in: rowTerms and
/// shareTerms [64][parts] f64 (a column per quad and column half), the
/// threads' <S, H> partials dotTerms [threads][1] f64, and M [64][65] f32.
struct RowTermTiles {
  Value rowTerms, shareTerms, dotTerms, mTile;
  int64_t parts = 0;
};

/// Gathers each thread's f64 row terms (rows group and group + 8 of its
/// warp, in `column`), share terms and <S, H> partial, then a thread per
/// row i sums its parts plus M's row minus column sums,
///   rowTerms[i][0] = sum_parts rowTerms[i] + sum_j M_ij - sum_j M_ji,
///   shareTerms[i][0] = sum_parts shareTerms[i],
/// taken in f64 from the same f32 entries so that the pairs that cancel in
/// the suffix sums cancel; ends past a barrier.
void gatherRowTerms(MmaEmitter &k, const RowTermTiles &t, Value m0, Value column,
                    ArrayRef<Value> rowAcc, ArrayRef<Value> shareAcc, Value dot);

/// For warp 0 after gatherRowTerms: the last row's share sum_i k_i .
/// dkState_i + exp(G_C) <S, H> (f64), in every lane.
Value lastRowShare(MmaEmitter &k, const RowTermTiles &t, Value gLast);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_CHUNKGRAD_KEYGRADPARTS_H
