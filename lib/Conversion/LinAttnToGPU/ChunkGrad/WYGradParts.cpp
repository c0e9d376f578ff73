//===- WYGradParts.cpp - What chunk_grad's two WY kernels share -----------===//

#include "WYGradParts.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::linattn::kernel {

std::optional<WYGradShapes> wyGradShapes(ChunkGradOp op, std::string *whyNot) {
  WYGradShapes x;
  x.numQKHeads = dimOf(op.getK(), 2);
  x.K = dimOf(op.getK(), 3);
  x.numVHeads = dimOf(op.getV(), 2);
  x.V = dimOf(op.getV(), 3);
  if (!op.getBeta() || !op.getW() || !op.getU()) {
    if (whyNot)
      *whyNot = "it has no WY factors";
    return std::nullopt;
  }
  std::optional<BackwardOperandForms> forms =
      backwardOperandForms({op.getK()}, {op.getW()}, op.getGates(),
                           op.getChunkSize(), x.K, x.V, whyNot);
  if (!forms)
    return std::nullopt;
  x.forms = *forms;
  return x;
}

static Value rowScalar(MmaEmitter &k, Value tile, Value row) {
  return memref::LoadOp::create(k.b, tile, ValueRange{row, k.e.index(0)});
}

void storeSplitPair(MmaEmitter &k, Value x0, Value x1, Value hi, Value lo,
                    Value row, Value col) {
  k.storePair(x0, x1, hi, {row, col}, Value());
  k.storePair(k.e.roundingRest(x0, k.mmaElem), k.e.roundingRest(x1, k.mmaElem), lo,
              {row, col}, Value());
}

void stageWYRowScalars(MmaEmitter &k, ChunkRows rows, Value batch, Value head,
                       Value beta, Value gates, const WYRowTiles &t,
                       float rank1Scale, const WYRowNorms &norms) {
  ImplicitLocOpBuilder &b = k.b;
  LoopEmitter &e = k.e;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(
      scf::IfOp::create(b, k.ult(k.tid, e.index(kChunk)), false).thenBlock());
  Value tok = e.addIndex(rows.t0, e.minIndex(k.tid, e.subIndex(rows.valid, e.index(1))));
  Value in = k.ult(k.tid, rows.valid);
  Value zero = e.f32(0.0f);
  Value x = k.select(in, e.loadF32(beta, {batch, tok, head}), zero);
  if (norms.kRNorm) {
    // qk_l2norm factored: b = beta r, c = rank1_scale beta r^2.
    Value r = e.loadF32(norms.kRNorm, {batch, tok, norms.qkHead});
    x = e.mul(x, r);
    memref::StoreOp::create(b, x, t.beta, ValueRange{k.tid, e.index(0)});
    memref::StoreOp::create(b, e.mul(e.mul(e.f32(rank1Scale), x), r), t.c,
                            ValueRange{k.tid, e.index(0)});
  } else {
    memref::StoreOp::create(b, x, t.beta, ValueRange{k.tid, e.index(0)});
    memref::StoreOp::create(b, e.mul(e.f32(rank1Scale), x), t.c,
                            ValueRange{k.tid, e.index(0)});
  }
  if (t.g)
    memref::StoreOp::create(b, k.select(in, e.loadF32(gates, {batch, tok, head}), zero),
                            t.g, ValueRange{k.tid, e.index(0)});
}

void storeWYRowTerm(MmaEmitter &k, WarpTiling &tiling, const WYRowTiles &t,
                    WYRowTerm term, ArrayRef<Value> partial) {
  LoopEmitter &e = k.e;
  Value column = tiling.plus(tiling.base(t.parts),
                             e.addIndex(e.index(term * t.parts), k.quad));
  for (int64_t half = 0; half < 2; ++half)
    memref::StoreOp::create(k.b, partial[half], t.rowTerms,
                            ValueRange{k.accRow(tiling.m0(), 2 * half), column});
}

