//===- PerKeyScores.cpp - Scores under per-key gates ----------------------===//

#include "PerKeyScores.h"

#include "ChunkGeometry.h"
#include "Gates.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

/// `width` consecutive elements of an operand's row in fp32: hi + lo where
/// it is split.
static Value loadOperand(MmaEmitter &k, const Operand &x, ValueRange indices,
                         int64_t width) {
  return k.loadWidenedJoined(x.hi.buf, x.lo ? x.lo->buf : Value(), indices,
                             width);
}

SmallVector<Value> diagonalScores(MmaEmitter &k, const Operand &q,
                                  const Operand &keys, Value g, Value m0,
                                  int64_t K) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  Value row = e.addIndex(m0, k.group);
  Value rowIdx[2] = {row, e.addIndex(row, e.index(8))};
  Value col = e.addIndex(m0, e.mulIndex(k.quad, e.index(2)));
  Value colIdx[4] = {col, e.addIndex(col, e.index(1)), e.addIndex(col, e.index(8)),
                     e.addIndex(col, e.index(9))};
  ValueRange sums = e.forEachReduce(
      e.index(K / 2), SmallVector<Value>(8, e.f32(0.0f)),
      [&](Value step, ValueRange acc) -> SmallVector<Value> {
    Value c = e.mulIndex(step, e.index(2));
    Value qs[2], gq[2], kv[4], gk[4];
    for (int64_t r = 0; r < 2; ++r) {
      qs[r] = loadOperand(k, q, {rowIdx[r], c}, 2);
      gq[r] = k.loadWidened(g, {rowIdx[r], c}, 2);
    }
    for (int64_t j = 0; j < 4; ++j) {
      kv[j] = loadOperand(k, keys, {colIdx[j], c}, 2);
      gk[j] = k.loadWidened(g, {colIdx[j], c}, 2);
    }
    SmallVector<Value> next(acc);
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t j = 0; j < 4; ++j) {
        if (r == 0 && j >= 2)
          continue;
        // Accumulator element (tile j / 2, index 2 r + j % 2).
        Value term = e.mul(e.mul(qs[r], kv[j]), k.expPair(e.sub(gq[r], gk[j])));
        int64_t slot = 4 * (j / 2) + 2 * r + j % 2;
        for (int64_t x = 0; x < 2; ++x)
          next[slot] = e.add(next[slot], vector::ExtractOp::create(b, term, x));
      }
    return next;
  });
  return llvm::to_vector(sums);
}

Value diagonalFactorable(MmaEmitter &k, Value g, Value m0, Value valid,
                         int64_t K) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  // Every lane tests keys lane, lane + 32, ... (those below K); the warp
  // votes.
  Value ownLast = blockLastRow(e, m0, valid);
  Value narrow = arith::ConstantOp::create(b, b.getBoolAttr(true));
  for (int64_t c0 = 0; c0 < K; c0 += 32) {
    Value c = e.addIndex(k.lane, e.index(c0));
    Value spread = e.sub(e.loadF32(g, {m0, c}), e.loadF32(g, {ownLast, c}));
    Value ok = arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, spread,
                                     e.f32(kMaxDiagonalSpread));
    if (c0 + 32 > K) // a key past K (the last group of a K = 16 or 48)
      ok = arith::OrIOp::create(b, ok, k.ult(e.index(K - 1), c));
    narrow = arith::AndIOp::create(b, narrow, ok);
  }
  Value fullWarp = arith::ConstantOp::create(b, b.getI32IntegerAttr(-1));
  return NVVM::VoteSyncOp::create(b, b.getI1Type(), fullWarp, narrow,
                                  NVVM::VoteSyncKind::all);
}

PerKeyDiagonal perKeyDiagonal(MmaEmitter &k, const Operand &q,
                              const Operand &keys, Value g, Value m0,
                              Value valid, int64_t K, Value used) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  Type f32 = b.getF32Type();
  Value factored = diagonalFactorable(k, g, m0, valid, K);
  // The elementwise block, once (its code is long).
  Value elementwise = arith::AndIOp::create(
      b, k.ult(m0, valid),
      arith::XOrIOp::create(b, factored,
                            arith::ConstantOp::create(b, b.getBoolAttr(true))));
  if (used)
    elementwise = arith::AndIOp::create(b, elementwise, used);
  auto elementwiseIf =
      scf::IfOp::create(b, SmallVector<Type>(8, f32), elementwise, true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(elementwiseIf.thenBlock());
  scf::YieldOp::create(b, diagonalScores(k, q, keys, g, m0, K));
  b.setInsertionPointToStart(elementwiseIf.elseBlock());
  scf::YieldOp::create(b, SmallVector<Value>(8, e.f32(0.0f)));
  return {factored, SmallVector<Value>(elementwiseIf.getResults())};
}

