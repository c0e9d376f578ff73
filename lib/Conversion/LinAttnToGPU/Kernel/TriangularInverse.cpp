//===- TriangularInverse.cpp - (I + L)^-1 of a chunk in shared memory -----===//

#include "TriangularInverse.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

/// Zeroes the [64][64] fp32 square at the start of `tile`'s rows, by
/// 16-byte stores spread over the block.
void zeroSquareTile(KernelEmitter &k, Value tile) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  auto f32x4 = VectorType::get({4}, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, f32x4, b.getZeroAttr(f32x4));
  k.forEachOfBlock(kChunk * kChunk / 4, [&](Value idx) {
    Value r = arith::DivUIOp::create(b, idx, e.index(kChunk / 4));
    Value c = e.mulIndex(arith::RemUIOp::create(b, idx, e.index(kChunk / 4)),
                         e.index(4));
    vector::StoreOp::create(b, zero, tile, ValueRange{r, c}, false,
                            llvm::Align(16));
  });
}

/// invertUnitLowerTriangular's body for a block of kThreads threads.
static void invertByFourWarps(KernelEmitter &k, Value lTile, Value tF32,
                              Value mTile) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  Type f32 = b.getF32Type();
  // a. Warp w inverts diagonal block w by forward substitution, one
  //    column per lane (lanes l and l + 16 the same one): t_i = [i ==
  //    c] - sum_{j < i} L_ij t_j over the block's 16 rows; L's rows
  //    are read as 4-vectors, the same address in every lane.
  // b. Block rows I = 1, 2, 3 in turn (r0 = 16 I). Half-warp h = tid /
  //    16 takes column pair c = 16 J + 2 h of every column block J < I,
  //    its lane r = tid % 16 row r: M's pair, then T's,
  //      M[r][c] = sum_{16 J <= j < r0} L[r0 + r][j] T[j][c]
  //    (T[j][c] = 0 for j < 16 J), two columns per L element loaded.
  //    The pair's M column is the half-warp's own, so a warp barrier
  //    (not the block's) lets its lanes read each other's rows.
  auto f32x4 = VectorType::get({4}, f32);
  auto f32x2 = VectorType::get({2}, f32);
  auto dot4 = [&](ArrayRef<Value> partial) {
    return e.add(e.add(partial[0], partial[1]), e.add(partial[2], partial[3]));
  };
  Value base = e.mulIndex(k.warp, e.index(16));
  Value c = arith::RemUIOp::create(b, k.lane, e.index(16));
  SmallVector<Value> t(16);
  for (int64_t i = 0; i < 16; ++i) {
    // Four partial sums, one per vector lane, shorten the chain.
    SmallVector<Value> partial(4, e.f32(0.0f));
    for (int64_t j0 = 0; j0 < i; j0 += 4) {
      Value l = vector::LoadOp::create(
          b, f32x4, lTile,
          ValueRange{e.addIndex(base, e.index(i)), e.addIndex(base, e.index(j0))},
          false, llvm::Align(16));
      for (int64_t x = 0; x < 4 && j0 + x < i; ++x)
        partial[x] = math::FmaOp::create(
            b, vector::ExtractOp::create(b, l, x), t[j0 + x], partial[x]);
    }
    Value diag = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, c,
                                       e.index(i));
    t[i] = e.sub(k.select(diag, e.f32(1.0f), e.f32(0.0f)), dot4(partial));
  }
  for (int64_t i = 0; i < 16; ++i)
    memref::StoreOp::create(b, t[i], tF32,
                            ValueRange{e.addIndex(base, e.index(i)),
                                       e.addIndex(base, c)});
  // sum_{x < n} a[aRow][aCol0 + x] bt[bRow0 + x][col .. col + 1]: a's
  //    row read as 4-vectors, bt's column pair as 2-vectors (the same
  //    address in the 16 lanes of a half-warp), two partial sums per
  //    column.
  auto rowTimesColumnPair = [&](Value a, Value aRow, int64_t aCol0, Value bt,
                                int64_t bRow0, int64_t n, Value col) {
    SmallVector<Value> partial(4, e.f32(0.0f));
    for (int64_t x0 = 0; x0 < n; x0 += 4) {
      Value aRow4 = vector::LoadOp::create(b, f32x4, a,
                                           ValueRange{aRow, e.index(aCol0 + x0)},
                                           false, llvm::Align(16));
      for (int64_t x = 0; x < 4; ++x) {
        Value ax = vector::ExtractOp::create(b, aRow4, x);
        Value pair = vector::LoadOp::create(
            b, f32x2, bt, ValueRange{e.index(bRow0 + x0 + x), col}, false,
            llvm::Align(8));
        for (int64_t j = 0; j < 2; ++j)
          partial[2 * j + x % 2] = math::FmaOp::create(
              b, ax, vector::ExtractOp::create(b, pair, j),
              partial[2 * j + x % 2]);
      }
    }
    return vector::FromElementsOp::create(
        b, f32x2,
        ValueRange{e.add(partial[0], partial[1]), e.add(partial[2], partial[3])});
  };
  static_assert(kThreads / 16 * 2 == 16,
                "the block's half-warps cover a 16-column block in pairs");
  Value halfWarp = arith::DivUIOp::create(b, k.tid, e.index(16));
  Value r = arith::RemUIOp::create(b, k.tid, e.index(16));
  Value pairCol = e.mulIndex(halfWarp, e.index(2));
  Value fullWarp = arith::ConstantOp::create(b, b.getI32IntegerAttr(-1));
  for (int64_t blockRow = 1; blockRow < kChunk / 16; ++blockRow) {
    int64_t r0 = 16 * blockRow;
    Value row = e.addIndex(r, e.index(r0));
    k.barrier();
    for (int64_t J = 0; J < blockRow; ++J) {
      Value col = e.addIndex(pairCol, e.index(16 * J));
      Value m = rowTimesColumnPair(lTile, row, 16 * J, tF32, 16 * J,
                                   r0 - 16 * J, col);
      vector::StoreOp::create(b, m, mTile, ValueRange{r, col}, false,
                              llvm::Align(8));
    }
    NVVM::SyncWarpOp::create(b, fullWarp);
    //    T[r0 + r][c] = -sum_{m < 16} T[r0 + r][r0 + m] M[m][c].
    for (int64_t J = 0; J < blockRow; ++J) {
      Value col = e.addIndex(pairCol, e.index(16 * J));
      Value sum = rowTimesColumnPair(tF32, row, r0, mTile, 0, 16, col);
      vector::StoreOp::create(b, arith::NegFOp::create(b, sum), tF32,
                              ValueRange{row, col}, false, llvm::Align(8));
    }
  }
}

void invertUnitLowerTriangular(KernelEmitter &k, Value lTile, Value tF32,
                               Value mTile) {
  if (k.threads == kThreads)
    return invertByFourWarps(k, lTile, tF32, mTile);
  // A larger block: its first four warps invert, their barriers named
  // for kThreads threads; the others go on to the caller's next barrier.
  assert(k.threads > kThreads && "the inverse needs four warps");
  OpBuilder::InsertionGuard guard(k.b);
  k.b.setInsertionPointToStart(
      scf::IfOp::create(k.b, k.ult(k.tid, k.e.index(kThreads)), false).thenBlock());
  int64_t saved = k.barrierThreads;
  k.barrierThreads = kThreads;
  invertByFourWarps(k, lTile, tF32, mTile);
  k.barrierThreads = saved;
}

} // namespace mlir::linattn::kernel
