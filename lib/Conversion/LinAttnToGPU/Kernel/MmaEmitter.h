//===- MmaEmitter.h - Tensor-core fragments of a kernel ---------*- C++ -*-===//
//
// Products of a chunk on tensor cores: nvvm.mma.sync m16n8k16 (bf16/f16
// operands, fp32 accumulators). Fragment layouts follow the PTX ISA
// ("Matrix Fragments for mma.m16n8k16"): with lane = 4 * group + quad,
//   A (16x16, row-major): a0 = A[g][2q..2q+1],   a1 = A[g+8][2q..],
//                         a2 = A[g][2q+8..],     a3 = A[g+8][2q+8..]
//   B (16x8, by columns): b0 = B[2q..2q+1][g],   b1 = B[2q+8..2q+9][g]
//   C (16x8):             c0,c1 = C[g][2q..2q+1], c2,c3 = C[g+8][2q..]
// Fragments come from shared memory by `ldmatrix` (nvgpu.ldmatrix): each
// 8x8 16-bit tile it loads lands in one register per lane in exactly the
// a/b layout above (`.trans` for tiles stored transposed), one instruction
// for what took four to eight scalar or 32-bit shared loads. An fp32
// product that the next product consumes stays in registers: C's rows are
// A's rows, so two adjacent 16x8 accumulator tiles are one A fragment
// (fragmentAFromAcc). An fp32 operand is held split, x ~= hi + lo, and its
// products are summed by mmaSplit.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_KERNEL_MMAEMITTER_H
#define LIB_CONVERSION_LINATTNTOGPU_KERNEL_MMAEMITTER_H

#include "KernelEmitter.h"

#include <array>

namespace mlir::linattn::kernel {

/// A 2-D shared tile seen as an operand: element (i, k) is buf[i][k], or
/// buf[k][i] when `transposed`. Fragments pair elements along k.
struct TileView {
  Value buf;
  bool transposed = false;
};

/// An operand of a tensor-core product. An fp32 matrix is held as two
/// 16-bit tiles, x ~= hi + lo with lo = round(x - hi): a product of split
/// operands (hi*hi + hi*lo + lo*hi) keeps about 16 mantissa bits, which the
/// chunked algorithm's cancellations need (D = U - W S with nearly parallel
/// keys loses what bf16 rounding of W and S leaves). Exact 16-bit inputs
/// (q, k, v) have no lo.
struct Operand {
  TileView hi;
  std::optional<TileView> lo;

  /// The operand held in tile `hi` and, where it is split, tile `lo` (null:
  /// exact), read transposed or not.
  static Operand of(Value hi, Value lo, bool transposed = false) {
    Operand operand{TileView{hi, transposed}, std::nullopt};
    if (lo)
      operand.lo = TileView{lo, transposed};
    return operand;
  }
};

/// A kernel body whose products run on tensor cores in `mmaElem` (bf16 or
/// f16): the lane's place in the fragment layouts and the fragments.
class MmaEmitter : public KernelEmitter {
public:
  MmaEmitter(ImplicitLocOpBuilder &b, gpu::LaunchOp launch, Type mmaElem,
             Value smem, int64_t threads);

  /// Four 8x8 tiles of a view by one ldmatrix: tile 2 * hi + lo has its
  /// origin at element (i0 + 8 * (swap ? hi : lo), k0 + 8 * (swap ? lo : hi)).
  /// Returns one mma register per tile: elements (i, k) and (i, k + 1) of
  /// the tile's row i = group, k = 2 * quad.
  SmallVector<Value> ldmatrix4(TileView view, Value i0, int64_t k0, bool swap);
  SmallVector<Value> ldmatrix4(TileView view, Value i0, Value k0, bool swap);
  /// ldmatrix4's tiles as vector<2 x mmaElem> pairs, before they become
  /// mma registers (for a caller that scales them first).
  SmallVector<Value> ldmatrix4Pairs(TileView view, Value i0, Value k0, bool swap);

  /// An mma operand register from a vector<2 x mmaElem> pair (element 0 in
  /// the low half): NVVM takes f16 pairs as vector<2xf16> and bf16 pairs
  /// as i32.
  Value mmaRegister(Value pair);

  /// An fp32 pair rounded to a 16-bit type as one 32-bit register (x0 in the
  /// low half), the form stmatrix takes.
  Value packPair(Value x0, Value x1, Type narrowElem);

