//===- PerKeyPairSums.h - Pair sums under per-key gates ----------*- C++ -*-===//
//
// The backward's sums over a chunk's token pairs weighed by a pair matrix
// A (dP~, or the WY factors' F = c dL) under per-key gates, for a warp's 16
// rows and a block of keys:
//
//   rows:    acc_ir += sum_{j <= i} A_ij x_jr exp(G_ir - G_jr)   (dq; F's k_i)
//   columns: acc_jr += sum_{i >= j} A_ij x_ir exp(G_ir - G_jr)   (dk)
//
// by 16-token blocks on tensor cores, each factored around a row of the
// other block so that no factor exceeds 1; the warp's own block factored
// too where its gates' spread allows (its B operand from fp32, split),
// elementwise in fp32 where not.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_KERNEL_PERKEYPAIRSUMS_H
#define LIB_CONVERSION_LINATTNTOGPU_KERNEL_PERKEYPAIRSUMS_H

#include "MmaEmitter.h"

namespace mlir::linattn::kernel {

/// What a per-key pair sum reads from shared memory.
struct PerKeyPairSumOperands {
  /// A, [64][64 + pad], split hi + lo; zero above the diagonal (or on and
  /// above it) and past the chunk's valid rows.
  Value pairsHi, pairsLo;
  /// x [64][K + pad], 16-bit, and x decayed for the other blocks' factored
  /// products: to its 16-row block's last valid row, x_j exp(G_L - G_j),
  /// for row sums; from its block's first row, x_i exp(G_i - G_F), for
  /// column sums (Gates.h's decayRows, rows past valid zero).
  Value x, decayedX;
  /// G, the chunk's cumulative per-key log gates, [64][K + 4] f32.
  Value g;
};

/// acc (the warp's 16 rows [m0, m0 + 16) x keys [key0, + 8 acc.size()),
/// accumulator tiles) += the row sums, or with `columns` the column sums,
/// above; rows at or past `valid` add nothing. `ownFactored` is the warp's
/// diagonalFactorable (PerKeyScores.h): whether its own block goes through
/// the tensor cores (a pair (i, j) then enters a row sum at i and a column
/// sum at j to ~2^-17 alike, so that the shares of dL/dG they feed cancel
/// as the elementwise sums' do) or elementwise.
void addPerKeyPairSums(MmaEmitter &k, SmallVector<SmallVector<Value>> &acc,
                       const PerKeyPairSumOperands &x, bool columns, Value m0,
                       Value valid, Value key0, Value ownFactored);

/// Stages decayedX for the row sums, x_j exp(G_L - G_j) (L the last valid
/// row of j's 16-row block), or (`columns`) for the column sums, x_i
/// exp(G_i - G_F) (F its block's first row), from the 16-bit x into
/// `decayed`; rows past valid zero. The caller's barrier publishes it.
void stagePairSumOperand(MmaEmitter &k, Value x, Value decayed, Value g,
                         Value valid, int64_t K, bool columns);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_KERNEL_PERKEYPAIRSUMS_H