void storeKeyPairs(MmaEmitter &k, WarpTiling &tiling,
                   ArrayRef<SmallVector<Value>> acc, Value col0, ChunkRows rows,
                   const WYRowTiles &t, Value pTile, Value lTile,
                   Value keyPairs, Value batch, Value head) {
  ImplicitLocOpBuilder &b = k.b;
  LoopEmitter &e = k.e;
  Value m0 = tiling.m0();
  for (int64_t nt = 0; nt < int64_t(acc.size()); ++nt)
    for (int64_t i = 0; i < 4; ++i) {
      Value row = k.accRow(m0, i), col = tiling.plus(col0, k.accCol(8 * nt, i));
      Value keep = arith::AndIOp::create(b, k.ult(col, row), k.ult(row, rows.valid));
      Value x = acc[nt][i];
      if (t.g)
        x = e.mul(x, k.select(keep, k.exp(e.sub(rowScalar(k, t.g, row),
                                                rowScalar(k, t.g, col))),
                              e.f32(0.0f)));
      x = k.select(keep, x, e.f32(0.0f));
      memref::StoreOp::create(b, x, pTile, ValueRange{row, col});
      memref::StoreOp::create(b, e.mul(rowScalar(k, t.c, row), x), lTile,
                              ValueRange{row, col});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(row, rows.valid), false).thenBlock());
      memref::StoreOp::create(b, x, keyPairs,
                              ValueRange{batch, e.addIndex(rows.t0, row), head, col});
    }
}

SmallVector<SmallVector<Value>>
storeFactors(MmaEmitter &k, WarpTiling &tiling, SmallVector<SmallVector<Value>> acc,
             Value col0, ChunkRows rows, const WYRowTiles &t, Value pTile,
             Value factorPairs, Value batch, Value head) {
  ImplicitLocOpBuilder &b = k.b;
  LoopEmitter &e = k.e;
  Value m0 = tiling.m0();
  Value partial[2] = {e.f32(0.0f), e.f32(0.0f)};
  for (int64_t nt = 0; nt < int64_t(acc.size()); ++nt)
    for (int64_t i = 0; i < 4; ++i) {
      Value row = k.accRow(m0, i), col = tiling.plus(col0, k.accCol(8 * nt, i));
      Value keep = arith::AndIOp::create(b, k.ult(col, row), k.ult(row, rows.valid));
      Value dL = k.select(keep, arith::NegFOp::create(b, acc[nt][i]), e.f32(0.0f));
      partial[i / 2] = e.add(partial[i / 2],
                             e.mul(dL, memref::LoadOp::create(b, pTile,
                                                              ValueRange{row, col})));
      if (!factorPairs) {
        acc[nt][i] = e.mul(rowScalar(k, t.c, row), dL);
        continue;
      }
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(row, rows.valid), false).thenBlock());
      memref::StoreOp::create(b, e.mul(rowScalar(k, t.c, row), dL), factorPairs,
                              ValueRange{batch, e.addIndex(rows.t0, row), head, col});
    }
  storeWYRowTerm(k, tiling, t, kThroughL, partial);
  k.barrier();
  return factorPairs ? SmallVector<SmallVector<Value>>() : acc;
}

void storeBetaGradient(MmaEmitter &k, ChunkRows rows, const WYRowTiles &t,
                       Value dbeta, Value batch, Value head, float rank1Scale,
                       const WYRowNorms &norms) {
  ImplicitLocOpBuilder &b = k.b;
  LoopEmitter &e = k.e;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(
      scf::IfOp::create(b, k.ult(k.tid, rows.valid), false).thenBlock());
  Value i = k.tid;
  auto term = [&](WYRowTerm which) {
    Value sum = e.f32(0.0f);
    for (int64_t q = 0; q < t.parts; ++q)
      sum = e.add(sum, memref::LoadOp::create(
                           b, t.rowTerms, ValueRange{i, e.index(which * t.parts + q)}));
    return sum;
  };
  Value throughW = term(kThroughW); // per key: exp(G) taken with Y . k
  if (t.g)
    throughW = e.mul(throughW, k.exp(rowScalar(k, t.g, i)));
  Value x;
  if (norms.kRNorm) {
    // d/dbeta of c = rank1_scale beta r^2 and b = beta r.
    Value r = e.loadF32(norms.kRNorm, {batch, e.addIndex(rows.t0, i), norms.qkHead});
    Value throughC = e.mul(e.f32(rank1Scale), e.add(throughW, term(kThroughL)));
    Value throughB = term(kThroughU);
    x = e.add(e.mul(e.mul(throughC, r), r), e.mul(throughB, r));
  } else {
    x = e.add(e.mul(e.f32(rank1Scale), e.add(throughW, term(kThroughL))),
              term(kThroughU));
  }
  memref::StoreOp::create(b, x, dbeta, ValueRange{batch, e.addIndex(rows.t0, i), head});
}

} // namespace mlir::linattn::kernel
