//===- WYGradKernel.cpp - The WY factors' share of chunk_grad, a kernel ---===//
//
// One block per (chunk, value head, sequence) computes what
// linattn.chunk_grad's loops did in three nests through global memory.
// With c = rank1_scale beta, E_ij = exp(G_i - G_j) (1 without gates):
//
//   dW  = -dD S_n^T                                      (tensor cores)
//   P   = (K K^T) * E, strictly lower; L = diag(c) P     (tensor cores)
//   T   = (I + L)^-1, by 16-row blocks in fp32 (Kernel/TriangularInverse.h)
//   [Y Z] = T^T [dW dD], the solution of (I + L)^T [Y Z] = [dW dD]
//                                                        (tensor cores)
//   dL  = -(Y W^T + Z U^T), F = diag(c) dL, strictly lower (tensor cores)
//   dv  = diag(beta) Z
//   dbeta_i = rank1_scale (exp(G_i) Y_i . k_i + sum_j dL_ij P_ij) + Z_i . v_i
//
// P, F and Y leave as the key-gradient kernel reads them ([B, T, HV, *]
// f32, chunk-local columns). With per-key gates (KDA: G [64][K], E per
// key) P is PerKeyScores.h's, Y_i . k_i takes exp(G_ir) per key, and this
// kernel goes on to reduce F and Y to dk's and dL/dG's shares itself
// (the key kernel has no room for F's tiles beside the per-key ones):
//
//   plus_ir  = c_i Y_ir exp(G_ir) + sum_{j < i} F_ij k_jr exp(G_ir - G_jr)
//   minus_jr = sum_{i > j} F_ij k_ir exp(G_ir - G_jr)
//   dk share = plus + minus,   dL/dG share = k (plus - minus)
//
// (the pair sums of PerKeyPairSums.h), into Y's buffer and a gate-share
// buffer of its shape; P and F stay here. The f32 operands (dD, S, T,
// dW, Y, Z, U, and k where it comes f32: qk_l2norm's normalised keys)
// enter the tensor cores split into hi + lo, as W does where the UT
// transform left it split (negeig's). [Y Z] as a product with the
// inverse (the UT kernel's) rather than a back substitution a thread per
// column: the substitution's 2016 products per column unrolled were more
// code than the instruction cache holds (bench/NOTES.md b7).
//
//===----------------------------------------------------------------------===//

#include "ChunkGradKernels.h"
#include "WYGradParts.h"

#include "../Kernel/ChunkGeometry.h"
#include "../Kernel/MmaEmitter.h"
#include "../Kernel/PerKeyPairSums.h"
#include "../Kernel/PerKeyScores.h"
#include "../Kernel/TriangularInverse.h"
#include "../KernelSupport.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Math/IR/Math.h"

namespace mlir::linattn::kernel {
namespace {

/// The WY kernel, decided: shapes and shared-memory layout.
struct WYGradPlan : ChunkGradWarps {
  static std::optional<WYGradPlan> build(ChunkGradOp op,
                                         const GPUTargetInfo &target,
                                         std::string *whyNot = nullptr);

  Type mmaElem;
  int64_t numQKHeads = 0, numVHeads = 0, K = 0, V = 0, keyBlock = 0;
  /// Gates per row (`gates`) or per key (`perKey`, [B, T, HV, K]).
  bool gates = false, perKey = false;
  /// k f32, staged split (kLoOff beside kOff).
  bool splitKeys = false;
  /// W split into hi and lo parts by the UT transform (wLoOff beside wOff).
  bool splitW = false;
  float rank1Scale = 0.0f;

