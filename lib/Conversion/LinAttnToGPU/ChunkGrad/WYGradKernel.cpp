//===- WYGradKernel.cpp - The WY factors' share of chunk_grad, a kernel ---===//
//
// One block per (chunk, value head, sequence) computes what
// linattn.chunk_grad's loops did in three nests through global memory.
// With c = rank1_scale beta, E_ij = exp(G_i - G_j) (1 without gates):
//
//   P   = (K K^T) * E, strictly lower                   (tensor cores)
//   dW  = -dD S_n^T                                      (tensor cores)
//   [Y Z] = A^T [dW dD]: (I + L)^T [Y Z] = [dW dD], L = diag(c) P, by
//         back substitution, a thread per column held in registers,
//         right-looking: once row j is final, y_i -= P_ji (c_j y_j), i < j
//   dL  = -(Y W^T + Z U^T), F = diag(c) dL, strictly lower (tensor cores)
//   dv  = diag(beta) Z
//   dbeta_i = rank1_scale (Y_i . (k_i exp(G_i)) + sum_j dL_ij P_ij) + Z_i . v_i
//
// P, F and Y leave as the key-gradient kernel reads them ([B, T, HV, *]
// f32, chunk-local columns). The f32 operands (dD, S, Y, Z, U) enter the
// tensor cores split into hi + lo; the back substitution is f32, as the
// loops' is.
//
//===----------------------------------------------------------------------===//

#include "ChunkGradKernels.h"

#include "../Kernel/MmaEmitter.h"
#include "../KernelSupport.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

namespace mlir::linattn::kernel {
namespace {

/// The WY kernel, decided: shapes and shared-memory layout.
struct WYGradPlan {
  static std::optional<WYGradPlan> build(ChunkGradOp op,
                                         const GPUTargetInfo &target);

  Type mmaElem;
  int64_t numQKHeads = 0, numVHeads = 0, K = 0, V = 0, keyBlock = 0;
  bool gates = false;
  float rank1Scale = 0.0f;

  int64_t keyStride = 0, valueStride = 0, yStride = 0;
  // Byte offsets. Region `shared` holds dD's and S's split tiles, later Y's
  // and Z's (the first pair is dead by then).
  int64_t kOff = 0, wOff = 0, uHiOff = 0, uLoOff = 0;
  int64_t dHiOff = 0, dLoOff = 0, sHiOff = 0, sLoOff = 0;
  int64_t yHiOff = 0, yLoOff = 0, zHiOff = 0, zLoOff = 0;
  int64_t pOff = 0, yfOff = 0, gOff = 0, cOff = 0, betaOff = 0, rowOff = 0;
  int64_t sharedBytes = 0;
};

std::optional<WYGradPlan> WYGradPlan::build(ChunkGradOp op,
                                            const GPUTargetInfo &target) {
  WYGradPlan p;
  p.numQKHeads = dimOf(op.getK(), 2);
  p.K = dimOf(op.getK(), 3);
  p.numVHeads = dimOf(op.getV(), 2);
  p.V = dimOf(op.getV(), 3);
  if (!op.getBeta() || !op.getW() || !op.getU())
    return std::nullopt;
  std::optional<Type> elem = backwardOperandType(
      {op.getK(), op.getW()}, op.getGates(), op.getChunkSize(), p.K, p.V);
  if (!elem)
    return std::nullopt;
  p.mmaElem = *elem;
  p.keyBlock = p.K % 64 == 0 ? 64 : 32;
  p.gates = bool(op.getGates());
  p.rank1Scale = op.getRank1Scale()->convertToFloat();
  p.keyStride = p.K + kPad;
  p.valueStride = p.V + kPad;
  p.yStride = p.K + p.V + 1; // odd: a row per thread reads without conflicts

  SharedLayout layout;
  auto take = [&](int64_t bytes) { return layout.take(bytes); };
  int64_t keyTile = kChunk * p.keyStride * 2, valueTile = kChunk * p.valueStride * 2;
  p.kOff = take(keyTile);
  p.wOff = take(keyTile);
  p.uHiOff = take(valueTile);
  p.uLoOff = take(valueTile);
  int64_t shared = layout.current();
  p.dHiOff = take(valueTile);
  p.dLoOff = take(valueTile);
  p.sHiOff = take(p.keyBlock * p.valueStride * 2);
  p.sLoOff = take(p.keyBlock * p.valueStride * 2);
  layout.rewind(shared);
  p.yHiOff = take(keyTile);
  p.yLoOff = take(keyTile);
  p.zHiOff = take(valueTile);
  p.zLoOff = take(valueTile);
  layout.rewind(layout.size());
  p.pOff = take(kChunk * (kChunk + 1) * 4);
  p.yfOff = take(kChunk * p.yStride * 4);
  p.gOff = take(kChunk * 4);
  p.cOff = take(kChunk * 4);
  p.betaOff = take(kChunk * 4);
  p.rowOff = take(kChunk * 4 * 4);
  p.sharedBytes = layout.size();
  if (p.sharedBytes > target.maxSharedBytesPerBlock())
    return std::nullopt;
  return p;
}

class WYGradKernel {
public:
  WYGradKernel(const WYGradPlan &plan, const WYGradBuffers &io, MmaEmitter &k)
      : p(plan), io(io), k(k), b(k.b), e(k.e) {}
  void emit();

private:
  Value tile16(int64_t off, int64_t rows, int64_t stride) {
    return k.tile(off, rows, stride, p.mmaElem);
  }
  Value vecAt(Value buf, Value i) {
    return memref::LoadOp::create(b, buf, ValueRange{i, e.index(0)});
  }
  Value token(Value i) { return e.addIndex(rows.t0, i); }
  void stage();
  void keyPairs();
  void negatedWGradient();
  void backSubstitute();
  void leaveYZ();
  void factors();
  void betaGradient();