  /// Stores a 16x16 block X held as two adjacent fp32 accumulator tiles
  /// (tile0: columns 0..7, tile1: 8..15) by one stmatrix, rounded to
  /// buf's 16-bit type. The registers are the tiles' pairs (tile0 rows
  /// 0..7, tile0 rows 8..15, tile1 rows 0..7, tile1 rows 8..15), each 8x8
  /// part in the accumulator-pair layout (lane 4 g + q: elements (g, 2q),
  /// (g, 2q + 1)). Writes
  ///   buf[row0 + r][col0 + c] = X[r][c], or with `transposed` (stmatrix
  ///   .trans) buf[row0 + c][col0 + r] = X[r][c],
  /// 16 bytes per stored row: one instruction for what a thread's pairs
  /// would take eight 4-byte stores (two rows of X per pair and
  /// `transposed`: element by element).
  void stmatrix4(Value buf, Value row0, Value col0, ValueRange tile0,
                 ValueRange tile1, bool transposed);

  /// The (hi, lo) operand registers of an fp32 pair (vector<2xf32>).
  std::pair<Value, Value> splitRegister(Value pair);

  /// An A operand's (hi, lo) fragments; lo is empty for an unsplit A.
  using FragmentA = std::pair<SmallVector<Value>, SmallVector<Value>>;

  /// The A fragment (hi and lo registers) of a 16x16 fp32 operand held in
  /// registers as two accumulator tiles: tile0 covers k 0..7 and tile1 k
  /// 8..15, so a0 = tile0 (c0, c1), a1 = tile0 (c2, c3), a2 = tile1 (c0,
  /// c1), a3 = tile1 (c2, c3) (the C and A layouts of m16n8k16 agree
  /// row by row). With `negate`, the fragment of the negated operand.
  /// Without `split`, only hi, the operand rounded once (lo is empty).
  FragmentA fragmentAFromAcc(ArrayRef<Value> tile0, ArrayRef<Value> tile1,
                             bool negate, bool split = true);

  /// fragB2 for B = buf (element (k, n) = buf[k][n]) held in fp32, which
  /// ldmatrix cannot read: each element loaded and split, its hi part
  /// returned and its lo part appended to `lo`.
  SmallVector<Value> fragB2FromF32Columns(Value buf, Value base, int64_t n0,
                                          int64_t k0, SmallVector<Value> &lo);
  /// The same for B's elements computed in fp32, element(k, n) for k in
  /// [k0, k0 + 16) and n in [base + n0, + 16): held split, as an operand
  /// whose rounding the product must not see.
  SmallVector<Value> fragB2FromElements(Value k0, Value base, int64_t n0,
                                        function_ref<Value(Value, Value)> element,
                                        SmallVector<Value> &lo);

  /// The A fragment of rows [m0, m0 + 16) and k [k0, k0 + 16) of an
  /// operand computed in fp32 and rounded once: pair(r, c) is the
  /// vector<2xf32> of elements (r, c) and (r, c + 1). a0 holds row g, k
  /// 2q; a1 row g + 8; a2 and a3 the same at k + 8.
  SmallVector<Value> fragAFromPairs(Value m0, int64_t k0,
                                    function_ref<Value(Value, Value)> pair);
  /// The same operand held split (hi and lo fragments) where `split`, an
  /// f32 spec's: rounded once it would cost the spec its 1e-4.
  FragmentA fragAFromPairs(Value m0, int64_t k0,
                           function_ref<Value(Value, Value)> pair, bool split);

  /// The A fragment of rows [m0, m0 + 16) and k [k0, k0 + 16) of a view:
  /// tiles (m0, k0), (m0 + 8, k0), (m0, k0 + 8), (m0 + 8, k0 + 8).
  SmallVector<Value> fragA(TileView a, Value m0, int64_t k0);

  /// The B fragments of columns [n0, n0 + 16) (two n-tiles of 8) and k
  /// [k0, k0 + 16), from a view of B^T (element (n, k) = B[k][n]): b0, b1
  /// of columns n0.. and then of n0 + 8...
  SmallVector<Value> fragB2(TileView bt, int64_t n0, int64_t k0);
  /// The same for columns [base + n0, + 16).
  SmallVector<Value> fragB2(TileView bt, Value base, int64_t n0, int64_t k0);
  /// The same for columns [n0, + 16) and k [k0, + 16).
  SmallVector<Value> fragB2(TileView bt, int64_t n0, Value k0);

  /// d = a * b + c on tensor cores; c and d are 4 fp32 values.
  SmallVector<Value> mma(ArrayRef<Value> a, ArrayRef<Value> bFrag,
                         ArrayRef<Value> c);