  int64_t keyStride = 0, valueStride = 0;
  // Byte offsets. dD's split tiles later hold Z's, dW's later Y's; S's
  // split tiles (a key block) are dead when T (fp32), L (fp32) and T's
  // split tiles (over L) take their place.
  int64_t kOff = 0, kLoOff = 0, wOff = 0, wLoOff = 0, uHiOff = 0, uLoOff = 0;
  int64_t dHiOff = 0, dLoOff = 0, dwHiOff = 0, dwLoOff = 0;
  int64_t sHiOff = 0, sLoOff = 0, tOff = 0, lOff = 0, tHiOff = 0, tLoOff = 0;
  int64_t pOff = 0, mOff = 0, gOff = 0, cOff = 0, betaOff = 0, rowOff = 0;
  // Per-key gates: G [64][K + 4] f32; K' = K exp(G_L - G) for the scores
  // over T's tile (T is written after them). Once the factors are out, F
  // split, K' again and K'' = K exp(G - G_F) for the pair sums over the
  // tiles from W's to P's, dead by then.
  int64_t gKeyStride = 0, gKeyOff = 0, kdOff = 0;
  int64_t fHiOff = 0, fLoOff = 0, kPrimeOff = 0, kSinceOff = 0;
  int64_t sharedBytes = 0;
  /// Keys per pass of the per-key pair sums (two accumulators of 16 rows),
  /// a column half's.
  static constexpr int64_t kPairKeyBlock = 32;

