//===- PerKeyScores.h - Scores under per-key gates ---------------*- C++ -*-===//
//
// P[i][j] = sum_k q_ik k_jk exp(G_ik - G_jk) for a warp's 16 rows against a
// 16-key column block, on tensor cores where the decay factors and in fp32
// where it does not: GLA's intra-chunk scores. q, k and K' are operands:
// 16-bit tiles, or an f32 spec's split ones (hi + lo), whose products are
// split too (MmaEmitter::mmaSplit).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_KERNEL_PERKEYSCORES_H
#define LIB_CONVERSION_LINATTNTOGPU_KERNEL_PERKEYSCORES_H

#include "MmaEmitter.h"

namespace mlir::linattn::kernel {

/// The widest spread exp(G_first - G_last) of a 16-row diagonal block, per
/// key, whose factored scores stay in range: the query factor grows up to
/// e^64 and the key factor shrinks down to e^-64, both far inside bf16's
/// and fp32's e^+-87 (128-term sums of such products included).
constexpr float kMaxDiagonalSpread = 64.0f;

/// The diagonal block of the per-key-gate scores, elementwise in fp32:
///   P[i][j] = sum_k q_ik k_jk exp(G_ik - G_jk)
/// for the warp's rows i and columns j in [m0, m0 + 16), as two
/// accumulator tiles (8 values, tile 0 then tile 1). Each lane sums its
/// own elements over k, two keys per step; the elements above the
/// diagonal for every lane (rows m0 + g, columns m0 + 8..) are not
/// computed, the others above it are dropped by the caller's mask.
SmallVector<Value> diagonalScores(MmaEmitter &k, const Operand &q,
                                  const Operand &keys, Value g, Value m0,
                                  int64_t K);

/// Whether the calling warp's 16-row block [m0, m0 + 16) may be factored
/// around its last valid row L: G_{m0} - G_L < kMaxDiagonalSpread for
/// every key (G the staged [64][K] f32 gates), the same in every lane (a
/// warp vote).
Value diagonalFactorable(MmaEmitter &k, Value g, Value m0, Value valid,
                         int64_t K);

/// The per-key-gate scores' diagonal block, what every column block of
/// perKeyBlockScores needs from it: whether the warp factors it, and the
/// elementwise scores where it does not.
struct PerKeyDiagonal {
  Value factored;
  SmallVector<Value> elementwise;
};

/// Whether the warp's diagonal block [m0, m0 + 16) may be factored around
/// its last valid row L: its query factor exp(G_i - G_L) is >= 1, up to
/// exp(G_{m0} - G_L), so where that spread exceeds kMaxDiagonalSpread for
/// some key (strong gates), the warp computes the block elementwise in
/// fp32 instead (diagonalScores), as flash-linear-attention does for every
/// diagonal block; elsewhere `elementwise` is zero. With `used` (a warp
/// whose column half may not visit its diagonal block) it is computed only
/// where `used` holds.
PerKeyDiagonal perKeyDiagonal(MmaEmitter &k, const Operand &q,
                              const Operand &keys, Value g, Value m0,
                              Value valid, int64_t K, Value used = Value());

/// The per-key-gate scores of the warp's rows [m0, m0 + 16) against the
/// keys of column block [row0, row0 + 16), row0 <= m0 (a run-time value),
/// before the causal mask, as two accumulator tiles (8 values):
///   P[i][j] = sum_k q_ik k_jk exp(G_ik - G_jk).
/// The block factors the decay around its last valid row L, P = (q_i
/// exp(G_i - G_L)) (k_j exp(G_L - G_j))^T; the second factor is K'
/// (`decayedKeys`, staged by the caller), the first is built in registers.
/// Below the diagonal (rows i > L) both factors are <= 1, so strong gates
/// only underflow what is negligible anyway; the diagonal block is
/// `diagonal`'s (factored, or elementwise).
SmallVector<Value> perKeyBlockScores(MmaEmitter &k, const Operand &q,
                                     const Operand &decayedKeys, Value g,
                                     Value m0, Value row0, Value valid,
                                     const PerKeyDiagonal &diagonal, int64_t K);

/// The causal scores of the warp's query rows j in [m0, m0 + 16),
///   y_ji = scale sum_r q_jr k_ir exp(G_jr - G_ir),  i <= j < valid
/// (zero elsewhere), a 16-key column block [i0, i0 + 16) at a time (a
/// run-time loop over the four: one block's code, for the instruction
/// cache's sake), handed to `use(i0, hi, lo)` split for the tensor cores:
/// hi[x] = y (the stmatrix operand rounds it), lo[x] = y - round(y), with
/// element x % 4 of accumulator tile x / 4 (row accRow(m0, x % 4), column
/// i0 + 8 (x / 4) + accCol(0, x % 4)). K' (`decayedKeys`) staged by the
/// caller, as for perKeyBlockScores. With `rowScales` (two values: rows
/// accRow(m0, 0) and accRow(m0, 2)) each row takes its own in place of
/// `scale` (qk_l2norm factored: scale s_j).
void forEachCausalScoreBlock(
    MmaEmitter &k, const Operand &q, const Operand &keys,
    const Operand &decayedKeys, Value g, Value m0, Value valid, float scale,
    int64_t K, function_ref<void(Value, ArrayRef<Value>, ArrayRef<Value>)> use,
    ArrayRef<Value> rowScales = {});

/// The keys' own per-key-gate scores below the diagonal,
///   P_ij = sum_d k_id k_jd exp(G_id - G_jd),   j < i,
/// each warp its rows [m0, m0 + 16) against the 16-key column blocks at or
/// before its own (perKeyBlockScores with the keys as queries), handed
/// element by element to `use(i, j, P_ij, keep)`, keep = j < i < valid (the
/// caller drops the others); the blocks after a warp's own are not visited.
/// With `colHalf` (0 or 1: a block of eight warps, two a row block) the
/// warp visits every other column block, from block colHalf.
/// Stages K' = K exp(G_L - G) (L each 16-row block's last valid row) in
/// `decayed` first, split like the keys, with the barrier that publishes it:
/// the UT transform's L and the backward's WY kernel's P.
void forEachLowerKeyScore(MmaEmitter &k, const Operand &keys,
                          const Operand &decayed, Value g, Value m0,
                          Value valid, int64_t K,
                          function_ref<void(Value, Value, Value, Value)> use,
                          Value colHalf = Value());

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_KERNEL_PERKEYSCORES_H
