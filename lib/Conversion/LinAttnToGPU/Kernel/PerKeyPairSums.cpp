//===- PerKeyPairSums.cpp - Pair sums under per-key gates -----------------===//

#include "PerKeyPairSums.h"

#include "ChunkGeometry.h"
#include "Gates.h"
#include "PerKeyScores.h"

namespace mlir::linattn::kernel {

void stagePairSumOperand(MmaEmitter &k, Value x, Value decayed, Value g,
                         Value valid, int64_t K, bool columns) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  auto blockFirst = [&](Value r) {
    return e.mulIndex(arith::DivUIOp::create(b, r, e.index(16)), e.index(16));
  };
  if (columns) {
    decayRows(k, x, decayed, g, valid, blockFirst, K, Value(), Value(),
              /*sinceRef=*/true);
    return;
  }
  decayRows(k, x, decayed, g, valid, [&](Value r) {
    return blockLastRow(e, blockFirst(r), valid);
  }, K);
}

void addPerKeyPairSums(MmaEmitter &k, SmallVector<SmallVector<Value>> &acc,
                       const PerKeyPairSumOperands &x, bool columns, Value m0,
                       Value valid, Value key0, Value ownFactored) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  int64_t tiles = acc.size();
  auto keyGate = [&](Value row, Value key) -> Value {
    return memref::LoadOp::create(b, x.g, ValueRange{row, key});
  };
  auto keyOf = [&](int64_t nt, int64_t i) {
    return e.addIndex(key0, k.accCol(8 * nt, i));
  };
  // The thread's own elements' gates G_ir, and whether their rows are
  // valid, read once for every block.
  SmallVector<Value> own;
  for (int64_t nt = 0; nt < tiles; ++nt)
    for (int64_t i = 0; i < 4; ++i)
      own.push_back(keyGate(k.accRow(m0, i), keyOf(nt, i)));
  Value rowValid[2] = {k.ult(k.accRow(m0, 0), valid), k.ult(k.accRow(m0, 2), valid)};
  // The other blocks, factored: rows I += exp(G_I - G_L) (A_IJ X'_J) for
  // J below I (L = J's last row, X' = decayedX); columns J += exp(G_F -
  // G_J) (A_IJ^T X''_I) for I above J (F = I's first row, X'' = decayedX).
  // Every block is multiplied (the masked A is zero above the diagonal)
  // and the others' share
  // selected, so the warps run one code path. The warp's own block is
  // factored the same way where its gates' spread allows (the factor
  // exp(G_i - G_L) or exp(G_F - G_j) >= 1 then stays below
  // exp(kMaxDiagonalSpread)), its B operand computed in fp32 and held
  // split: a pair (i, j) then enters the row sum at i and the column sum
  // at j to ~2^-17 alike, so its shares of dL/dG (+ at i, - at j) cancel
  // as the elementwise sums' do (with rounded X' and X'' they left dgate
  // 1e-2 off, bench/NOTES.md b11); else elementwise below.
  for (int64_t block = 0; block < kChunk / 16; ++block) {
    int64_t b0 = 16 * block;
    SmallVector<Value> aHi = k.fragA(TileView{x.pairsHi, columns}, m0, b0);
    SmallVector<Value> aLo = k.fragA(TileView{x.pairsLo, columns}, m0, b0);
    SmallVector<SmallVector<Value>> part = k.zeroAcc(tiles);
    TileView rowsOf{x.decayedX, /*transposed=*/true};
    for (int64_t nt = 0; nt < tiles; nt += 2) {
      SmallVector<Value> bFrag = k.fragB2(rowsOf, key0, 8 * nt, b0);
      for (int64_t j = 0; j < 2; ++j)
        part[nt + j] = k.mmaSplit(aHi, aLo, ArrayRef(bFrag).slice(2 * j, 2),
                                  /*bLo=*/{}, part[nt + j]);
    }
    Value blockStart = e.index(b0);
    Value other = columns ? arith::AndIOp::create(b, k.ult(m0, blockStart),
                                                  k.ult(blockStart, valid))
                                .getResult()
                          : k.ult(blockStart, m0);
    Value ref = columns ? blockStart : blockLastRow(e, blockStart, valid);
    // acc += sums * exp(G_i - G_ref) (rows) or exp(G_ref - G_j) (columns)
    // where `where` and the row is valid.
    auto addDecayed = [&](ArrayRef<SmallVector<Value>> sums, Value where) {
      for (int64_t nt = 0; nt < tiles; ++nt)
        for (int64_t i = 0; i < 4; ++i) {
          Value gRow = own[4 * nt + i], gRef = keyGate(ref, keyOf(nt, i));
          Value decay = k.exp(columns ? e.sub(gRef, gRow) : e.sub(gRow, gRef));
          Value keep = arith::AndIOp::create(b, where, rowValid[i / 2]);
          acc[nt][i] = k.select(keep, e.add(acc[nt][i], e.mul(sums[nt][i], decay)),
                                acc[nt][i]);
        }
    };
    addDecayed(part, other);
    // The warp's own block, factored: B = X exp(G_L - G) (rows) or X
    // exp(G - G_F) (columns) of its rows, from fp32, split.
    Value own = arith::AndIOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::eq, blockStart, m0),
        ownFactored);
    SmallVector<Value> before;
    for (const SmallVector<Value> &tile : acc)
      before.append(tile.begin(), tile.end());
    auto ownIf = scf::IfOp::create(b, TypeRange(ValueRange(before)), own, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ownIf.elseBlock());
      scf::YieldOp::create(b, before);
      b.setInsertionPointToStart(ownIf.thenBlock());
      Value src = x.x;
      auto element = [&](Value t, Value key) {
        Value xt = k.loadJoined(src, Value(), {t, key});
        Value g = keyGate(t, key), gRef = keyGate(ref, key);
        Value decayed = e.mul(xt, k.exp(columns ? e.sub(g, gRef) : e.sub(gRef, g)));
        return k.select(k.ult(t, valid), decayed, e.f32(0.0f));
      };
      SmallVector<SmallVector<Value>> ownPart = k.zeroAcc(tiles);
      for (int64_t nt = 0; nt < tiles; nt += 2) {
        SmallVector<Value> bLo;
        SmallVector<Value> bHi =
            k.fragB2FromElements(blockStart, key0, 8 * nt, element, bLo);
        for (int64_t j = 0; j < 2; ++j)
          ownPart[nt + j] = k.mmaSplit(aHi, aLo, ArrayRef(bHi).slice(2 * j, 2),
                                       ArrayRef(bLo).slice(2 * j, 2),
                                       ownPart[nt + j]);
      }
      addDecayed(ownPart, arith::ConstantOp::create(b, b.getBoolAttr(true)));
      SmallVector<Value> after;
      for (const SmallVector<Value> &tile : acc)
        after.append(tile.begin(), tile.end());
      scf::YieldOp::create(b, after);
    }
    for (int64_t nt = 0; nt < tiles; ++nt)
      for (int64_t i = 0; i < 4; ++i)
        acc[nt][i] = ownIf.getResult(4 * nt + i);
  }
  // The warp's own block elementwise where it was not factored, a token t
  // of it per step:
  //   rows:    acc_ir += [t <= i < valid] A_it x_tr exp(G_ir - G_tr)
  //   columns: acc_jr += [j <= t < valid] A_tj x_tr exp(G_tr - G_jr)
  SmallVector<Value> flat;
  for (int64_t nt = 0; nt < tiles; ++nt)
    for (int64_t i = 0; i < 4; ++i)
      flat.push_back(acc[nt][i]);
  Value rowsTile = x.x;
  auto elementwise = scf::IfOp::create(
      b, TypeRange(ValueRange(flat)),
      arith::XOrIOp::create(b, ownFactored,
                            arith::ConstantOp::create(b, b.getBoolAttr(true))),
      true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(elementwise.elseBlock());
  scf::YieldOp::create(b, flat);
  b.setInsertionPointToStart(elementwise.thenBlock());
  ValueRange sums = e.forEachReduce(
      e.index(16), flat, [&](Value step, ValueRange in) -> SmallVector<Value> {
        Value t = e.addIndex(m0, step);
        SmallVector<Value> out(in);
        Value pair[2], keep[2];
        for (int64_t half = 0; half < 2; ++half) {
          Value row = k.accRow(m0, 2 * half);
          pair[half] = columns ? k.loadJoined(x.pairsHi, x.pairsLo, {t, row})
                               : k.loadJoined(x.pairsHi, x.pairsLo, {row, t});
          keep[half] = columns
                           ? arith::AndIOp::create(
                                 b, arith::CmpIOp::create(
                                        b, arith::CmpIPredicate::ule, row, t),
                                 k.ult(t, valid)).getResult()
                           : arith::AndIOp::create(
                                 b, arith::CmpIOp::create(
                                        b, arith::CmpIPredicate::ule, t, row),
                                 k.ult(row, valid)).getResult();
        }
        for (int64_t nt = 0; nt < tiles; ++nt)
          for (int64_t odd = 0; odd < 2; ++odd) {
            Value key = keyOf(nt, odd);
            Value xt = k.loadJoined(rowsTile, Value(), {t, key});
            Value gt = keyGate(t, key);
            for (int64_t half = 0; half < 2; ++half) {
              int64_t idx = 4 * nt + 2 * half + odd;
              Value decay = k.exp(columns ? e.sub(gt, own[idx]) : e.sub(own[idx], gt));
              Value term = e.mul(e.mul(pair[half], xt), decay);
              out[idx] = k.select(keep[half], e.add(out[idx], term), out[idx]);
            }
          }
        return out;
      });
  scf::YieldOp::create(b, sums);
  b.setInsertionPointAfter(elementwise);
  for (int64_t nt = 0; nt < tiles; ++nt)
    for (int64_t i = 0; i < 4; ++i)
      acc[nt][i] = elementwise.getResult(4 * nt + i);
}

} // namespace mlir::linattn::kernel
