//===- OutputShareOfGradValues.cpp - dD's share through the output --------===//
//
// A block per (chunk, value head, sequence): q, k and the per-key gates
// G [64][K + 4] staged by cp.async; K' = K exp(G_L - G) (L each 16-row
// block's last valid row); the warps' query rows j of the scores
//   P_ji = scale sum_r q_jr k_ir exp(G_jr - G_ir),  i <= j < valid
// by PerKeyScores.h (factored blocks on tensor cores, strong-gate diagonal
// blocks elementwise), stored split (hi + lo); then dO, over q's tile,
// and X = P^T dO on tensor cores, the warps' key rows i, to global memory
// in f32. dO over q keeps the block within half an SM's shared memory at
// K = V = 128 (104448 bytes), so that two blocks share an SM and one's
// copies pass under the other's products.
//
//===----------------------------------------------------------------------===//

#include "OutputShareOfGradValues.h"

#include "../Kernel/ChunkGeometry.h"
#include "../Kernel/Gates.h"
#include "../Kernel/MmaEmitter.h"
#include "../Kernel/PerKeyScores.h"
#include "../KernelSupport.h"

namespace mlir::linattn::kernel {
namespace {

/// The kernel, decided: shapes and shared-memory layout.
struct OutputSharePlan {
  static std::optional<OutputSharePlan> build(ChunkStatePassGradOp op,
                                              const GPUTargetInfo &target,
                                              std::string *whyNot = nullptr);

  Type mmaElem;
  int64_t numQKHeads = 0, numVHeads = 0, K = 0, V = 0;
  /// X's columns per product pass (its accumulators: 16 rows of them).
  int64_t valueBlock = 0;
  float scale = 0.0f;
  int64_t keyStride = 0, valueStride = 0, gStride = 0, pairStride = 0;
  int64_t qOff = 0, kOff = 0, kdOff = 0, dOOff = 0, gOff = 0, pHiOff = 0,
          pLoOff = 0, sharedBytes = 0;
};

std::optional<OutputSharePlan>
OutputSharePlan::build(ChunkStatePassGradOp op, const GPUTargetInfo &target,
                       std::string *whyNot) {
  auto no = [&](std::string why) -> std::optional<OutputSharePlan> {
    if (whyNot)
      *whyNot = std::move(why);
    return std::nullopt;
  };
  OutputSharePlan p;
  p.numQKHeads = dimOf(op.getQ(), 2);
  p.K = dimOf(op.getQ(), 3);
  p.numVHeads = dimOf(op.getGradOutput(), 2);
  p.V = dimOf(op.getGradOutput(), 3);
  std::string why;
  std::optional<BackwardOperandForms> forms = backwardOperandForms(
      {op.getQ(), op.getK()}, {op.getGradOutput()}, op.getGates(),
      op.getChunkSize(), p.K, p.V, &why);
  if (!forms)
    return no(why);
  if (!forms->perKeyGates)
    return no("its gates are not per key");
  if (forms->splitKeys)
    return no("its keys are f32");
  p.mmaElem = forms->mmaElem;
  p.scale = op.getScale().convertToFloat();
  p.valueBlock = p.V % 64 == 0 ? 64 : p.V % 32 == 0 ? 32 : 16;
  p.keyStride = p.K + kPad;
  p.valueStride = p.V + kPad;
  p.gStride = p.K + 4;
  p.pairStride = kChunk + kPad;
  SharedLayout layout;
  int64_t keyTile = kChunk * p.keyStride * 2;
  p.qOff = p.dOOff = layout.take(std::max(keyTile, kChunk * p.valueStride * 2));
  p.kOff = layout.take(keyTile);
  p.kdOff = layout.take(keyTile);
  p.gOff = layout.take(kChunk * p.gStride * 4);
  p.pHiOff = layout.take(kChunk * p.pairStride * 2);
  p.pLoOff = layout.take(kChunk * p.pairStride * 2);
  p.sharedBytes = layout.size();
  if (p.sharedBytes > target.maxSharedBytesPerBlock())
    return no(sharedBytesReason(p.sharedBytes, target));
  return p;
}

class OutputShareKernel {
public:
  OutputShareKernel(const OutputSharePlan &plan, Value q, Value keys,
                    Value gates, Value gradOutput, Value qRNorm, Value x,
                    Value seqLen, MmaEmitter &k)
      : p(plan), q(q), keys(keys), gates(gates), gradOutput(gradOutput),
        qRNorm(qRNorm), x(x), seqLen(seqLen), k(k), b(k.b), e(k.e) {}

  void emit();

private:
  Value tile16(int64_t off, int64_t cols) {
    return k.tile(off, kChunk, cols, p.mmaElem);
  }
  /// The warp's query rows of P against every 16-key block, split to the
  /// pair tiles (zero above the diagonal and past valid).
  void stageScores();

  const OutputSharePlan &p;
  Value q, keys, gates, gradOutput, qRNorm, x, seqLen;
  MmaEmitter &k;
  ImplicitLocOpBuilder &b;
  LoopEmitter &e;