  /// acc + A B for split operands A = aHi + aLo and B = bHi + bLo (an
  /// empty lo: that operand is exact), as the products
  ///   aHi bLo, then aLo bHi, then aHi bHi
  /// accumulated in that order (small terms first); aLo bLo is below the
  /// fp32 rounding of the sum and is left out. Every product of a split
  /// operand in the kernels goes through here.
  SmallVector<Value> mmaSplit(ArrayRef<Value> aHi, ArrayRef<Value> aLo,
                              ArrayRef<Value> bHi, ArrayRef<Value> bLo,
                              ArrayRef<Value> acc);

  /// acc[nt] += A(rows m0.., k < kDim) * B(k < kDim, cols 8 nt ..) for
  /// nt < acc.size(); B given as a view of B^T, from its column n0.
  void gemm(SmallVector<SmallVector<Value>> &acc, Operand a, Value m0,
            Operand bt, int64_t kDim, int64_t n0 = 0);
  /// The same from B's column nBase, a run-time value (a loop's block of
  /// columns, so that the loop body is emitted once).
  void gemm(SmallVector<SmallVector<Value>> &acc, Operand a, Value m0,
            Operand bt, int64_t kDim, Value nBase);
  /// The same with A's (hi, lo) fragments of k [k0, k0 + 16) given by
  /// `fragments(k0)` (lo empty for an unsplit A).
  void gemm(SmallVector<SmallVector<Value>> &acc,
            function_ref<FragmentA(int64_t)> fragments, Operand bt, int64_t kDim,
            int64_t n0 = 0);

  /// Accumulators for `tiles` 16x8 tiles, zero.
  SmallVector<SmallVector<Value>> zeroAcc(int64_t tiles);

  /// Row and column of accumulator element `i` (0..3) of tile (m0, n0).
  Value accRow(Value m0, int64_t i);
  Value accCol(int64_t n0, int64_t i);

  /// r = (sum_c x_rc^2 + eps)^-1/2 of the calling lane's accumulator rows
  /// accRow(m0, 0) and accRow(m0, 2) of a staged [rows][K] tile (hi + lo
  /// where `lo` is set; K a multiple of 32, as the chunked kernels take
  /// it): the four lanes of a quad share a row, each summing K / 4 of its
  /// columns in 16-byte vectors, then two shuffles. The warp's 16 rows are
  /// its own, so no barrier is needed between a warp's norms and its use
  /// of them.
  std::array<Value, 2> accRowInverseNorms(Value hi, Value lo, Value m0,
                                          int64_t K, float eps);

  /// f(c) of the accumulator columns c = accCol(8 nt, odd), nt < 8, that a
  /// thread's eight tiles across 64 columns hold (the state pass's D rows),
  /// at [2 nt + odd]: each lane evaluates f at columns 2 lane and
  /// 2 lane + 1 alone, and column pair 4 nt + quad comes from lane
  /// 4 nt + quad by one shuffle a column (two evaluations a thread instead
  /// of 16: where f is an exp of gates).
  SmallVector<Value> perAccColumnShared(function_ref<Value(Value)> f);

  /// Calls body(row, col, i) for the even elements (i = 0, 2) of tile nt;
  /// the odd element is its right neighbour.
  void forEachPair(Value m0, int64_t nt,
                   function_ref<void(Value, Value, int64_t)> body);

  Type mmaElem;
  Value group, quad;
  /// ldmatrix addressing: lane l gives the address of row l % 8 of tile
  /// l / 8 = 2 * tileHi / 8 + tileLo / 8.
  Value tileRow, tileLo, tileHi;

private:
  /// An operand's (hi, lo) A fragments of rows [m0, + 16), k [k0, + 16).
  FragmentA fragments(Operand a, Value m0, int64_t k0);
  /// gemm's body: B's columns from nBase + n0 (nBase null: n0 alone).
  void gemmFrom(SmallVector<SmallVector<Value>> &acc,
                function_ref<FragmentA(int64_t)> fragments, Operand bt,
                int64_t kDim, Value nBase, int64_t n0);
};

/// Accumulator tiles (4 fp32 values each) as one list, for loop and branch
/// results, and the list as tiles again.
SmallVector<Value> flattenTiles(ArrayRef<SmallVector<Value>> tiles);
SmallVector<SmallVector<Value>> unflattenTiles(ValueRange flat);

/// emitLaunch for a kernel with tensor-core products in `mmaElem`.
void emitLaunch(ImplicitLocOpBuilder &b, ArrayRef<Value> grid, int64_t smemBytes,
                Type mmaElem, function_ref<void(MmaEmitter &)> body,
                int64_t threads = kThreads);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_KERNEL_MMAEMITTER_H
