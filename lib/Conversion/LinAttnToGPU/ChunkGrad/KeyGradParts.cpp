//===- KeyGradParts.cpp - What chunk_grad's two key kernels share ---------===//

#include "KeyGradParts.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

void stageFactorTiles(MmaEmitter &k, const FactorTiles &t) {
  ImplicitLocOpBuilder &b = k.b;
  LoopEmitter &e = k.e;
  constexpr int64_t kWidth = 4;
  auto narrowx4 = VectorType::get({kWidth}, k.mmaElem);
  Value last = e.subIndex(t.rows.valid, e.index(1));
  auto gateAt = [&](Value r) {
    return memref::LoadOp::create(b, t.gTile, ValueRange{r, e.index(0)}).getResult();
  };
  k.forEachOfBlock(kChunk * kChunk / kWidth, [&](Value idx) {
    Value i = arith::DivUIOp::create(b, idx, e.index(kChunk / kWidth));
    Value j0 = e.mulIndex(arith::RemUIOp::create(b, idx, e.index(kChunk / kWidth)),
                          e.index(kWidth));
    // Rows past valid are read clamped (their value is dropped).
    SmallVector<Value> at = {t.batch, e.addIndex(t.rows.t0, e.minIndex(i, last)),
                             t.valueHead, j0};
    Value fRaw = k.loadWidened(t.factorPairs, at, kWidth);
    Value pRaw = t.mTile ? k.loadWidened(t.keyPairs, at, kWidth) : Value();
    Value f = arith::ConstantOp::create(b, fRaw.getType(),
                                        b.getZeroAttr(fRaw.getType()));
    for (int64_t c = 0; c < kWidth; ++c) {
      Value j = e.addIndex(j0, e.index(c));
      Value keep = arith::AndIOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::ule, j, i),
          k.ult(i, t.rows.valid));
      // Selected, not multiplied: exp(G_i - G_j) with i past valid (G
      // staged 0) may overflow.
      Value decay = t.gTile ? k.select(keep, k.exp(e.sub(gateAt(i), gateAt(j))),
                                       e.f32(0.0f))
                            : e.f32(1.0f);
      Value strict = arith::AndIOp::create(b, keep, k.ult(j, i));
      Value fc = vector::ExtractOp::create(b, fRaw, c);
      f = vector::InsertOp::create(
          b, k.select(strict, e.mul(fc, decay), e.f32(0.0f)), f, c);
      if (t.mTile) {
        Value pc = vector::ExtractOp::create(b, pRaw, c);
        Value m = memref::LoadOp::create(b, t.mTile, ValueRange{i, j});
        Value add = t.addToM ? arith::AndIOp::create(b, strict, t.addToM).getResult()
                             : strict;
        memref::StoreOp::create(b, k.select(add, e.add(m, e.mul(fc, pc)), m),
                                t.mTile, ValueRange{i, j});
      }
    }
    auto [hi, lo] = k.split(f, narrowx4);
    for (auto [part, buf] : {std::pair{hi, t.lHi}, std::pair{lo, t.lLo}})
      vector::StoreOp::create(b, part, buf, ValueRange{i, j0}, false, llvm::Align(8));
  });
}

void stageRowScalars(MmaEmitter &k, ChunkRows rows, Value batch, Value head,
                     Value gates, Value gTile, Value beta, Value cTile,
                     float rank1Scale, Value kRNorm, Value qkHead) {
  if (!gTile && !cTile)
    return;
  ImplicitLocOpBuilder &b = k.b;
  LoopEmitter &e = k.e;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(
      scf::IfOp::create(b, k.ult(k.tid, e.index(kChunk)), false).thenBlock());
  Value t = e.addIndex(rows.t0, e.minIndex(k.tid, e.subIndex(rows.valid, e.index(1))));
  Value in = k.ult(k.tid, rows.valid);
  if (gTile)
    memref::StoreOp::create(
        b, k.select(in, e.loadF32(gates, {batch, t, head}), e.f32(0.0f)), gTile,
        ValueRange{k.tid, e.index(0)});
  if (cTile && kRNorm) {
    // c = rank1Scale beta r^2 (qk_l2norm factored).
    Value r = e.loadF32(kRNorm, {batch, t, qkHead});
    Value c = e.mul(e.mul(e.mul(e.f32(rank1Scale), e.loadF32(beta, {batch, t, head})),
                          r),
                    r);
    memref::StoreOp::create(b, k.select(in, c, e.f32(0.0f)), cTile,
                            ValueRange{k.tid, e.index(0)});
  } else if (cTile) {
    memref::StoreOp::create(
        b,
        k.select(in, e.mul(e.f32(rank1Scale), e.loadF32(beta, {batch, t, head})),
                 e.f32(0.0f)),
        cTile, ValueRange{k.tid, e.index(0)});
  }
}