SmallVector<Value> perKeyBlockScores(MmaEmitter &k, const Operand &q,
                                     const Operand &decayedKeys, Value g,
                                     Value m0, Value row0, Value valid,
                                     const PerKeyDiagonal &diagonal, int64_t K) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  Value offDiagonal = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, row0, m0);
  Value factored = arith::OrIOp::create(b, offDiagonal, diagonal.factored);
  auto factoredIf =
      scf::IfOp::create(b, SmallVector<Type>(8, b.getF32Type()), factored, true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(factoredIf.thenBlock());
  Value ref = blockLastRow(e, row0, valid);
  SmallVector<SmallVector<Value>> acc = k.zeroAcc(2);
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    auto [aHi, aLo] = k.fragAFromPairs(m0, k0, [&](Value r, Value c) {
      Value qs = loadOperand(k, q, {r, c}, 2);
      Value decay =
          e.sub(k.loadWidened(g, {r, c}, 2), k.loadWidened(g, {ref, c}, 2));
      return e.mul(qs, k.expPair(decay));
    }, /*split=*/q.lo.has_value());
    SmallVector<Value> bHi = k.fragB2(decayedKeys.hi, row0, 0, k0);
    SmallVector<Value> bLo = decayedKeys.lo
                                 ? k.fragB2(*decayedKeys.lo, row0, 0, k0)
                                 : SmallVector<Value>();
    for (int64_t j = 0; j < 2; ++j)
      acc[j] = k.mmaSplit(aHi, aLo, ArrayRef(bHi).slice(2 * j, 2),
                          bLo.empty() ? ArrayRef<Value>()
                                      : ArrayRef(bLo).slice(2 * j, 2),
                          acc[j]);
  }
  scf::YieldOp::create(b, llvm::to_vector(llvm::concat<Value>(acc[0], acc[1])));
  // Not factored: the elementwise diagonal block.
  b.setInsertionPointToStart(factoredIf.elseBlock());
  scf::YieldOp::create(b, diagonal.elementwise);
  return SmallVector<Value>(factoredIf.getResults());
}

void forEachCausalScoreBlock(
    MmaEmitter &k, const Operand &q, const Operand &keys,
    const Operand &decayedKeys, Value g, Value m0, Value valid, float scale,
    int64_t K, function_ref<void(Value, ArrayRef<Value>, ArrayRef<Value>)> use,
    ArrayRef<Value> rowScales) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  PerKeyDiagonal diagonal = perKeyDiagonal(k, q, keys, g, m0, valid, K);
  Type f32 = b.getF32Type();
  Value scaleF = e.f32(scale);
  e.forEach(e.index(kChunk / 16), [&](Value block) {
    Value i0 = e.mulIndex(block, e.index(16));
    auto below = scf::IfOp::create(
        b, SmallVector<Type>(8, f32),
        arith::CmpIOp::create(b, arith::CmpIPredicate::ule, i0, m0), true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(below.thenBlock());
      scf::YieldOp::create(b, perKeyBlockScores(k, q, decayedKeys, g, m0, i0,
                                                valid, diagonal, K));
      b.setInsertionPointToStart(below.elseBlock());
      scf::YieldOp::create(b, SmallVector<Value>(8, e.f32(0.0f)));
    }
    SmallVector<Value> hi, lo;
    for (int64_t x = 0; x < 8; ++x) {
      Value j = k.accRow(m0, x % 4);
      Value i = e.addIndex(i0, k.accCol(8 * (x / 4), x % 4));
      Value keep = arith::AndIOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::ule, i, j),
          k.ult(j, valid));
      Value factor = rowScales.empty() ? scaleF : rowScales[(x % 4) / 2];
      Value y = k.select(keep, e.mul(below.getResult(x), factor), e.f32(0.0f));
      Value rounded = arith::ExtFOp::create(
          b, f32, arith::TruncFOp::create(b, k.mmaElem, y).getResult());
      hi.push_back(y);
      lo.push_back(e.sub(y, rounded));
    }
    use(i0, hi, lo);
  });
}

void forEachLowerKeyScore(MmaEmitter &k, const Operand &keys,
                          const Operand &decayed, Value g, Value m0,
                          Value valid, int64_t K,
                          function_ref<void(Value, Value, Value, Value)> use,
                          Value colHalf) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  auto lo = [](const Operand &x) { return x.lo ? x.lo->buf : Value(); };
  decayRows(k, keys.hi.buf, decayed.hi.buf, g, valid, [&](Value r) {
    Value row0 = e.mulIndex(arith::DivUIOp::create(b, r, e.index(16)),
                            e.index(16));
    return blockLastRow(e, row0, valid);
  }, K, lo(keys), lo(decayed));
  k.barrier();
  // With two column halves, half h takes blocks h, h + 2, ...: only the
  // half of the warp's own row block visits its diagonal block.
  Value rowBlock = arith::DivUIOp::create(b, m0, e.index(16));
  Value ownsDiagonal;
  if (colHalf)
    ownsDiagonal = arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq,
        arith::RemUIOp::create(b, rowBlock, e.index(2)), colHalf);
  PerKeyDiagonal diagonal =
      perKeyDiagonal(k, keys, keys, g, m0, valid, K, ownsDiagonal);
  Value numBlocks = k.select(k.ult(m0, valid), e.addIndex(rowBlock, e.index(1)),
                             e.index(0));
  // Half h's visits: (numBlocks - h + 1) / 2.
  Value visits = numBlocks;
  if (colHalf)
    visits = arith::DivUIOp::create(
        b, e.subIndex(e.addIndex(numBlocks, e.index(1)), colHalf), e.index(2));
  e.forEach(visits, [&](Value visit) {
    Value block = colHalf ? e.addIndex(colHalf, e.mulIndex(visit, e.index(2))) : visit;
    Value row0 = e.mulIndex(block, e.index(16));
    SmallVector<Value> scores =
        perKeyBlockScores(k, keys, decayed, g, m0, row0, valid, diagonal, K);
    // Element i % 4 of tile i / 4: row accRow(m0, i % 4), column row0 +
    // 8 (i / 4) + accCol(0, i % 4).
    for (int64_t i = 0; i < 8; ++i) {
      Value r = k.accRow(m0, i % 4);
      Value c = e.addIndex(row0, k.accCol(8 * (i / 4), i % 4));
      Value keep = arith::AndIOp::create(b, k.ult(c, r), k.ult(r, valid));
      use(r, c, scores[i], keep);
    }
  });
}

} // namespace mlir::linattn::kernel