  const WYGradPlan &p;
  const WYGradBuffers &io;
  MmaEmitter &k;
  ImplicitLocOpBuilder &b;
  LoopEmitter &e;

  Value n, hv, bIdx, h, m0;
  ChunkRows rows;
  Value kTile, wTile, uHi, uLo, dHi, dLo, sHi, sLo, yHi, yLo, zHi, zLo;
  Value pTile, yf, gTile, cTile, betaTile, rowTerms;
};

void WYGradKernel::stage() {
  auto rowLoad = [&](Value src, Value head) {
    return [&, src, head](Value r, Value c) {
      return k.load8(src, {bIdx, token(r), head, c});
    };
  };
  k.fillTile(kTile, kChunk, p.K, rows.valid, rowLoad(io.k, h));
  k.fillTile(wTile, kChunk, p.K, rows.valid, rowLoad(io.w, hv));
  k.fillTile(uHi, kChunk, p.V, rows.valid, rowLoad(io.u, hv), uLo);
  k.fillTile(dHi, kChunk, p.V, rows.valid, rowLoad(io.gradValues, hv), dLo);
  // Z's columns of Yf start as dD (f32, exact); rows past valid are 0.
  k.forEachOfBlock(kChunk * p.V, [&](Value idx) {
    Value r = arith::DivUIOp::create(b, idx, e.index(p.V));
    Value c = arith::RemUIOp::create(b, idx, e.index(p.V));
    Value x = k.loadRowOrZero(r, rows.valid, b.getF32Type(), [&](Value row) {
      return e.loadF32(io.gradValues, {bIdx, token(row), hv, c});
    });
    memref::StoreOp::create(b, x, yf, ValueRange{r, e.addIndex(e.index(p.K), c)});
  });
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(
      scf::IfOp::create(b, k.ult(k.tid, e.index(kChunk)), false).thenBlock());
  Value t = token(e.minIndex(k.tid, e.subIndex(rows.valid, e.index(1))));
  Value in = k.ult(k.tid, rows.valid);
  Value zero = e.f32(0.0f);
  Value beta = k.select(in, e.loadF32(io.beta, {bIdx, t, hv}), zero);
  memref::StoreOp::create(b, beta, betaTile, ValueRange{k.tid, e.index(0)});
  memref::StoreOp::create(b, e.mul(e.f32(p.rank1Scale), beta), cTile,
                          ValueRange{k.tid, e.index(0)});
  memref::StoreOp::create(
      b, p.gates ? k.select(in, e.loadF32(io.gates, {bIdx, t, hv}), zero) : zero,
      gTile, ValueRange{k.tid, e.index(0)});
}

// Warp w: rows i in [16 w, + 16) of P = (K K^T) * E for j < i < valid, to
// shared memory and to keyPairs.
void WYGradKernel::keyPairs() {
  SmallVector<SmallVector<Value>> acc = k.zeroAcc(kChunk / 8);
  k.gemm(acc, Operand{TileView{kTile}, std::nullopt}, m0,
         Operand{TileView{kTile}, std::nullopt}, p.K);
  for (int64_t nt = 0; nt < kChunk / 8; ++nt)
    for (int64_t i = 0; i < 4; ++i) {
      Value row = k.accRow(m0, i), col = k.accCol(8 * nt, i);
      Value keep = arith::AndIOp::create(b, k.ult(col, row), k.ult(row, rows.valid));
      Value x = acc[nt][i];
      if (p.gates)
        x = e.mul(x, k.select(keep, k.exp(e.sub(vecAt(gTile, row), vecAt(gTile, col))),
                              e.f32(0.0f)));
      x = k.select(keep, x, e.f32(0.0f));
      memref::StoreOp::create(b, x, pTile, ValueRange{row, col});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(row, rows.valid), false).thenBlock());
      memref::StoreOp::create(b, x, io.keyPairs, ValueRange{bIdx, token(row), hv, col});
    }
}

