//===- WYSlabGradKernel.cpp - chunk_grad's WY share in 64-column slabs ----===//
//
// The WY factors' share of linattn.chunk_grad (WYGradKernel.cpp states it)
// with a chunk's rows streamed in 64-column slabs, so that the block's
// shared memory does not grow with K and V. A block per (chunk, value
// head, sequence), as the whole-row kernel; with s a slab of keys (K_s,
// W_s, Y_s: 64 columns of K, W, Y; S_s: 64 rows of S_n) or of values
// (dD_s, U_s, Z_s, v_s):
//
//   P    = sum_s (K_s K_s^T) * E, strictly lower     (register accumulator)
//   T    = (I + L)^-1, L = diag(c) P                 (Kernel/TriangularInverse.h)
//   per key slab s:    dW_s = -sum_s' dD_s' S_{s,s'}^T, Y_s = T^T dW_s,
//                      dL  -= Y_s W_s^T,  Y_s to yW,  Y_i . k_i += Y_s,i . k_s,i
//   per value slab s:  Z_s = T^T dD_s,  dL -= Z_s U_s^T,  dv_s = diag(beta) Z_s,
//                      Z_i . v_i += Z_s,i . v_s,i
//   F = diag(c) dL, dbeta (WYGradParts.h)
//
// dL's accumulator (16 values a thread at eight warps) is carried through
// both run-time slab loops; the f32 operands (dD, S, U, T, dW, Y, Z) are
// split into hi + lo as in the whole-row kernel, and the sums run in the
// same order. dD is read once a key slab and once more for Z (the second
// and later reads mostly L2's). Two slabs of split tiles, dW / Y / Z's,
// T's and P's: ~95 KB at any K and V, so two blocks share an SM where the
// whole-row kernel holds one (198656 bytes at K = V = 128) or does not fit
// (K or V above 128).
//
//===----------------------------------------------------------------------===//

#include "ChunkGradKernels.h"
#include "WYGradParts.h"

#include "../Kernel/ChunkGeometry.h"
#include "../Kernel/MmaEmitter.h"
#include "../Kernel/TriangularInverse.h"
#include "../KernelSupport.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::linattn::kernel {
namespace {

/// Columns of K or V a slab holds.
constexpr int64_t kSlab = 64;
/// Head sizes the kernel is checked to (bench/gpu/check_backward.py).
constexpr int64_t kMaxHeadDim = 256;

/// The slab kernel, decided: shapes and shared-memory layout.
struct WYSlabGradPlan : ChunkGradWarps {
  static std::optional<WYSlabGradPlan> build(ChunkGradOp op,
                                             const GPUTargetInfo &target,
                                             std::string *whyNot = nullptr);

  Type mmaElem;
  int64_t numQKHeads = 0, numVHeads = 0, K = 0, V = 0;
  /// Row gates; k f32 (split); W split into hi and lo parts (negeig's); S
  /// in mmaElem (hasNarrowStates: copied in, one product).
  bool gates = false, splitKeys = false, splitW = false, narrowStates = false;
  float rank1Scale = 0.0f;
  int64_t keySlabs() const { return K / kSlab; }
  int64_t valueSlabs() const { return V / kSlab; }
  /// Row stride of every 16-bit slab tile ([64][64 + pad]).
  static constexpr int64_t kStride = kSlab + kPad;