SmallVector<Value> outputRowScales(MmaEmitter &k, Value qRNorm, ChunkRows rows,
                                   Value batch, Value qkHead, Value m0) {
  if (!qRNorm)
    return {};
  LoopEmitter &e = k.e;
  SmallVector<Value> scales;
  for (int64_t half : {0, 2}) {
    Value row = e.minIndex(k.accRow(m0, half), e.subIndex(rows.valid, e.index(1)));
    scales.push_back(e.loadF32(qRNorm, {batch, e.addIndex(rows.t0, row), qkHead}));
  }
  return scales;
}

void storeKeyRows(MmaEmitter &k, ArrayRef<SmallVector<Value>> acc, Value dst,
                  ChunkRows rows, Value m0, Value batch, Value head,
                  Value firstKey) {
  ImplicitLocOpBuilder &b = k.b;
  LoopEmitter &e = k.e;
  for (int64_t half = 0; half < 2; ++half) {
    Value row = k.accRow(m0, 2 * half);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(
        scf::IfOp::create(b, k.ult(row, rows.valid), false).thenBlock());
    for (size_t nt = 0; nt < acc.size(); ++nt)
      k.storePair(acc[nt][2 * half], acc[nt][2 * half + 1], dst,
                  {batch, e.addIndex(rows.t0, row), head,
                   e.addIndex(firstKey, k.accCol(8 * nt, 2 * half))},
                  /*pred=*/Value());
  }
}

void gatherRowTerms(MmaEmitter &k, const RowTermTiles &t, Value m0, Value column,
                    ArrayRef<Value> rowAcc, ArrayRef<Value> shareAcc, Value dot) {
  ImplicitLocOpBuilder &b = k.b;
  LoopEmitter &e = k.e;
  Type f64 = b.getF64Type();
  auto at = [&](Value buf, Value r, int64_t c) {
    return memref::LoadOp::create(b, buf, ValueRange{r, e.index(c)}).getResult();
  };
  for (int64_t half = 0; half < 2; ++half) {
    Value row = k.accRow(m0, 2 * half);
    memref::StoreOp::create(b, rowAcc[half], t.rowTerms, ValueRange{row, column});
    memref::StoreOp::create(b, shareAcc[half], t.shareTerms, ValueRange{row, column});
  }
  memref::StoreOp::create(b, dot, t.dotTerms, ValueRange{k.tid, e.index(0)});
  k.barrier();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(
        scf::IfOp::create(b, k.ult(k.tid, e.index(kChunk)), false).thenBlock());
    Value i = k.tid;
    Value g = arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
    Value share = arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
    for (int64_t q = 0; q < t.parts; ++q) {
      g = arith::AddFOp::create(b, g, at(t.rowTerms, i, q));
      share = arith::AddFOp::create(b, share, at(t.shareTerms, i, q));
    }
    g = e.forEachReduce(
        e.index(kChunk), {g}, [&](Value j, ValueRange acc) -> SmallVector<Value> {
          Value along = memref::LoadOp::create(b, t.mTile, ValueRange{i, j});
          Value across = memref::LoadOp::create(b, t.mTile, ValueRange{j, i});
          Value x = arith::AddFOp::create(b, acc[0],
                                          arith::ExtFOp::create(b, f64, along));
          return {arith::SubFOp::create(b, x, arith::ExtFOp::create(b, f64, across))};
        })[0];
    // Held in column 0 (every read of row i is this thread's).
    memref::StoreOp::create(b, g, t.rowTerms, ValueRange{i, e.index(0)});
    memref::StoreOp::create(b, share, t.shareTerms, ValueRange{i, e.index(0)});
  }
  k.barrier();
}

Value lastRowShare(MmaEmitter &k, const RowTermTiles &t, Value gLast) {
  ImplicitLocOpBuilder &b = k.b;
  LoopEmitter &e = k.e;
  Type f64 = b.getF64Type();
  auto at = [&](Value buf, Value r) {
    return memref::LoadOp::create(b, buf, ValueRange{r, e.index(0)}).getResult();
  };
  Value upperRow = e.addIndex(k.lane, e.index(32));
  Value shares = k.warpSum(arith::AddFOp::create(b, at(t.shareTerms, k.lane),
                                                 at(t.shareTerms, upperRow)));
  Value dot = arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
  for (int64_t part = 0; part < k.threads; part += 32)
    dot = arith::AddFOp::create(b, dot,
                                at(t.dotTerms, e.addIndex(k.lane, e.index(part))));
  return arith::AddFOp::create(
      b, shares,
      arith::MulFOp::create(b, arith::ExtFOp::create(b, f64, k.exp(gLast)),
                            k.warpSum(dot)));
}

} // namespace mlir::linattn::kernel