// Yf[:, keys] = -dD S_n^T, key block by key block (S's rows staged split).
void WYGradKernel::negatedWGradient() {
  for (int64_t key0 = 0; key0 < p.K; key0 += p.keyBlock) {
    k.fillTile(sHi, p.keyBlock, p.V, Value(), [&](Value r, Value c) {
      return k.load8(io.states, {bIdx, n, hv, e.addIndex(e.index(key0), r), c});
    }, sLo);
    k.barrier();
    SmallVector<SmallVector<Value>> acc = k.zeroAcc(p.keyBlock / 8);
    k.gemm(acc, Operand{TileView{dHi}, TileView{dLo}}, m0,
           Operand{TileView{sHi}, TileView{sLo}}, p.V);
    for (int64_t nt = 0; nt < p.keyBlock / 8; ++nt)
      for (int64_t i = 0; i < 4; ++i)
        memref::StoreOp::create(
            b, arith::NegFOp::create(b, acc[nt][i]), yf,
            ValueRange{k.accRow(m0, i),
                       e.addIndex(e.index(key0), k.accCol(8 * nt, i))});
    k.barrier(); // S's tiles are free
  }
}

// A thread per column of [Y Z] (two passes of the block's threads), the
// column's 64 rows in registers.
void WYGradKernel::backSubstitute() {
  // The passes over the columns as a loop of run-time trip count (the
  // block's size): unrolled, ptxas saw two copies of the 2016 products
  // and spilled (32 registers, 63 KB of spills).
  Value threads = gpu::BlockDimOp::create(b, gpu::Dimension::x);
  Value passes = arith::CeilDivUIOp::create(b, e.index(p.K + p.V), threads);
  e.forEach(passes, [&](Value pass) {
    Value col = e.addIndex(k.tid, e.mulIndex(pass, threads));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(
        scf::IfOp::create(b, k.ult(col, e.index(p.K + p.V)), false).thenBlock());
    SmallVector<Value> y;
    for (int64_t i = 0; i < kChunk; ++i)
      y.push_back(memref::LoadOp::create(b, yf, ValueRange{e.index(i), col}));
    for (int64_t j = kChunk - 1; j > 0; --j) {
      Value t = e.mul(vecAt(cTile, e.index(j)), y[j]);
      for (int64_t i = 0; i < j; ++i)
        y[i] = e.sub(y[i], e.mul(memref::LoadOp::create(
                                     b, pTile, ValueRange{e.index(j), e.index(i)}),
                                 t));
    }
    for (int64_t i = 0; i < kChunk; ++i)
      memref::StoreOp::create(b, y[i], yf, ValueRange{e.index(i), col});
  });
  k.barrier();
}