  // Byte offsets. Two slabs of split tiles (a: dD; b: S, then W, or U),
  // over which the inverse's fp32 T and L lie; x: a key slab of K for P,
  // then dW, Y and Z; T split; P; the row terms (over the inverse's
  // scratch) and the row scalars.
  int64_t aHiOff = 0, aLoOff = 0, bHiOff = 0, bLoOff = 0, tOff = 0, lOff = 0;
  int64_t xHiOff = 0, xLoOff = 0, tHiOff = 0, tLoOff = 0, pOff = 0;
  int64_t rowOff = 0, gOff = 0, cOff = 0, betaOff = 0;
  int64_t sharedBytes = 0;
};

std::optional<WYSlabGradPlan>
WYSlabGradPlan::build(ChunkGradOp op, const GPUTargetInfo &target,
                      std::string *whyNot) {
  WYSlabGradPlan p;
  std::optional<WYGradShapes> shapes = wyGradShapes(op, whyNot);
  if (!shapes)
    return std::nullopt;
  p.numQKHeads = shapes->numQKHeads;
  p.numVHeads = shapes->numVHeads;
  p.K = shapes->K;
  p.V = shapes->V;
  const BackwardOperandForms *forms = &shapes->forms;
  if (forms->perKeyGates) {
    if (whyNot)
      *whyNot = "its gates are per key";
    return std::nullopt;
  }
  if (p.K % kSlab != 0 || p.V % kSlab != 0 || p.K > kMaxHeadDim ||
      p.V > kMaxHeadDim) {
    if (whyNot)
      *whyNot = "it takes K and V multiples of 64 up to 256";
    return std::nullopt;
  }
  p.mmaElem = forms->mmaElem;
  p.splitKeys = forms->splitKeys;
  p.splitW = forms->splitW;
  p.narrowStates = hasNarrowStates(op, p.mmaElem);
  p.gates = bool(op.getGates());
  p.rank1Scale = op.getRank1Scale()->convertToFloat();
  p.warps = 8;

  SharedLayout layout;
  auto take = [&](int64_t bytes) { return layout.take(bytes); };
  int64_t tile = kChunk * kStride * 2;
  int64_t slabs = layout.current();
  for (int64_t *off : {&p.aHiOff, &p.aLoOff, &p.bHiOff, &p.bLoOff})
    *off = take(tile);
  int64_t slabsEnd = layout.current();
  layout.rewind(slabs);
  p.tOff = take(kChunk * kInverseStride * 4);
  p.lOff = take(kChunk * kInverseStride * 4);
  layout.rewind(std::max(slabsEnd, layout.current()));
  p.xHiOff = take(tile);
  p.xLoOff = take(tile);
  p.tHiOff = take(kChunk * (kChunk + kPad) * 2);
  p.tLoOff = take(kChunk * (kChunk + kPad) * 2);
  p.pOff = take(kChunk * (kChunk + 1) * 4);
  // The inverse's scratch, then the row terms (written after the
  // inverse's barrier).
  p.rowOff = take(std::max(kInverseScratchBytes,
                           kChunk * kWYRowTerms * p.termParts() * 4));
  if (p.gates)
    p.gOff = take(kChunk * 4);
  p.cOff = take(kChunk * 4);
  p.betaOff = take(kChunk * 4);
  p.sharedBytes = layout.size();
  if (p.sharedBytes > target.maxSharedBytesPerBlock()) {
    if (whyNot)
      *whyNot = sharedBytesReason(p.sharedBytes, target);
    return std::nullopt;
  }
  return p;
}

class WYSlabGradKernel {
public:
  WYSlabGradKernel(const WYSlabGradPlan &plan, const WYGradBuffers &io,
                   MmaEmitter &k)
      : p(plan), io(io), k(k), b(k.b), e(k.e) {}
  void emit();

private:
  using Acc = SmallVector<SmallVector<Value>>;
  int64_t tiles() const { return kChunk / 8 / p.halves(); }
  Value tile16(int64_t offset, int64_t stride = WYSlabGradPlan::kStride) {
    return k.tile(offset, kChunk, stride, p.mmaElem);
  }
  Value token(Value r) { return e.addIndex(rows.t0, r); }
  /// acc += A B over the warp's rows and its columns of B.
  void gemm(Acc &acc, Operand a, Operand bt) {
    tiling->gemm(acc, a, bt, kSlab, colBase);
  }
  /// A value slab of a [B, T, HV, V] f32 input (dD or U) split into the
  /// tiles (hi, lo), rows past valid zero. No barrier.
  void fillValueSlab(Value hi, Value lo, Value src, Value v0) {
    k.fillTile(hi, kChunk, kSlab, rows.valid, [&](Value r, Value c) {
      return k.load8(src, {bIdx, token(r), hv, e.addIndex(v0, c)});
    }, lo);
  }
  /// P = (K K^T) * E over the key slabs (staged in x), L = diag(c) P, T's
  /// upper blocks zero. Ends before the barrier that publishes them.
  void keyPairs();
  /// dW_s, Y_s and their share of dL, per key slab; Y . k to the row terms.
  void keySlabs(Acc &dL);
  /// Z_s and its share of dL, dv, per value slab; Z . v to the row terms.
  void valueSlabs(Acc &dL);
  /// Stores the warp's accumulator pairs split into (x hi, x lo), negated
  /// where asked.
  void storeX(const Acc &acc, bool negate);
  /// The rows' dot product of an accumulator slab with an input's
  /// entries at the same places (read from global memory, rows past valid
  /// zero), added to partial[2] (rows group and group + 8).
  void addRowDots(const Acc &acc, function_ref<Value(Value, Value)> entry,
                  Value partial[2]);
  /// Runs body(slab) for slab < count in a run-time loop carrying acc and
  /// the given scalars.
  void forEachSlab(int64_t count, Acc &acc, MutableArrayRef<Value> scalars,
                   function_ref<void(Value)> body);