  /// The shared-memory layout for `warps` (the row terms' parts grow with
  /// them); false where the per-key tiles do not fit (`whyNot` says).
  bool layOut(std::string *whyNot);
};

std::optional<WYGradPlan> WYGradPlan::build(ChunkGradOp op,
                                            const GPUTargetInfo &target,
                                            std::string *whyNot) {
  WYGradPlan p;
  std::optional<WYGradShapes> shapes = wyGradShapes(op, whyNot);
  if (!shapes)
    return std::nullopt;
  p.numQKHeads = shapes->numQKHeads;
  p.numVHeads = shapes->numVHeads;
  p.K = shapes->K;
  p.V = shapes->V;
  const BackwardOperandForms *forms = &shapes->forms;
  if (forms->splitW && forms->perKeyGates) {
    if (whyNot)
      *whyNot = "its gates are per key, its W split";
    return std::nullopt;
  }
  p.splitW = forms->splitW;
  if (forms->perKeyGates && (forms->splitKeys || p.K % kPairKeyBlock != 0)) {
    if (whyNot)
      *whyNot = forms->splitKeys ? "its gates are per key, its keys f32"
                                 : "its gates are per key, K not a multiple of 32";
    return std::nullopt;
  }
  p.mmaElem = forms->mmaElem;
  p.splitKeys = forms->splitKeys;
  p.keyBlock = p.K % 64 == 0 ? 64 : 32;
  p.perKey = forms->perKeyGates;
  p.gates = op.getGates() && !p.perKey;
  p.rank1Scale = op.getRank1Scale()->convertToFloat();
  p.keyStride = p.K + kPad;
  p.valueStride = p.V + kPad;
  // Eight warps (ChunkGradWarps) where every staged tile divides among 256
  // threads (per key: each half's pair sums a 32-key block of every 64)
  // and the block still fits, else four.
  bool eightFit = p.K % 32 == 0 && p.V % 32 == 0 &&
                  (p.keyBlock * p.V / 8) % 256 == 0 &&
                  (!p.perKey || p.K % (2 * kPairKeyBlock) == 0);
  for (int64_t warps : {int64_t(8), int64_t(4)}) {
    if (warps == 8 && !eightFit)
      continue;
    p.warps = warps;
    if (!p.layOut(whyNot))
      return std::nullopt;
    if (p.sharedBytes <= target.maxSharedBytesPerBlock())
      return p;
  }
  if (whyNot)
    *whyNot = sharedBytesReason(p.sharedBytes, target);
  return std::nullopt;
}

bool WYGradPlan::layOut(std::string *whyNot) {
  SharedLayout layout;
  auto take = [&](int64_t bytes) { return layout.take(bytes); };
  int64_t keyTile = kChunk * keyStride * 2, valueTile = kChunk * valueStride * 2;
  kOff = take(keyTile);
  if (splitKeys)
    kLoOff = take(keyTile);
  dwHiOff = take(keyTile);
  dwLoOff = take(keyTile);
  wOff = take(keyTile);
  if (splitW)
    wLoOff = take(keyTile);
  uHiOff = take(valueTile);
  uLoOff = take(valueTile);
  dHiOff = take(valueTile);
  dLoOff = take(valueTile);
  int64_t region = layout.current();
  sHiOff = take(keyBlock * valueStride * 2);
  sLoOff = take(keyBlock * valueStride * 2);
  layout.rewind(region);
  tOff = take(kChunk * kInverseStride * 4);
  lOff = take(kChunk * kInverseStride * 4);
  layout.rewind(lOff);
  tHiOff = take(kChunk * (kChunk + kPad) * 2);
  tLoOff = take(kChunk * (kChunk + kPad) * 2);
  layout.rewind(layout.size());
  pOff = take(kChunk * (kChunk + 1) * 4);
  int64_t deadAfterFactors = layout.current();
  // The inverse's scratch, then the row terms (written from the solves on,
  // after the inverse's barrier; read by betaGradient, beside which
  // perKeyShares writes only below deadAfterFactors).
  mOff = rowOff = take(std::max(kInverseScratchBytes, kChunk * kWYRowTerms * termParts() * 4));
  if (gates)
    gOff = take(kChunk * 4);
  cOff = take(kChunk * 4);
  betaOff = take(kChunk * 4);
  if (perKey) {
    gKeyStride = K + 4;
    gKeyOff = take(kChunk * gKeyStride * 4);
    // K' over T's tile ([64][68] f32: a [64][128 + 8] 16-bit tile).
    kdOff = tOff;
    int64_t end = layout.current();
    layout.rewind(wOff);
    int64_t pairTile = kChunk * (kChunk + kPad) * 2;
    fHiOff = take(pairTile);
    fLoOff = take(pairTile);
    kPrimeOff = take(keyTile);
    kSinceOff = take(keyTile);
    bool sharesFit = layout.current() <= deadAfterFactors;
    layout.rewind(end);
    if (keyTile > kChunk * kInverseStride * 4 || !sharesFit) {
      if (whyNot)
        *whyNot = "its gates are per key, K above 128";
      return false;
    }
  }
  sharedBytes = layout.size();
  return true;
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
  void negatedWGradient();
  void keyPairs();
  void splitInverse();
  void solve(bool keys);
  /// dL and F; with per-key gates F's accumulator tiles are returned for
  /// perKeyShares instead of leaving for the key kernel.
  SmallVector<SmallVector<Value>> factors();
  /// Per-key gates: dk's and dL/dG's WY shares from F (held) and Y.
  void perKeyShares(ArrayRef<SmallVector<Value>> f);
  /// Per-key gates: G[row][key].
  Value keyGate(Value row, Value key) {
    return memref::LoadOp::create(b, gKeyTile, ValueRange{row, key});
  }

  const WYGradPlan &p;
  const WYGradBuffers &io;
  MmaEmitter &k;
  ImplicitLocOpBuilder &b;
  LoopEmitter &e;

  Value n, hv, bIdx, h, m0;
  /// The warp's rows and columns of each product (m0 its first row).
  std::optional<WarpTiling> tiling;
  ChunkRows rows;
  Value kTile, kLo, wTile, wLo, uHi, uLo, dHi, dLo, dwHi, dwLo, sHi, sLo;
  Value tF32, lTile, tHi, tLo, mTile;
  Value pTile, gTile, cTile, betaTile, rowTerms;
  WYRowTiles rowTiles;
  Value gKeyTile, kdTile, fHi, fLo, kPrime, kSince;
};

// k and W (16-bit, or a split W's two parts: copied as they are) by
// cp.async, in flight while U and dD (f32, split on the way) come through
// registers, and an f32 k after them; rows past valid zero. The caller's
// barrier publishes the tiles.
void WYGradKernel::stage() {
  auto rowLoad = [&](Value src, Value head) {
    return [&, src, head](Value r, Value c) {
      return k.load8(src, {bIdx, token(r), head, c});
    };
  };
  if (!p.splitKeys)
    k.copyTokenRowsAsync(kTile, p.K, rows, io.seqLen, io.k, bIdx, h);
  if (p.splitW)
    k.copyTokenRowPartsAsync(wTile, wLo, p.K, rows, io.seqLen, io.w, bIdx, hv);
  else
    k.copyTokenRowsAsync(wTile, p.K, rows, io.seqLen, io.w, bIdx, hv);
  if (p.perKey)
    k.copyTokenRowsAsync(gKeyTile, p.K, rows, io.seqLen, io.gates, bIdx, hv);
  Value copies = k.commitCopies();
  k.fillTile(uHi, kChunk, p.V, rows.valid, rowLoad(io.u, hv), uLo);
  k.fillTile(dHi, kChunk, p.V, rows.valid, rowLoad(io.gradValues, hv), dLo);
  if (p.splitKeys)
    k.fillTile(kTile, kChunk, p.K, rows.valid, rowLoad(io.k, h), kLo);
  stageWYRowScalars(k, rows, bIdx, hv, io.beta, io.gates, rowTiles, p.rank1Scale,
                    WYRowNorms{io.kRNorm, io.kRNorm ? h : Value()});
  k.waitCopies(copies, 0);
}

// dW = -dD S_n^T, key block by key block (S's rows staged split; a
// run-time loop, so its products are emitted once), split into
// dwHi/dwLo. Ends with a barrier: S's tiles are free.
void WYGradKernel::negatedWGradient() {
  e.forEach(e.index(p.K / p.keyBlock), [&](Value kb) {
    Value key0 = e.mulIndex(kb, e.index(p.keyBlock));
    k.fillTile(sHi, p.keyBlock, p.V, Value(), [&](Value r, Value c) {
      return k.load8(io.states, {bIdx, n, hv, e.addIndex(key0, r), c});
    }, sLo);
    k.barrier();
    // The warp's keys of the block: from row col0 of S's tiles.
    Value col0 = tiling->base(p.keyBlock);
    int64_t tiles = p.keyBlock / 8 / p.halves();
    SmallVector<SmallVector<Value>> acc = k.zeroAcc(tiles);
    tiling->gemm(acc, Operand{TileView{dHi}, TileView{dLo}},
                 Operand{TileView{sHi}, TileView{sLo}}, p.V, col0);
    for (int64_t nt = 0; nt < tiles; ++nt)
      k.forEachPair(m0, nt, [&](Value row, Value col, int64_t i) {
        storeSplitPair(k, arith::NegFOp::create(b, acc[nt][i]),
                       arith::NegFOp::create(b, acc[nt][i + 1]), dwHi, dwLo, row,
                       e.addIndex(key0, tiling->plus(col0, col)));
      });
    k.barrier(); // S's tiles are free
  });
}

// The warp's rows i (and columns j: WarpTiling) of P = (K K^T) * E for
// j < i < valid, to shared memory and to keyPairs (per-key gates: P by
// PerKeyScores.h, kept here); L = diag(c) P for the inverse, whose upper
// blocks of T this zeroes. The caller's barrier publishes them.
void WYGradKernel::keyPairs() {
  if (p.perKey) {
    // P's and L's blocks after a warp's own are not visited: zero first.
    zeroSquareTile(k, lTile);
    k.forEachOfBlock(kChunk * kChunk, [&](Value idx) {
      memref::StoreOp::create(b, e.f32(0.0f), pTile,
                              ValueRange{arith::DivUIOp::create(b, idx, e.index(kChunk)),
                                         arith::RemUIOp::create(b, idx, e.index(kChunk))});
    });
    forEachLowerKeyScore(k, Operand::of(kTile, Value()), Operand::of(kdTile, Value()),
                         gKeyTile, m0, rows.valid, p.K,
                         [&](Value row, Value col, Value score, Value keep) {
      Value x = k.select(keep, score, e.f32(0.0f));
      memref::StoreOp::create(b, x, pTile, ValueRange{row, col});
      memref::StoreOp::create(b, e.mul(vecAt(cTile, row), x), lTile,
                              ValueRange{row, col});
    }, tiling->half());
    k.barrier(); // K' (over T) is read
    zeroSquareTile(k, tF32);
    return;
  }
  Value col0 = tiling->base(kChunk);
  int64_t tiles = kChunk / 8 / p.halves();
  SmallVector<SmallVector<Value>> acc = k.zeroAcc(tiles);
  tiling->gemm(acc, Operand::of(kTile, kLo), Operand::of(kTile, kLo), p.K, col0);
  storeKeyPairs(k, *tiling, acc, col0, rows, rowTiles, pTile, lTile, io.keyPairs,
                bIdx, hv);
  zeroSquareTile(k, tF32);
}

// T (fp32) to its split tiles for the products.
void WYGradKernel::splitInverse() {
  k.fillTile(tHi, kChunk, kChunk, Value(), [&](Value r, Value c) {
    return k.load8(tF32, {r, c});
  }, tLo);
  k.barrier();
}

// Y = T^T dW (keys) or Z = T^T dD (values) for the warp's rows, T^T and
// the right-hand side read transposed from their split tiles. Y leaves to
// yW, beta Z to dv (rows below valid); the rows' Y_i . k_i or Z_i . v_i by
// quad to rowTerms; then, once every warp has read the right-hand side,
// the result split over it for the factors' products.
void WYGradKernel::solve(bool keys) {
  Value xHi = keys ? dwHi : dHi, xLo = keys ? dwLo : dLo;
  int64_t cols = keys ? p.K : p.V;
  Value col0 = tiling->base(cols);
  int64_t tiles = cols / 8 / p.halves();
  SmallVector<SmallVector<Value>> acc = k.zeroAcc(tiles);
  tiling->gemm(acc, Operand{TileView{tHi, /*transposed=*/true}, TileView{tLo, true}},
               Operand{TileView{xHi, true}, TileView{xLo, true}}, kChunk, col0);
  Type f32 = b.getF32Type();
  Value partial[2] = {e.f32(0.0f), e.f32(0.0f)};
  for (int64_t nt = 0; nt < tiles; ++nt)
    k.forEachPair(m0, nt, [&](Value row, Value tileCol, int64_t i) {
      Value col = tiling->plus(col0, tileCol);
      Value x0 = acc[nt][i], x1 = acc[nt][i + 1];
      Value col1 = e.addIndex(col, e.index(1));
      Value in = k.ult(row, rows.valid);
      Value with0, with1; // k_i or v_i at the pair's columns
      if (keys) {
        // k_i's entries, hi + lo where split; per key k_ir exp(G_ir).
        with0 = k.loadJoined(kTile, kLo, {row, col});
        with1 = k.loadJoined(kTile, kLo, {row, col1});
        if (p.perKey) {
          with0 = e.mul(with0, k.exp(keyGate(row, col)));
          with1 = e.mul(with1, k.exp(keyGate(row, col1)));
        } else {
          k.storePair(x0, x1, io.yW, {bIdx, token(row), hv, col}, in);
        }
      } else {
        auto value = [&](Value c) {
          return k.loadRowOrZero(row, rows.valid, f32, [&](Value r) {
            return e.loadF32(io.v, {bIdx, token(r), hv, c});
          });
        };
        with0 = value(col);
        with1 = value(col1);
        Value beta = vecAt(betaTile, row);
        k.storePair(e.mul(beta, x0), e.mul(beta, x1), io.dv,
                    {bIdx, token(row), hv, col}, in);
      }
      partial[i / 2] = math::FmaOp::create(
          b, x1, with1, math::FmaOp::create(b, x0, with0, partial[i / 2]));
    });
  storeWYRowTerm(k, *tiling, rowTiles, keys ? kThroughW : kThroughU, partial);
  k.barrier(); // every warp has read the right-hand side
  for (int64_t nt = 0; nt < tiles; ++nt)
    k.forEachPair(m0, nt, [&](Value row, Value col, int64_t i) {
      storeSplitPair(k, acc[nt][i], acc[nt][i + 1], xHi, xLo, row,
                     tiling->plus(col0, col));
    });
}

// dL = -(Y W^T + Z U^T) for the warp's rows; F = c_i dL_ij below the
// diagonal to factorPairs; the rows' sum_j dL_ij P_ij by quad.
SmallVector<SmallVector<Value>> WYGradKernel::factors() {
  Value col0 = tiling->base(kChunk);
  int64_t tiles = kChunk / 8 / p.halves();
  SmallVector<SmallVector<Value>> acc = k.zeroAcc(tiles);
  tiling->gemm(acc, Operand{TileView{dwHi}, TileView{dwLo}},
               Operand::of(wTile, wLo), p.K, col0);
  tiling->gemm(acc, Operand{TileView{dHi}, TileView{dLo}},
               Operand{TileView{uHi}, TileView{uLo}}, p.V, col0);
  return storeFactors(k, *tiling, std::move(acc), col0, rows, rowTiles, pTile,
                      p.perKey ? Value() : io.factorPairs, bIdx, hv);
}

// F (the warp's rows and columns, held) split to fHi/fLo, K' and K''
// staged over the tiles the factors left dead; then, 32 keys a pass and
// column half, dk's WY share plus + minus and dL/dG's k (plus - minus)
// (the file's header) to yW and gateShare, rows below valid.
void WYGradKernel::perKeyShares(ArrayRef<SmallVector<Value>> f) {
  Type f32 = b.getF32Type();
  Value col0 = tiling->base(kChunk);
  for (int64_t nt = 0; nt < int64_t(f.size()); nt += 2) {
    SmallVector<Value> lo[2];
    for (int64_t j = 0; j < 2; ++j)
      for (Value x : f[nt + j]) {
        Value hi = arith::ExtFOp::create(
            b, f32, arith::TruncFOp::create(b, p.mmaElem, x).getResult());
        lo[j].push_back(e.sub(x, hi));
      }
    Value col = tiling->plus(col0, e.index(8 * nt));
    k.stmatrix4(fHi, m0, col, f[nt], f[nt + 1], false);
    k.stmatrix4(fLo, m0, col, lo[0], lo[1], false);
  }
  stagePairSumOperand(k, kTile, kPrime, gKeyTile, rows.valid, p.K, false);
  stagePairSumOperand(k, kTile, kSince, gKeyTile, rows.valid, p.K, true);
  k.barrier();
  Value ownFactored = diagonalFactorable(k, gKeyTile, m0, rows.valid, p.K);
  constexpr int64_t kBlock = WYGradPlan::kPairKeyBlock, tiles = kBlock / 8;
  // Pass kb: keys [kBlock (halves kb + half), + kBlock) for the warp's half.
  Value halfKey0 = tiling->base(kBlock * p.halves());
  e.forEach(e.index(p.K / (kBlock * p.halves())), [&](Value kb) {
    Value key0 = tiling->plus(halfKey0, e.mulIndex(kb, e.index(kBlock * p.halves())));
    SmallVector<SmallVector<Value>> plus = k.zeroAcc(tiles), minus = k.zeroAcc(tiles);
    addPerKeyPairSums(k, plus, {fHi, fLo, kTile, kPrime, gKeyTile},
                      /*columns=*/false, m0, rows.valid, key0, ownFactored);
    addPerKeyPairSums(k, minus, {fHi, fLo, kTile, kSince, gKeyTile},
                      /*columns=*/true, m0, rows.valid, key0, ownFactored);
    for (int64_t nt = 0; nt < tiles; ++nt)
      k.forEachPair(m0, nt, [&](Value row, Value col, int64_t i) {
        Value in = k.ult(row, rows.valid);
        Value share[2], gate[2];
        for (int64_t x = 0; x < 2; ++x) {
          Value key = e.addIndex(key0, e.addIndex(col, e.index(x)));
          // c_i Y_ir exp(G_ir), Y as split for the factors' products.
          Value y = k.loadJoined(dwHi, dwLo, {row, key});
          Value fromW = k.select(
              in, e.mul(e.mul(vecAt(cTile, row), y), k.exp(keyGate(row, key))),
              e.f32(0.0f));
          Value up = e.add(plus[nt][i + x], fromW), down = minus[nt][i + x];
          Value kr = k.loadJoined(kTile, Value(), {row, key});
          share[x] = e.add(up, down);
          gate[x] = e.mul(kr, e.sub(up, down));
        }
        SmallVector<Value> at = {bIdx, token(row), hv, e.addIndex(key0, col)};
        k.storePair(share[0], share[1], io.yW, at, in);
        if (io.gateShare)
          k.storePair(gate[0], gate[1], io.gateShare, at, in);
      });
  });
}

void WYGradKernel::emit() {
  Block *body = b.getInsertionBlock();
  n = body->getArgument(0);
  hv = body->getArgument(1);
  bIdx = body->getArgument(2);
  h = e.qkHead(hv, p.numVHeads, p.numQKHeads);
  tiling.emplace(k, p.halves());
  m0 = tiling->m0();
  rows = chunkRows(e, n, io.seqLen);
  Type f32 = b.getF32Type();
  kTile = tile16(p.kOff, kChunk, p.keyStride);
  if (p.splitKeys)
    kLo = tile16(p.kLoOff, kChunk, p.keyStride);
  wTile = tile16(p.wOff, kChunk, p.keyStride);
  if (p.splitW)
    wLo = tile16(p.wLoOff, kChunk, p.keyStride);
  uHi = tile16(p.uHiOff, kChunk, p.valueStride);
  uLo = tile16(p.uLoOff, kChunk, p.valueStride);
  dHi = tile16(p.dHiOff, kChunk, p.valueStride);
  dLo = tile16(p.dLoOff, kChunk, p.valueStride);
  dwHi = tile16(p.dwHiOff, kChunk, p.keyStride);
  dwLo = tile16(p.dwLoOff, kChunk, p.keyStride);
  sHi = tile16(p.sHiOff, p.keyBlock, p.valueStride);
  sLo = tile16(p.sLoOff, p.keyBlock, p.valueStride);
  tF32 = k.tile(p.tOff, kChunk, kInverseStride, f32);
  lTile = k.tile(p.lOff, kChunk, kInverseStride, f32);
  tHi = tile16(p.tHiOff, kChunk, kChunk + kPad);
  tLo = tile16(p.tLoOff, kChunk, kChunk + kPad);
  mTile = k.tile(p.mOff, 16, kChunk - 16, f32);
  pTile = k.tile(p.pOff, kChunk, kChunk + 1, f32);
  cTile = k.tile(p.cOff, kChunk, 1, f32);
  betaTile = k.tile(p.betaOff, kChunk, 1, f32);
  rowTerms = k.tile(p.rowOff, kChunk, kWYRowTerms * p.termParts(), f32);
  if (p.gates)
    gTile = k.tile(p.gOff, kChunk, 1, f32);
  rowTiles = WYRowTiles{betaTile, cTile, gTile, rowTerms, p.termParts()};
  if (p.perKey) {
    gKeyTile = k.tile(p.gKeyOff, kChunk, p.gKeyStride, f32);
    kdTile = tile16(p.kdOff, kChunk, p.keyStride);
    fHi = tile16(p.fHiOff, kChunk, kChunk + kPad);
    fLo = tile16(p.fLoOff, kChunk, kChunk + kPad);
    kPrime = tile16(p.kPrimeOff, kChunk, p.keyStride);
    kSince = tile16(p.kSinceOff, kChunk, p.keyStride);
  }

  stage();
  k.barrier();
  negatedWGradient(); // ends with a barrier
  keyPairs();
  k.barrier();
  invertUnitLowerTriangular(k, lTile, tF32, mTile);
  k.barrier();
  splitInverse();
  solve(/*keys=*/true);
  solve(/*keys=*/false);
  k.barrier();
  SmallVector<SmallVector<Value>> f = factors();
  storeBetaGradient(k, rows, rowTiles, io.dbeta, bIdx, hv, p.rank1Scale,
                    WYRowNorms{io.kRNorm, io.kRNorm ? h : Value()});
  if (p.perKey)
    perKeyShares(f);
}

} // namespace

std::string whyNoWYGradKernel(ChunkGradOp op, const GPUTargetInfo &target) {
  std::string why;
  return WYGradPlan::build(op, target, &why) ? "" : why;
}

std::string describeWYGradKernel(ChunkGradOp op, const GPUTargetInfo &target) {
  WYGradPlan p = *WYGradPlan::build(op, target);
  return describeChunkGradBlock(p.warps, p.sharedBytes);
}

void emitWYGradKernel(ImplicitLocOpBuilder &b, ChunkGradOp op,
                      const GPUTargetInfo &target, const WYGradBuffers &io) {
  WYGradPlan p = *WYGradPlan::build(op, target);
  emitChunkGridLaunch(b, io.seqLen, p.numVHeads, io.batch, p.sharedBytes,
                      p.mmaElem, [&](MmaEmitter &k) { WYGradKernel(p, io, k).emit(); },
                      p.threads());
}

} // namespace mlir::linattn::kernel