// Y to yW, beta Z to dv (rows below valid), and both split for F's products.
void WYGradKernel::leaveYZ() {
  Type f32 = b.getF32Type();
  k.forEachOfBlock(kChunk * (p.K + p.V), [&](Value idx) {
    Value r = arith::DivUIOp::create(b, idx, e.index(p.K + p.V));
    Value c = arith::RemUIOp::create(b, idx, e.index(p.K + p.V));
    Value x = memref::LoadOp::create(b, yf, ValueRange{r, c});
    Value hi = arith::TruncFOp::create(b, p.mmaElem, x);
    Value lo = arith::TruncFOp::create(
        b, p.mmaElem, e.sub(x, arith::ExtFOp::create(b, f32, hi).getResult()));
    Value isKey = k.ult(c, e.index(p.K));
    Value in = k.ult(r, rows.valid);
    auto ifOp = scf::IfOp::create(b, isKey, /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    memref::StoreOp::create(b, hi, yHi, ValueRange{r, c});
    memref::StoreOp::create(b, lo, yLo, ValueRange{r, c});
    b.setInsertionPointToStart(
        scf::IfOp::create(b, in, false).thenBlock());
    memref::StoreOp::create(b, x, io.yW, ValueRange{bIdx, token(r), hv, c});
    b.setInsertionPointToStart(ifOp.elseBlock());
    Value cv = e.subIndex(c, e.index(p.K));
    memref::StoreOp::create(b, hi, zHi, ValueRange{r, cv});
    memref::StoreOp::create(b, lo, zLo, ValueRange{r, cv});
    b.setInsertionPointToStart(
        scf::IfOp::create(b, in, false).thenBlock());
    e.storeFromF32(e.mul(vecAt(betaTile, r), x), io.dv,
                   {bIdx, token(r), hv, cv});
  });
  k.barrier();
}

// dL = -(Y W^T + Z U^T) for the warp's rows; F = c_i dL_ij below the
// diagonal to factorPairs; the rows' sum_j dL_ij P_ij by quad.
void WYGradKernel::factors() {
  SmallVector<SmallVector<Value>> acc = k.zeroAcc(kChunk / 8);
  k.gemm(acc, Operand{TileView{yHi}, TileView{yLo}}, m0,
         Operand{TileView{wTile}, std::nullopt}, p.K);
  k.gemm(acc, Operand{TileView{zHi}, TileView{zLo}}, m0,
         Operand{TileView{uHi}, TileView{uLo}}, p.V);
  Value partial[2] = {e.f32(0.0f), e.f32(0.0f)};
  for (int64_t nt = 0; nt < kChunk / 8; ++nt)
    for (int64_t i = 0; i < 4; ++i) {
      Value row = k.accRow(m0, i), col = k.accCol(8 * nt, i);
      Value keep = arith::AndIOp::create(b, k.ult(col, row), k.ult(row, rows.valid));
      Value dL = k.select(keep, arith::NegFOp::create(b, acc[nt][i]), e.f32(0.0f));
      partial[i / 2] = e.add(partial[i / 2],
                             e.mul(dL, memref::LoadOp::create(b, pTile,
                                                              ValueRange{row, col})));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(row, rows.valid), false).thenBlock());
      memref::StoreOp::create(b, e.mul(vecAt(cTile, row), dL), io.factorPairs,
                              ValueRange{bIdx, token(row), hv, col});
    }
  for (int64_t half = 0; half < 2; ++half)
    memref::StoreOp::create(b, partial[half], rowTerms,
                            ValueRange{k.accRow(m0, 2 * half), k.quad});
  k.barrier();
}