  const WYSlabGradPlan &p;
  const WYGradBuffers &io;
  MmaEmitter &k;
  ImplicitLocOpBuilder &b;
  LoopEmitter &e;

  Value n, hv, bIdx, h, m0, colBase;
  std::optional<WarpTiling> tiling;
  ChunkRows rows;
  Value aHi, aLo, bHi, bLo, xHi, xLo, tF32, lTile, tHi, tLo, pTile, mTile;
  WYRowTiles rowTiles;
};

void WYSlabGradKernel::forEachSlab(int64_t count, Acc &acc,
                                   MutableArrayRef<Value> scalars,
                                   function_ref<void(Value)> body) {
  auto flatten = [&] {
    SmallVector<Value> flat;
    for (auto &t : acc)
      flat.append(t.begin(), t.end());
    flat.append(scalars.begin(), scalars.end());
    return flat;
  };
  auto unflatten = [&](ValueRange flat) {
    size_t at = 0;
    for (auto &t : acc)
      for (Value &v : t)
        v = flat[at++];
    for (Value &v : scalars)
      v = flat[at++];
  };
  unflatten(e.forEachReduce(e.index(count), flatten(),
                            [&](Value s, ValueRange in) -> SmallVector<Value> {
    unflatten(in);
    body(e.mulIndex(s, e.index(kSlab)));
    return flatten();
  }));
}

void WYSlabGradKernel::storeX(const Acc &acc, bool negate) {
  auto sign = [&](Value x) -> Value {
    return negate ? arith::NegFOp::create(b, x).getResult() : x;
  };
  for (int64_t nt = 0; nt < tiles(); ++nt)
    k.forEachPair(m0, nt, [&](Value row, Value col, int64_t i) {
      storeSplitPair(k, sign(acc[nt][i]), sign(acc[nt][i + 1]), xHi, xLo, row,
                     tiling->plus(colBase, col));
    });
}

void WYSlabGradKernel::addRowDots(const Acc &acc,
                                  function_ref<Value(Value, Value)> entry,
                                  Value partial[2]) {
  Type f32 = b.getF32Type();
  for (int64_t nt = 0; nt < tiles(); ++nt)
    k.forEachPair(m0, nt, [&](Value row, Value tileCol, int64_t i) {
      Value col = tiling->plus(colBase, tileCol);
      Value col1 = e.addIndex(col, e.index(1));
      auto at = [&](Value c) {
        return k.loadRowOrZero(row, rows.valid, f32,
                               [&](Value r) { return entry(r, c); });
      };
      partial[i / 2] = math::FmaOp::create(
          b, acc[nt][i + 1], at(col1),
          math::FmaOp::create(b, acc[nt][i], at(col), partial[i / 2]));
    });
}

void WYSlabGradKernel::keyPairs() {
  Acc kk = k.zeroAcc(tiles());
  forEachSlab(p.keySlabs(), kk, {}, [&](Value key0) {
    k.barrier(); // every warp is past the previous slab's products
    if (p.splitKeys) {
      k.fillTile(xHi, kChunk, kSlab, rows.valid, [&](Value r, Value c) {
        return k.load8(io.k, {bIdx, token(r), h, e.addIndex(key0, c)});
      }, xLo);
    } else {
      k.copyRowsAsync(xHi, e.index(0), kSlab, rows.t0, rows.valid, io.seqLen, io.k,
                      [&](Value t, Value c) -> SmallVector<Value> {
                        return {bIdx, t, h, e.addIndex(key0, c)};
                      });
      k.waitCopies(k.commitCopies(), 0);
    }
    k.barrier();
    Operand keys = Operand::of(xHi, p.splitKeys ? xLo : Value());
    gemm(kk, keys, keys);
  });
  storeKeyPairs(k, *tiling, kk, colBase, rows, rowTiles, pTile, lTile, io.keyPairs,
                bIdx, hv);
  zeroSquareTile(k, tF32);
}

void WYSlabGradKernel::keySlabs(Acc &dL) {
  Value yk[2] = {e.f32(0.0f), e.f32(0.0f)};
  forEachSlab(p.keySlabs(), dL, yk, [&](Value key0) {
    // dW_s = -dD S_s^T over the value slabs.
    Acc dW = k.zeroAcc(tiles());
    forEachSlab(p.valueSlabs(), dW, {}, [&](Value v0) {
      k.barrier(); // every warp is past the previous products
      auto stateAt = [&](Value r, Value c) -> SmallVector<Value> {
        return {bIdx, n, hv, r, e.addIndex(v0, c)};
      };
      Value copies;
      if (p.narrowStates) {
        k.copyRowsAsync(bHi, e.index(0), kSlab, key0, e.index(kSlab), e.index(p.K),
                        io.states, stateAt, kSlab);
        copies = k.commitCopies();
      }
      fillValueSlab(aHi, aLo, io.gradValues, v0);
      if (copies)
        k.waitCopies(copies, 0);
      else
        k.fillTile(bHi, kSlab, kSlab, Value(), [&](Value r, Value c) {
          return k.load8(io.states, stateAt(e.addIndex(key0, r), c));
        }, bLo);
      k.barrier();
      gemm(dW, Operand::of(aHi, aLo), Operand::of(bHi, p.narrowStates ? Value() : bLo));
    });
    storeX(dW, /*negate=*/true);
    k.barrier(); // dW is whole; S's slab tiles are free
    // W_s lands over S's tiles while Y_s is formed.
    if (p.splitW) {
      for (auto [dst, part] : {std::pair{bHi, 0}, std::pair{bLo, 1}})
        k.copyRowsAsync(dst, e.index(0), kSlab, rows.t0, rows.valid, io.seqLen, io.w,
                        [&, part = part](Value t, Value c) -> SmallVector<Value> {
                          return {bIdx, t, hv, e.index(part), e.addIndex(key0, c)};
                        });
    } else {
      k.copyRowsAsync(bHi, e.index(0), kSlab, rows.t0, rows.valid, io.seqLen, io.w,
                      [&](Value t, Value c) -> SmallVector<Value> {
                        return {bIdx, t, hv, e.addIndex(key0, c)};
                      });
    }
    Value copies = k.commitCopies();
    Acc y = k.zeroAcc(tiles());
    tiling->gemm(y, Operand{TileView{tHi, /*transposed=*/true}, TileView{tLo, true}},
                 Operand{TileView{xHi, true}, TileView{xLo, true}}, kChunk, colBase);
    for (int64_t nt = 0; nt < tiles(); ++nt)
      k.forEachPair(m0, nt, [&](Value row, Value col, int64_t i) {
        k.storePair(y[nt][i], y[nt][i + 1], io.yW,
                    {bIdx, token(row), hv, e.addIndex(key0, tiling->plus(colBase, col))},
                    k.ult(row, rows.valid));
      });
    addRowDots(y, [&](Value r, Value c) {
      return e.loadF32(io.k, {bIdx, token(r), h, e.addIndex(key0, c)});
    }, yk);
    k.barrier(); // every warp has read dW
    storeX(y, /*negate=*/false);
    k.waitCopies(copies, 0);
    k.barrier();
    gemm(dL, Operand::of(xHi, xLo), Operand::of(bHi, p.splitW ? bLo : Value()));
  });
  storeWYRowTerm(k, *tiling, rowTiles, kThroughW, yk);
}

void WYSlabGradKernel::valueSlabs(Acc &dL) {
  Value zv[2] = {e.f32(0.0f), e.f32(0.0f)};
  forEachSlab(p.valueSlabs(), dL, zv, [&](Value v0) {
    k.barrier(); // every warp is past the previous products
    fillValueSlab(aHi, aLo, io.gradValues, v0);
    fillValueSlab(bHi, bLo, io.u, v0);
    k.barrier();
    Acc z = k.zeroAcc(tiles());
    tiling->gemm(z, Operand{TileView{tHi, /*transposed=*/true}, TileView{tLo, true}},
                 Operand{TileView{aHi, true}, TileView{aLo, true}}, kChunk, colBase);
    for (int64_t nt = 0; nt < tiles(); ++nt)
      k.forEachPair(m0, nt, [&](Value row, Value col, int64_t i) {
        Value beta = memref::LoadOp::create(b, rowTiles.beta, ValueRange{row, e.index(0)});
        k.storePair(e.mul(beta, z[nt][i]), e.mul(beta, z[nt][i + 1]), io.dv,
                    {bIdx, token(row), hv, e.addIndex(v0, tiling->plus(colBase, col))},
                    k.ult(row, rows.valid));
      });
    addRowDots(z, [&](Value r, Value c) {
      return e.loadF32(io.v, {bIdx, token(r), hv, e.addIndex(v0, c)});
    }, zv);
    // x's last reader was the previous slab's product (before this
    // slab's first barrier).
    storeX(z, /*negate=*/false);
    k.barrier();
    gemm(dL, Operand::of(xHi, xLo), Operand::of(bHi, bLo));
  });
  storeWYRowTerm(k, *tiling, rowTiles, kThroughU, zv);
}

void WYSlabGradKernel::emit() {
  Block *body = b.getInsertionBlock();
  n = body->getArgument(0);
  hv = body->getArgument(1);
  bIdx = body->getArgument(2);
  h = e.qkHead(hv, p.numVHeads, p.numQKHeads);
  tiling.emplace(k, p.halves());
  m0 = tiling->m0();
  colBase = tiling->base(kChunk);
  rows = chunkRows(e, n, io.seqLen);
  Type f32 = b.getF32Type();
  aHi = tile16(p.aHiOff);
  aLo = tile16(p.aLoOff);
  bHi = tile16(p.bHiOff);
  bLo = tile16(p.bLoOff);
  xHi = tile16(p.xHiOff);
  xLo = tile16(p.xLoOff);
  tF32 = k.tile(p.tOff, kChunk, kInverseStride, f32);
  lTile = k.tile(p.lOff, kChunk, kInverseStride, f32);
  tHi = tile16(p.tHiOff, kChunk + kPad);
  tLo = tile16(p.tLoOff, kChunk + kPad);
  pTile = k.tile(p.pOff, kChunk, kChunk + 1, f32);
  mTile = k.tile(p.rowOff, 16, kChunk - 16, f32);
  rowTiles = WYRowTiles{k.tile(p.betaOff, kChunk, 1, f32),
                        k.tile(p.cOff, kChunk, 1, f32),
                        p.gates ? k.tile(p.gOff, kChunk, 1, f32) : Value(),
                        k.tile(p.rowOff, kChunk, kWYRowTerms * p.termParts(), f32),
                        p.termParts()};
  WYRowNorms norms{io.kRNorm, io.kRNorm ? h : Value()};

  stageWYRowScalars(k, rows, bIdx, hv, io.beta, io.gates, rowTiles, p.rank1Scale,
                    norms);
  keyPairs(); // its slab loop's barriers publish the row scalars
  k.barrier();
  invertUnitLowerTriangular(k, lTile, tF32, mTile);
  k.barrier();
  k.fillTile(tHi, kChunk, kChunk, Value(), [&](Value r, Value c) {
    return k.load8(tF32, {r, c});
  }, tLo);
  // T's split tiles are published by the first slab's barriers.
  Acc dL = k.zeroAcc(tiles());
  keySlabs(dL);
  valueSlabs(dL);
  storeFactors(k, *tiling, std::move(dL), colBase, rows, rowTiles, pTile,
               io.factorPairs, bIdx, hv);
  storeBetaGradient(k, rows, rowTiles, io.dbeta, bIdx, hv, p.rank1Scale, norms);
}

} // namespace

std::string whyNoWYSlabGradKernel(ChunkGradOp op, const GPUTargetInfo &target) {
  std::string why;
  return WYSlabGradPlan::build(op, target, &why) ? "" : why;
}

std::string describeWYSlabGradKernel(ChunkGradOp op, const GPUTargetInfo &target) {
  WYSlabGradPlan p = *WYSlabGradPlan::build(op, target);
  int64_t blocks = p.sharedBytes <= target.maxSharedBytesPerBlock(2) ? 2 : 1;
  return describeChunkGradBlock(p.warps, p.sharedBytes) + ", " +
         std::to_string(blocks) + (blocks == 1 ? " block" : " blocks") + " an SM";
}

void emitWYSlabGradKernel(ImplicitLocOpBuilder &b, ChunkGradOp op,
                          const GPUTargetInfo &target, const WYGradBuffers &io) {
  WYSlabGradPlan p = *WYSlabGradPlan::build(op, target);
  emitChunkGridLaunch(b, io.seqLen, p.numVHeads, io.batch, p.sharedBytes,
                      p.mmaElem,
                      [&](MmaEmitter &k) { WYSlabGradKernel(p, io, k).emit(); },
                      p.threads());
}

} // namespace mlir::linattn::kernel