  Value n, hv, bIdx, h, m0;
  ChunkRows rows;
  Value qTile, kTile, kdTile, dOTile, gTile, pHi, pLo;
};

void OutputShareKernel::stageScores() {
  // qk_l2norm factored: query row j's scores take scale s_j.
  SmallVector<Value> rowScales;
  if (qRNorm)
    for (int64_t half : {0, 2}) {
      Value row = e.minIndex(k.accRow(m0, half), e.subIndex(rows.valid, e.index(1)));
      rowScales.push_back(e.mul(
          e.f32(p.scale), e.loadF32(qRNorm, {bIdx, e.addIndex(rows.t0, row), h})));
    }
  forEachCausalScoreBlock(k, Operand::of(qTile, Value()), Operand::of(kTile, Value()),
                          Operand::of(kdTile, Value()), gTile, m0, rows.valid,
                          p.scale, p.K,
                          [&](Value i0, ArrayRef<Value> hi, ArrayRef<Value> lo) {
    k.stmatrix4(pHi, m0, i0, hi.take_front(4), hi.drop_front(4), false);
    k.stmatrix4(pLo, m0, i0, lo.take_front(4), lo.drop_front(4), false);
  }, rowScales);
}

void OutputShareKernel::emit() {
  Block *body = b.getInsertionBlock();
  n = body->getArgument(0);
  hv = body->getArgument(1);
  bIdx = body->getArgument(2);
  h = e.qkHead(hv, p.numVHeads, p.numQKHeads);
  m0 = e.mulIndex(k.warp, e.index(16));
  rows = chunkRows(e, n, seqLen);
  qTile = tile16(p.qOff, p.keyStride);
  kTile = tile16(p.kOff, p.keyStride);
  kdTile = tile16(p.kdOff, p.keyStride);
  dOTile = tile16(p.dOOff, p.valueStride);
  gTile = k.tile(p.gOff, kChunk, p.gStride, b.getF32Type());
  pHi = tile16(p.pHiOff, p.pairStride);
  pLo = tile16(p.pLoOff, p.pairStride);

  k.copyTokenRowsAsync(qTile, p.K, rows, seqLen, q, bIdx, h);
  k.copyTokenRowsAsync(kTile, p.K, rows, seqLen, keys, bIdx, h);
  k.copyTokenRowsAsync(gTile, p.K, rows, seqLen, gates, bIdx, hv);
  k.waitCopies(k.commitCopies(), 0);
  k.barrier();
  decayRows(k, kTile, kdTile, gTile, rows.valid, [&](Value r) {
    Value row0 = e.mulIndex(arith::DivUIOp::create(b, r, e.index(16)), e.index(16));
    return blockLastRow(e, row0, rows.valid);
  }, p.K);
  k.barrier();
  stageScores();
  k.barrier(); // q is read: dO takes its tile
  k.copyTokenRowsAsync(dOTile, p.V, rows, seqLen, gradOutput, bIdx, hv);
  k.waitCopies(k.commitCopies(), 0);
  k.barrier();
  // X's rows i = the warp's: sum_j P_ji dO_j (A = P^T split, B = dO^T).
  e.forEach(e.index(p.V / p.valueBlock), [&](Value vb) {
    Value v0 = e.mulIndex(vb, e.index(p.valueBlock));
    SmallVector<SmallVector<Value>> acc = k.zeroAcc(p.valueBlock / 8);
    k.gemm(acc, Operand{TileView{pHi, true}, TileView{pLo, true}}, m0,
           Operand{TileView{dOTile, true}, std::nullopt}, kChunk, v0);
    for (int64_t nt = 0; nt < p.valueBlock / 8; ++nt)
      k.forEachPair(m0, nt, [&](Value row, Value col, int64_t i) {
        k.storePair(acc[nt][i], acc[nt][i + 1], x,
                    {bIdx, e.addIndex(rows.t0, row), hv, e.addIndex(v0, col)},
                    k.ult(row, rows.valid));
      });
  });
}

} // namespace

std::string whyNoOutputShareKernel(ChunkStatePassGradOp op,
                                   const GPUTargetInfo &target) {
  std::string why;
  return OutputSharePlan::build(op, target, &why) ? "" : why;
}

Value emitOutputShareOfGradValues(ImplicitLocOpBuilder &b,
                                  ChunkStatePassGradOp op,
                                  const GPUTargetInfo &target, Value q, Value k,
                                  Value gates, Value gradOutput, Value qRNorm) {
  OutputSharePlan p = *OutputSharePlan::build(op, target);
  LoopEmitter e(b);
  Value batch = e.dim(q, 0), seqLen = e.dim(q, 1);
  Value x = e.allocFor(
      MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic, p.numVHeads, p.V},
                      b.getF32Type()),
      {batch, seqLen, e.index(p.numVHeads), e.index(p.V)});
  Value numChunks = arith::CeilDivUIOp::create(b, seqLen, e.index(kChunk));
  emitLaunch(b, {numChunks, e.index(p.numVHeads), batch}, p.sharedBytes,
             p.mmaElem, [&](MmaEmitter &mma) {
    OutputShareKernel(p, q, k, gates, gradOutput, qRNorm, x, seqLen, mma).emit();
  });
  return x;
}

} // namespace mlir::linattn::kernel