// A thread per row: dbeta_i = rank1_scale (Y_i . (k_i exp(G_i)) + sum_j
// dL_ij P_ij) + Z_i . v_i.
void WYGradKernel::betaGradient() {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(
      scf::IfOp::create(b, k.ult(k.tid, rows.valid), false).thenBlock());
  Value i = k.tid;
  Type f32 = b.getF32Type();
  Value throughW = e.forEachReduce(
      e.index(p.K), {e.f32(0.0f)}, [&](Value r, ValueRange acc) -> SmallVector<Value> {
        Value kr = arith::ExtFOp::create(
            b, f32, memref::LoadOp::create(b, kTile, ValueRange{i, r}).getResult());
        return {e.add(acc[0], e.mul(memref::LoadOp::create(b, yf, ValueRange{i, r}),
                                    kr))};
      })[0];
  if (p.gates)
    throughW = e.mul(throughW, k.exp(vecAt(gTile, i)));
  Value throughU = e.forEachReduce(
      e.index(p.V), {e.f32(0.0f)}, [&](Value c, ValueRange acc) -> SmallVector<Value> {
        Value z = memref::LoadOp::create(
            b, yf, ValueRange{i, e.addIndex(e.index(p.K), c)});
        return {e.add(acc[0], e.mul(z, e.loadF32(io.v, {bIdx, token(i), hv, c})))};
      })[0];
  Value throughL = e.f32(0.0f);
  for (int64_t q = 0; q < 4; ++q)
    throughL = e.add(throughL, memref::LoadOp::create(b, rowTerms,
                                                      ValueRange{i, e.index(q)}));
  Value dbeta = e.add(e.mul(e.f32(p.rank1Scale), e.add(throughW, throughL)), throughU);
  memref::StoreOp::create(b, dbeta, io.dbeta, ValueRange{bIdx, token(i), hv});
}

void WYGradKernel::emit() {
  Block *body = b.getInsertionBlock();
  n = body->getArgument(0);
  hv = body->getArgument(1);
  bIdx = body->getArgument(2);
  h = e.qkHead(hv, p.numVHeads, p.numQKHeads);
  m0 = e.mulIndex(k.warp, e.index(16));
  rows = chunkRows(e, n, io.seqLen);
  Type f32 = b.getF32Type();
  kTile = tile16(p.kOff, kChunk, p.keyStride);
  wTile = tile16(p.wOff, kChunk, p.keyStride);
  uHi = tile16(p.uHiOff, kChunk, p.valueStride);
  uLo = tile16(p.uLoOff, kChunk, p.valueStride);
  dHi = tile16(p.dHiOff, kChunk, p.valueStride);
  dLo = tile16(p.dLoOff, kChunk, p.valueStride);
  sHi = tile16(p.sHiOff, p.keyBlock, p.valueStride);
  sLo = tile16(p.sLoOff, p.keyBlock, p.valueStride);
  yHi = tile16(p.yHiOff, kChunk, p.keyStride);
  yLo = tile16(p.yLoOff, kChunk, p.keyStride);
  zHi = tile16(p.zHiOff, kChunk, p.valueStride);
  zLo = tile16(p.zLoOff, kChunk, p.valueStride);
  pTile = k.tile(p.pOff, kChunk, kChunk + 1, f32);
  yf = k.tile(p.yfOff, kChunk, p.yStride, f32);
  gTile = k.tile(p.gOff, kChunk, 1, f32);
  cTile = k.tile(p.cOff, kChunk, 1, f32);
  betaTile = k.tile(p.betaOff, kChunk, 1, f32);
  rowTerms = k.tile(p.rowOff, kChunk, 4, f32);

  stage();
  k.barrier();
  keyPairs();
  negatedWGradient(); // its barriers publish P too
  backSubstitute();
  leaveYZ();
  factors();
  betaGradient();
}

} // namespace

bool canLowerWYGrad(ChunkGradOp op, const GPUTargetInfo &target) {
  return WYGradPlan::build(op, target).has_value();
}

void emitWYGradKernel(ImplicitLocOpBuilder &b, ChunkGradOp op,
                      const GPUTargetInfo &target, const WYGradBuffers &io) {
  WYGradPlan p = *WYGradPlan::build(op, target);
  emitChunkGridLaunch(b, io.seqLen, p.numVHeads, io.batch, p.sharedBytes,
                      p.mmaElem, [&](MmaEmitter &k) { WYGradKernel(p, io, k).emit(); });
}

} // namespace mlir::linattn::kernel
