//===- KeyGradKernel.cpp - chunk_grad's key gradients, a kernel -----------===//
//
// The key gradients of linattn.chunk_grad, after its WY share (the WY
// kernel or the loops: P, Y, F; with per-key gates the WY kernel's shares
// of dk and dL/dG; nothing without beta): one tensor-core
// kernel per (chunk, value head, sequence) computes what the loops did one
// thread per key with every pair product in global memory. With G the in-chunk
// cumulative row gate, E_ij = exp(G_i - G_j) for j <= i < valid (0
// elsewhere), S = S_n, H = H_n:
//
//   dP~ = (scale dO D^T) * E
//   dq  = scale diag(exp(G)) dO S^T + dP~ K
//   dk  = diag(exp(G_C - G)) D H^T + dP~^T Q
//         [+ diag(c exp(G)) Y + (F * E + (F * E)^T) K]                (WY)
//   dL/dG_i = q_i . (scale exp(G_i) (dO S^T)_i) - k_i . dkState_i
//             [+ c_i exp(G_i) Y_i . k_i]
//             + sum_j M_ij - sum_j M_ji,   M = dP~ * (Q K^T) [+ F * P]
//   dL/dG_C += sum_i k_i . dkState_i + exp(G_C) <S, H>
//   dgate = the reverse cumulative sum of dL/dG inside the chunk
//
// (dkState = diag(exp(G_C - G)) D H^T). With per-key gates (GLA: G
// [64][K], E per key) dP~ = scale dO D^T masked, and per key r
//
//   dq_ir = scale exp(G_ir) (dO S^T)_ir + sum_{j <= i} dP~_ij k_jr exp(G_ir - G_jr)
//   dk_jr = exp(G_Cr - G_jr) (D H^T)_jr + sum_{i >= j} dP~_ij q_ir exp(G_ir - G_jr)
//   dL/dG_ir = q_ir dq_ir - k_ir dk_ir
//              [+ sum_i k_ir dkState_ir + exp(G_Cr) <S_r, H_r> at i = C]
//
// and with WY factors (KDA) dk and dL/dG add the WY kernel's shares
// (WYGradKernel.cpp: c exp(G) Y and F's pair sums, with their signs).
//
// with the pair sums by 16-token blocks: below the warp's block on tensor
// cores, factored around a row of the other block so that both factors
// stay <= 1 (dq: K' = K exp(G_L - G), L the key block's last row; dk: Q'' =
// Q exp(G - G_F), F the query block's first row), the diagonal block
// factored too where its gates' spread allows (its B operand from fp32,
// split), elementwise in fp32 where not (as flash-linear-attention's
// chunk_gla_bwd does every diagonal block); dL/dG in f32, its reverse
// cumulative sum a thread per key.
//
// Every f32 operand (D, S, H, dP~,
// F * E, and q and k where they come f32: qk_l2norm's normalised keys)
// enters the tensor cores split into hi + lo parts; the 16-bit inputs
// exactly. M's row and column sums are taken in f64 from the same
// f32 entries, so the pairs that cancel in the suffix sums cancel (the
// loop lowering's reason for its f64 dL/dG).
//
// The kernel takes 16-bit dO, q and k of its type or f32, gates per row or
// none, or per key with 16-bit q and k (GLA; KDA after the WY kernel); K
// and V up to 128; the loops keep the rest (f32 inputs, larger heads).
//
//===----------------------------------------------------------------------===//

#include "ChunkGradKernels.h"
#include "KeyGradParts.h"

#include "../Kernel/ChunkGeometry.h"
#include "../Kernel/MmaEmitter.h"
#include "../Kernel/PerKeyPairSums.h"
#include "../Kernel/PerKeyScores.h"
#include "../KernelSupport.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {
namespace {

/// The key-gradient kernel, decided: shapes and shared-memory layout.
struct KeyGradPlan : ChunkGradWarps {
  static std::optional<KeyGradPlan> build(ChunkGradOp op,
                                          const GPUTargetInfo &target,
                                          std::string *whyNot = nullptr);

  Type mmaElem;
  int64_t numQKHeads = 0, numVHeads = 0, K = 0, V = 0;
  /// Keys per pass over the state: the warps' dq and dk accumulators hold
  /// 16 rows x keyBlock keys, and S's and H's rows come keyBlock at a time:
  /// each lands f32 by cp.async while the previous one is in use, then
  /// goes split to the state tiles (S's rows for dq, then H's for dk).
  int64_t keyBlock = 0;
  /// `gates`: per row; `perKey`: per key ([B, T, HV, K]); `wy`: WY
  /// factors (beta).
  bool wy = false, gates = false, perKey = false;
  /// With WY factors and row gates or none, this kernel takes their P, F
  /// and Y (wyFactors); with per-key gates the WY kernel has already
  /// reduced them to their shares of dk and dL/dG (wyShares).
  bool wyFactors() const { return wy && !perKey; }
  bool wyShares() const { return wy && perKey; }
  /// q and k f32, staged split (qLo, kLo beside qOff, kOff).
  bool splitKeys = false;
  /// S in mmaElem (hasNarrowStates): its rows land as they are (the
  /// landing tile read in that type), their lo tile zero.
  bool narrowStates = false;
  float scale = 0.0f, rank1Scale = 0.0f;

  int64_t keyStride = 0, valueStride = 0, pairStride = 0;
  // Byte offsets in shared memory.
  int64_t qOff = 0, kOff = 0, qLoOff = 0, kLoOff = 0;
  int64_t dOOff = 0, dHiOff = 0, dLoOff = 0;
  int64_t pHiOff = 0, pLoOff = 0, fHiOff = 0, fLoOff = 0;
  int64_t stateHiOff = 0, stateLoOff = 0, landingOff = 0;
  int64_t mOff = 0, rowOff = 0, shareOff = 0, dotOff = 0, gOff = 0, cOff = 0;
  // Per-key gates: G [64][K + 4] f32, K' and Q'' [64][K + pad], the key
  // block's dL/dG and k * dkState [64][keyBlock] f32, <S_r, H_r> per key.
  int64_t gKeyStride = 0, gKeyOff = 0, kPrimeOff = 0, qPrimeOff = 0;
  int64_t gradGOff = 0, stateShareOff = 0, rowDotOff = 0;
  int64_t sharedBytes = 0;

private:
  /// The offsets and sharedBytes for keyBlock.
  void layOut();
};

std::optional<KeyGradPlan> KeyGradPlan::build(ChunkGradOp op,
                                              const GPUTargetInfo &target,
                                              std::string *whyNot) {
  KeyGradPlan p;
  p.numQKHeads = dimOf(op.getQ(), 2);
  p.K = dimOf(op.getQ(), 3);
  p.numVHeads = dimOf(op.getV(), 2);
  p.V = dimOf(op.getV(), 3);
  std::optional<BackwardOperandForms> forms = backwardOperandForms(
      {op.getQ(), op.getK()}, {op.getGradOutput()}, op.getGates(),
      op.getChunkSize(), p.K, p.V, whyNot);
  if (!forms)
    return std::nullopt;
  if (forms->perKeyGates && forms->splitKeys) {
    if (whyNot)
      *whyNot = "its gates are per key, its keys f32";
    return std::nullopt;
  }
  // Its dq and dk accumulators hold 16 rows x 64 keys, the state tiles
  // [64][V + 8] split and their f32 landing tile [64][V]: up to K = V =
  // 128 in one block's memory.
  if (p.K > 128 || p.V > 128) {
    if (whyNot)
      *whyNot = "it takes K and V up to 128";
    return std::nullopt;
  }
  p.mmaElem = forms->mmaElem;
  p.splitKeys = forms->splitKeys;
  p.narrowStates = hasNarrowStates(op, p.mmaElem);
  p.wy = bool(op.getBeta());
  p.perKey = forms->perKeyGates;
  p.gates = op.getGates() && !p.perKey;
  p.scale = op.getScale().convertToFloat();
  p.rank1Scale = p.wy ? op.getRank1Scale()->convertToFloat() : 0.0f;

  p.keyStride = p.K + kPad;
  p.valueStride = p.V + kPad;
  p.pairStride = kChunk + kPad;
  // Key blocks of 64 where K allows and the tiles fit, else 32 (split keys
  // at K = V = 128 take 34 KB more than 64-key state tiles leave room for).
  for (int64_t keyBlock : {int64_t(64), int64_t(32)}) {
    if (p.K % keyBlock != 0)
      continue;
    p.keyBlock = keyBlock;
    // Eight warps (ChunkGradWarps; dP~ and M, dq's and dk's key block in
    // column halves: per key, each half's pair sums over its own keys)
    // where the state tiles' split divides among 256 threads.
    p.warps = (keyBlock * (p.V / 8)) % 256 == 0 ? 8 : 4;
    p.layOut();
    if (p.sharedBytes <= target.maxSharedBytesPerBlock())
      return p;
  }
  if (whyNot)
    *whyNot = sharedBytesReason(p.sharedBytes, target);
  return std::nullopt;
}

void KeyGradPlan::layOut() {
  SharedLayout layout;
  auto take = [&](int64_t bytes) { return layout.take(bytes); };
  int64_t keyTile = kChunk * keyStride * 2, valueTile = kChunk * valueStride * 2;
  int64_t pairTile = kChunk * pairStride * 2;
  int64_t stateTile = keyBlock * valueStride * 2;
  qOff = take(keyTile);
  kOff = take(keyTile);
  if (splitKeys) {
    qLoOff = take(keyTile);
    kLoOff = take(keyTile);
  }
  dOOff = take(valueTile);
  dHiOff = take(valueTile);
  dLoOff = take(valueTile);
  pHiOff = take(pairTile);
  pLoOff = take(pairTile);
  if (wyFactors()) {
    fHiOff = take(pairTile);
    fLoOff = take(pairTile);
  }
  stateHiOff = take(stateTile);
  stateLoOff = take(stateTile);
  landingOff = take(keyBlock * V * 4);
  if (gates) {
    mOff = take(kChunk * (kChunk + 1) * 4);
    // [64][termParts] f64: the quads' (of each column half's warp) row
    // terms and k_i . dkState_i; [threads] f64: <S, H> partials.
    rowOff = take(kChunk * termParts() * 8);
    shareOff = take(kChunk * termParts() * 8);
    dotOff = take(threads() * 8);
    gOff = take(kChunk * 4);
  }
  if (wyFactors())
    cOff = take(kChunk * 4);
  if (perKey) {
    gKeyStride = K + 4;
    gKeyOff = take(kChunk * gKeyStride * 4);
    kPrimeOff = take(keyTile);
    qPrimeOff = take(keyTile);
    gradGOff = take(kChunk * keyBlock * 4);
    stateShareOff = take(kChunk * keyBlock * 4);
    rowDotOff = take(keyBlock * 4);
  }
  sharedBytes = layout.size();
}

class KeyGradKernel {
public:
  KeyGradKernel(const KeyGradPlan &plan, const ChunkGradKeyInputs &io,
                MmaEmitter &k)
      : p(plan), io(io), k(k), b(k.b), e(k.e) {}

  void emit();

private:
  Value tile16(int64_t offset, int64_t rows, int64_t stride) {
    return k.tile(offset, rows, stride, p.mmaElem);
  }
  /// A [rows][cols] f32 (or f64) view at `offset`.
  Value tileOf(int64_t offset, int64_t rows, int64_t cols, Type elem) {
    return k.tile(offset, rows, cols, elem);
  }
  Value gateAt(Value r) {
    return memref::LoadOp::create(b, gTile, ValueRange{r, e.index(0)});
  }
  /// E_ij for j <= i < valid, 0 elsewhere (1 without gates).
  Value decayOrZero(Value i, Value j, Value &keep);
  void stageInputs();
  /// dP~ to shared memory (hi, lo) and, with gates, M = dP~ * (Q K^T).
  void stagePairs();
  /// L = F * E to shared memory (hi, lo); with gates M += F * P.
  void stageFactors();
  /// Rows [key0, + keyBlock) of `src` (S or H, as stored) to the landing tile
  /// by cp.async, as one group.
  void copyStateRows(Value src, Value key0);
  /// Waits for the landed rows and splits them into the state tiles. With
  /// `dotWithHeld` (H's rows over S's) each thread first adds its share of
  /// <S, H> to shDot (f64; S as held, hi + lo).
  void splitLanded(bool dotWithHeld);
  void keyBlockGradients(Value key0);
  /// Per-key gates: G[row][key].
  Value keyGate(Value row, Value key) {
    return memref::LoadOp::create(b, gKeyTile, ValueRange{row, key});
  }
  /// Per-key gates: acc[nt] (16 rows x keyBlock keys) += dq's decayed
  /// dP~ K, or (forKeys) dk's decayed dP~^T Q (Kernel/PerKeyPairSums.h).
  void addPerKeyPairs(SmallVector<SmallVector<Value>> &acc, Value key0,
                      bool forKeys) {
    PerKeyPairSumOperands x{pHi, pLo, forKeys ? qTile : kTile,
                            forKeys ? qPrime : kPrime, gKeyTile};
    addPerKeyPairSums(k, acc, x, forKeys, m0, rows.valid, key0, ownFactored);
  }
  /// Per-key gates: <S_r, H_r> of the key block's rows, S held and H
  /// landed, to rowDot.
  void rowDots();
  /// Per-key gates: dL/dG of the key block's keys, its reverse cumulative
  /// sum inside the chunk, to dgates.
  void perKeyGateGradient(Value key0);
  void keyBlocks();
  void gateGradient();
  void storeRows(ArrayRef<SmallVector<Value>> acc, Value dst, Value key0);

  const KeyGradPlan &p;
  const ChunkGradKeyInputs &io;
  MmaEmitter &k;
  ImplicitLocOpBuilder &b;
  LoopEmitter &e;

  Value n, hv, bIdx, h, m0;
  /// The warp's rows and columns of each product (m0 its first row).
  std::optional<WarpTiling> tiling;
  ChunkRows rows;
  Value gLast;
  Value qTile, kTile, qLo, kLo, dOTile, dHi, dLo, pHi, pLo, fHi, fLo;
  /// The landing tile as f32 (H's rows, and S's where f32) and in S's
  /// stored type (its rows).
  Value stateHi, stateLo, landing, landingS;
  Value mTile, rowTerms, shareTerms, dotTerms, gTile, cTile;
  Value gKeyTile, kPrime, qPrime, gradG, stateShare, rowDot;
  /// Per-key gates: the warp's diagonalFactorable, once per kernel.
  Value ownFactored;
  /// Per thread, f64: the row terms of its rows group and group + 8 (q .
  /// throughState + fromW . k - k . dkState), and k . dkState alone.
  Value rowAcc[2], shareAcc[2];
  /// qk_l2norm factored: s of rows group and group + 8 (dO's rows enter
  /// times s); empty without.
  SmallVector<Value> rowScales;
  Value shDot;
};

Value KeyGradKernel::decayOrZero(Value i, Value j, Value &keep) {
  keep = arith::AndIOp::create(
      b, arith::CmpIOp::create(b, arith::CmpIPredicate::ule, j, i),
      k.ult(i, rows.valid));
  if (!p.gates)
    return e.f32(1.0f);
  // Selected, not multiplied: exp(G_i - G_j) with i past valid (G staged
  // 0) may overflow.
  return k.select(keep, k.exp(e.sub(gateAt(i), gateAt(j))), e.f32(0.0f));
}

// q, k and dO (16-bit: copied as they are) by cp.async, in flight while D
// (f32, split on the way) comes through registers, and f32 q and k after
// it; rows past valid zero.
void KeyGradKernel::stageInputs() {
  Value t0 = rows.t0;
  Value zero = e.index(0);
  if (!p.splitKeys) {
    k.copyTokenRowsAsync(qTile, p.K, rows, io.seqLen, io.q, bIdx, h);
    k.copyTokenRowsAsync(kTile, p.K, rows, io.seqLen, io.k, bIdx, h);
  }
  k.copyTokenRowsAsync(dOTile, p.V, rows, io.seqLen, io.gradOutput, bIdx, hv);
  if (p.perKey)
    k.copyTokenRowsAsync(gKeyTile, p.K, rows, io.seqLen, io.gates, bIdx, hv);
  Value copies = k.commitCopies();
  // The first key block's S rows land while everything before it runs.
  copyStateRows(io.states, zero);
  k.fillTile(dHi, kChunk, p.V, rows.valid, [&](Value r, Value c) {
    return k.load8(io.newValues, {bIdx, e.addIndex(t0, r), hv, c});
  }, dLo);
  if (p.splitKeys)
    for (auto [hi, lo, src] : {std::tuple{qTile, qLo, io.q}, std::tuple{kTile, kLo, io.k}}) {
      Value from = src;
      k.fillTile(hi, kChunk, p.K, rows.valid, [&](Value r, Value c) {
        return k.load8(from, {bIdx, e.addIndex(t0, r), h, c});
      }, lo);
    }
  // Row gates and c = rank1_scale beta: 0 at or past valid.
  stageRowScalars(k, rows, bIdx, hv, io.gates, p.gates ? gTile : Value(), io.beta,
                  p.wyFactors() ? cTile : Value(), p.rank1Scale, io.kRNorm, h);
  rowScales = outputRowScales(k, io.qRNorm, rows, bIdx, h, m0);
  k.waitCopies(copies, /*pending=*/1); // S's rows may still be on the way
  k.barrier();
  if (!p.perKey)
    return;
  // K' = K exp(G_L - G), L the last valid row of the row's 16-token block;
  // Q'' = Q exp(G - G_F), F its first row.
  stagePairSumOperand(k, kTile, kPrime, gKeyTile, rows.valid, p.K, false);
  stagePairSumOperand(k, qTile, qPrime, gKeyTile, rows.valid, p.K, true);
  k.barrier();
}

// Warp w: rows i in [16 w, + 16) of dP = dO D^T (D split) and, with gates,
// of Q K^T, then dP~ = scale dP E into shared memory by stmatrix (hi, lo)
// and M = dP~ (Q K^T) element by element.
void KeyGradKernel::stagePairs() {
  int64_t tiles = kChunk / 8 / p.halves();
  Value col0 = tiling->base(kChunk);
  SmallVector<SmallVector<Value>> dP = k.zeroAcc(tiles);
  tiling->gemm(dP, Operand{TileView{dOTile}, std::nullopt},
               Operand{TileView{dHi}, TileView{dLo}}, p.V, col0);
  SmallVector<SmallVector<Value>> scores;
  if (p.gates) {
    scores = k.zeroAcc(tiles);
    tiling->gemm(scores, Operand::of(qTile, qLo), Operand::of(kTile, kLo), p.K, col0);
  }
  Type f32 = b.getF32Type();
  SmallVector<SmallVector<Value>> lo;
  for (int64_t nt = 0; nt < tiles; ++nt) {
    SmallVector<Value> tileLo;
    for (int64_t i = 0; i < 4; ++i) {
      Value row = k.accRow(m0, i), col = tiling->plus(col0, k.accCol(8 * nt, i));
      Value keep;
      Value decay = decayOrZero(row, col, keep);
      Value x = k.select(keep,
                         e.mul(rowScales.empty()
                                   ? e.mul(dP[nt][i], e.f32(p.scale))
                                   : e.mul(e.mul(dP[nt][i], e.f32(p.scale)),
                                           rowScales[i / 2]),
                               decay),
                         e.f32(0.0f));
      dP[nt][i] = x;
      Value hi = arith::ExtFOp::create(
          b, f32, arith::TruncFOp::create(b, p.mmaElem, x).getResult());
      tileLo.push_back(e.sub(x, hi));
      if (p.gates)
        memref::StoreOp::create(b, e.mul(x, scores[nt][i]), mTile,
                                ValueRange{row, col});
    }
    lo.push_back(tileLo);
  }
  for (int64_t nt = 0; nt < tiles; nt += 2) {
    Value col = tiling->plus(col0, e.index(8 * nt));
    k.stmatrix4(pHi, m0, col, dP[nt], dP[nt + 1], false);
    k.stmatrix4(pLo, m0, col, lo[nt], lo[nt + 1], false);
  }
  k.barrier();
}

// L = F * E split (KeyGradParts.h), with gates M += F * P.
void KeyGradKernel::stageFactors() {
  stageFactorTiles(k, FactorTiles{io.factorPairs, io.keyPairs, bIdx, hv, rows,
                                  p.gates ? gTile : Value(), p.gates ? mTile : Value(),
                                  /*addToM=*/Value(), fHi, fLo});
  k.barrier();
}

void KeyGradKernel::copyStateRows(Value src, Value key0) {
  Value dst = src == io.states ? landingS : landing;
  k.copyRowsAsync(dst, e.index(0), p.V, key0, e.index(p.keyBlock), e.index(p.K), src,
                  [&](Value row, Value c) -> SmallVector<Value> {
                    return {bIdx, n, hv, row, c};
                  }, p.keyBlock);
  k.commitCopies();
}

void KeyGradKernel::splitLanded(bool dotWithHeld) {
  constexpr int64_t kWidth = 8;
  int64_t perRow = p.V / kWidth;
  Type f32 = b.getF32Type(), f64 = b.getF64Type();
  auto f32x8 = VectorType::get({kWidth}, f32);
  auto narrowx8 = VectorType::get({kWidth}, p.mmaElem);
  k.waitCopies(k.commitCopies(), 0);
  // Landed for every thread; with dotWithHeld, every warp is past its
  // products with S's tiles.
  k.barrier();
  if (dotWithHeld && p.perKey) {
    rowDots();
    k.barrier();
  }
  bool dot = dotWithHeld && shDot;
  SmallVector<Value> init = {dot ? shDot : Value(e.f32(0.0f))};
  ValueRange out = e.forEachReduce(
      e.index(p.keyBlock * perRow / p.threads()), init,
      [&](Value it, ValueRange acc) -> SmallVector<Value> {
        Value idx = e.addIndex(e.mulIndex(it, e.index(p.threads())), k.tid);
        Value r = arith::DivUIOp::create(b, idx, e.index(perRow));
        Value c = e.mulIndex(arith::RemUIOp::create(b, idx, e.index(perRow)),
                             e.index(kWidth));
        auto load = [&](Value buf, Type type) {
          return vector::LoadOp::create(b, type, buf, ValueRange{r, c}, false,
                                        llvm::Align(16)).getResult();
        };
        // H's rows land over S's (dotWithHeld); S's may be 16-bit.
        Value x = !dotWithHeld && p.narrowStates
                      ? arith::ExtFOp::create(b, f32x8, load(landingS, narrowx8)).getResult()
                      : load(landing, f32x8);
        Value sum = acc[0];
        if (dot) {
          Value held = arith::AddFOp::create(
              b, arith::ExtFOp::create(b, f32x8, load(stateHi, narrowx8)),
              arith::ExtFOp::create(b, f32x8, load(stateLo, narrowx8)));
          Value prod = arith::ExtFOp::create(b, VectorType::get({kWidth}, f64),
                                             arith::MulFOp::create(b, held, x).getResult());
          sum = arith::AddFOp::create(
              b, sum, vector::ReductionOp::create(b, vector::CombiningKind::ADD, prod));
        }
        // This thread read (r, c) of the state tiles and alone writes it.
        auto [xHi, xLo] = k.split(x, narrowx8);
        vector::StoreOp::create(b, xHi, stateHi, ValueRange{r, c}, false, llvm::Align(16));
        vector::StoreOp::create(b, xLo, stateLo, ValueRange{r, c}, false, llvm::Align(16));
        return {sum};
      });
  if (dot)
    shDot = out[0];
  k.barrier();
}

void KeyGradKernel::storeRows(ArrayRef<SmallVector<Value>> acc, Value dst,
                              Value key0) {
  storeKeyRows(k, acc, dst, rows, m0, bIdx, hv, key0);
}

// Keys [key0, + keyBlock) (a run-time loop's block: its code is emitted
// once): S's rows (landed before the block) split, H's copied during dq's
// products, then split for dk's; the next block's S rows copied during
// dk's.
void KeyGradKernel::keyBlockGradients(Value blockKey0) {
  int64_t tiles = p.keyBlock / 8 / p.halves();
  splitLanded(/*dotWithHeld=*/false);
  copyStateRows(io.gradStates, blockKey0);
  // The warp's keys: [key0, + keyBlock / halves) of the block, from the
  // state tiles' row stateRow0.
  Value stateRow0 = tiling->base(p.keyBlock);
  Value key0 = tiling->plus(stateRow0, blockKey0);
  Type f64 = b.getF64Type();
  auto wide = [&](Value x) { return arith::ExtFOp::create(b, f64, x).getResult(); };
  // Element (row, key0 + col) of q or k, f32 (hi + lo where split).
  auto keyAt = [&](Value hiBuf, Value loBuf, Value row, Value col) {
    return k.loadJoined(hiBuf, loBuf, {row, e.addIndex(key0, col)});
  };
  Value rowGates[2];
  for (int64_t half = 0; half < 2; ++half)
    rowGates[half] = p.gates ? gateAt(k.accRow(m0, 2 * half)) : Value();

  // dq = scale exp(G_i) dO S^T + dP~ K.
  SmallVector<SmallVector<Value>> dq = k.zeroAcc(tiles);
  tiling->gemm(dq, Operand{TileView{dOTile}, std::nullopt},
               Operand{TileView{stateHi}, TileView{stateLo}}, p.V, stateRow0);
  auto keyOf = [&](int64_t nt, int64_t i) {
    return e.addIndex(key0, k.accCol(8 * nt, i));
  };
  // The key block's column (stateShare's, gradG's) of accumulator element i.
  auto blockCol = [&](int64_t nt, int64_t i) {
    return tiling->plus(stateRow0, k.accCol(8 * nt, i));
  };
  for (int64_t nt = 0; nt < tiles; ++nt)
    for (int64_t i = 0; i < 4; ++i) {
      Value factor = e.f32(p.scale);
      if (p.gates)
        factor = e.mul(factor, k.exp(rowGates[i / 2]));
      if (p.perKey)
        factor = e.mul(factor, k.exp(keyGate(k.accRow(m0, i), keyOf(nt, i))));
      if (!rowScales.empty())
        factor = e.mul(factor, rowScales[i / 2]);
      dq[nt][i] = e.mul(dq[nt][i], factor);
      if (p.gates)
        rowAcc[i / 2] = arith::AddFOp::create(
            b, rowAcc[i / 2],
            wide(e.mul(keyAt(qTile, qLo, k.accRow(m0, i), k.accCol(8 * nt, i)),
                       dq[nt][i])));
    }
  // dL/dG's q share (per key), from the whole dq.
  SmallVector<Value> gradShare;
  if (p.perKey) {
    addPerKeyPairs(dq, key0, /*forKeys=*/false);
    for (int64_t nt = 0; nt < tiles; ++nt)
      for (int64_t i = 0; i < 4; ++i)
        gradShare.push_back(e.mul(
            k.loadJoined(qTile, Value(), {k.accRow(m0, i), keyOf(nt, i)}),
            dq[nt][i]));
  } else {
    k.gemm(dq, Operand{TileView{pHi}, TileView{pLo}}, m0,
           Operand::of(kTile, kLo, /*transposed=*/true), kChunk, key0);
  }
  storeRows(dq, io.dq, key0);

  // dk = exp(G_C - G_i) D H^T + dP~^T Q [+ c exp(G) Y + Fs K]. Y's entries
  // (per key: dk's and dL/dG's WY shares) are loaded first, so that their
  // latency passes under dk's products (a load after them waited alone:
  // bench/NOTES.md b9).
  Value last = e.subIndex(rows.valid, e.index(1));
  SmallVector<Value> y, yGate;
  auto loadRows = [&](Value src, SmallVector<Value> &dst) {
    for (int64_t nt = 0; nt < tiles; ++nt)
      for (int64_t i = 0; i < 4; ++i)
        dst.push_back(e.loadF32(
            src, {bIdx, e.addIndex(rows.t0, e.minIndex(k.accRow(m0, i), last)), hv,
                  e.addIndex(key0, k.accCol(8 * nt, i))}));
  };
  if (p.wy)
    loadRows(io.yW, y);
  if (p.wyShares() && io.dgates)
    loadRows(io.wyGateShare, yGate);
  splitLanded(/*dotWithHeld=*/true);
  {
    Value next = e.addIndex(blockKey0, e.index(p.keyBlock));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(
        scf::IfOp::create(b, k.ult(next, e.index(p.K)), false).thenBlock());
    copyStateRows(io.states, next);
  }
  SmallVector<SmallVector<Value>> dk = k.zeroAcc(tiles);
  tiling->gemm(dk, Operand{TileView{dHi}, TileView{dLo}},
               Operand{TileView{stateHi}, TileView{stateLo}}, p.V, stateRow0);
  for (int64_t nt = 0; nt < tiles; ++nt)
    for (int64_t i = 0; i < 4; ++i) {
      if (p.gates)
        dk[nt][i] = e.mul(dk[nt][i], k.exp(e.sub(gLast, rowGates[i / 2])));
      if (p.perKey) {
        // dkState = exp(G_C - G) (D H^T) per key, and k * dkState for
        // the last row's share of dL/dG.
        Value row = k.accRow(m0, i), key = keyOf(nt, i);
        Value lastRow = e.subIndex(rows.valid, e.index(1));
        dk[nt][i] = e.mul(dk[nt][i], k.exp(e.sub(keyGate(lastRow, key),
                                                 keyGate(row, key))));
        memref::StoreOp::create(
            b, e.mul(k.loadJoined(kTile, Value(), {row, key}), dk[nt][i]),
            stateShare, ValueRange{row, blockCol(nt, i)});
      }
      if (!p.gates)
        continue;
      Value share = wide(
          e.mul(keyAt(kTile, kLo, k.accRow(m0, i), k.accCol(8 * nt, i)), dk[nt][i]));
      shareAcc[i / 2] = arith::AddFOp::create(b, shareAcc[i / 2], share);
      rowAcc[i / 2] = arith::SubFOp::create(b, rowAcc[i / 2], share);
    }
  if (p.perKey)
    addPerKeyPairs(dk, key0, /*forKeys=*/true);
  else
    k.gemm(dk, Operand{TileView{pHi, true}, TileView{pLo, true}}, m0,
           Operand::of(qTile, qLo, /*transposed=*/true), kChunk, key0);
  if (p.wyFactors()) {
    for (bool transposed : {false, true})
      k.gemm(dk, Operand{TileView{fHi, transposed}, TileView{fLo, transposed}}, m0,
             Operand::of(kTile, kLo, /*transposed=*/true), kChunk, key0);
    for (int64_t nt = 0; nt < tiles; ++nt)
      for (int64_t i = 0; i < 4; ++i) {
        Value row = k.accRow(m0, i);
        Value coeff = memref::LoadOp::create(b, cTile, ValueRange{row, e.index(0)});
        if (p.gates)
          coeff = e.mul(coeff, k.exp(rowGates[i / 2]));
        Value fromW = k.select(k.ult(row, rows.valid), e.mul(coeff, y[4 * nt + i]),
                                 e.f32(0.0f));
        dk[nt][i] = e.add(dk[nt][i], fromW);
        if (p.gates)
          rowAcc[i / 2] = arith::AddFOp::create(
              b, rowAcc[i / 2],
              wide(e.mul(fromW, keyAt(kTile, kLo, row, k.accCol(8 * nt, i)))));
      }
  }
  if (p.perKey && io.dgates) {
    // dL/dG = q dq - k dk [+ the WY share], the warp's rows of the key
    // block (dk without its WY share: that comes with its own signs).
    for (int64_t nt = 0; nt < tiles; ++nt)
      for (int64_t i = 0; i < 4; ++i) {
        Value row = k.accRow(m0, i);
        Value g = e.sub(gradShare[4 * nt + i],
                        e.mul(k.loadJoined(kTile, Value(), {row, keyOf(nt, i)}),
                              dk[nt][i]));
        if (p.wyShares())
          g = e.add(g, yGate[4 * nt + i]);
        memref::StoreOp::create(b, g, gradG, ValueRange{row, blockCol(nt, i)});
      }
  }
  if (p.wyShares())
    for (int64_t nt = 0; nt < tiles; ++nt)
      for (int64_t i = 0; i < 4; ++i)
        dk[nt][i] = e.add(dk[nt][i], y[4 * nt + i]);
  storeRows(dk, io.dk, key0);
  if (p.perKey && io.dgates)
    perKeyGateGradient(blockKey0);
}

// threadsPerKey threads a key row r of the block: their parts of
// sum_c S_rc H_rc (S split as held, H as landed), then shuffles.
void KeyGradKernel::rowDots() {
  int64_t threadsPerKey = p.threads() / p.keyBlock;
  int64_t perThread = p.V / threadsPerKey;
  Value r = arith::DivUIOp::create(b, k.tid, e.index(threadsPerKey));
  Value c0 = e.mulIndex(arith::RemUIOp::create(b, k.tid, e.index(threadsPerKey)),
                        e.index(perThread));
  Value sum = e.forEachReduce(
      e.index(perThread), {e.f32(0.0f)},
      [&](Value c, ValueRange acc) -> SmallVector<Value> {
        Value col = e.addIndex(c0, c);
        Value held = k.loadJoined(stateHi, stateLo, {r, col});
        Value landed = memref::LoadOp::create(b, landing, ValueRange{r, col});
        return {e.add(acc[0], e.mul(held, landed))};
      })[0];
  for (int64_t offset = 1; offset < threadsPerKey; offset *= 2)
    sum = e.add(sum, k.shuffle(sum, offset, gpu::ShuffleMode::XOR));
  memref::StoreOp::create(b, sum, rowDot, ValueRange{r, e.index(0)});
}

// A thread per key r of the block: the last row's share sum_i k_ir
// dkState_ir + exp(G_Cr) <S_r, H_r>, then the rows' dL/dG from the last
// up: dgate_ir = sum_{i' >= i} dL/dG_i'r.
void KeyGradKernel::perKeyGateGradient(Value key0) {
  k.barrier();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(
        scf::IfOp::create(b, k.ult(k.tid, e.index(p.keyBlock)), false).thenBlock());
    Value r = k.tid, key = e.addIndex(key0, r);
    Value last = e.subIndex(rows.valid, e.index(1));
    Value share = e.forEachReduce(
        rows.valid, {e.f32(0.0f)}, [&](Value i, ValueRange acc) -> SmallVector<Value> {
          return {e.add(acc[0], memref::LoadOp::create(b, stateShare, ValueRange{i, r}))};
        })[0];
    share = e.add(share, e.mul(k.exp(keyGate(last, key)),
                               memref::LoadOp::create(b, rowDot, ValueRange{r, e.index(0)})));
    e.forEachReduce(rows.valid, {share},
                    [&](Value fromLast, ValueRange acc) -> SmallVector<Value> {
      Value i = e.subIndex(last, fromLast);
      Value sum = e.add(acc[0], memref::LoadOp::create(b, gradG, ValueRange{i, r}));
      memref::StoreOp::create(b, sum, io.dgates,
                              ValueRange{bIdx, e.addIndex(rows.t0, i), hv, key});
      return {sum};
    });
  }
  k.barrier();
}

// dL/dG per row (f64): the quads' row terms, M's row sum minus its column
// sum (a thread per row); the chunk's last row adds sum_i k_i . dkState_i
// and exp(G_C) <S, H>; then the reverse cumulative sum inside the chunk by
// warp 0, rows l and l + 32 in lane l, with shuffles.
void KeyGradKernel::gateGradient() {
  auto zero64 = [&] {
    return arith::ConstantOp::create(b, b.getF64FloatAttr(0.0)).getResult();
  };
  auto at = [&](Value buf, Value r, int64_t c) {
    return memref::LoadOp::create(b, buf, ValueRange{r, e.index(c)}).getResult();
  };
  // The quad's column among the four of each half.
  Value column = tiling->plus(tiling->base(p.termParts()), k.quad);
  RowTermTiles tiles{rowTerms, shareTerms, dotTerms, mTile, p.termParts()};
  gatherRowTerms(k, tiles, m0, column, rowAcc, shareAcc, shDot);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(
      scf::IfOp::create(b, k.ult(k.warp, e.index(1)), false).thenBlock());
  Value lastShare = lastRowShare(k, tiles, gLast);
  Value upperRow = e.addIndex(k.lane, e.index(32));
  Value last = e.subIndex(rows.valid, e.index(1));
  auto rowGradient = [&](Value row) {
    Value g = at(rowTerms, row, 0);
    Value isLast = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, row, last);
    g = arith::AddFOp::create(b, g, k.select(isLast, lastShare, zero64()));
    return k.select(k.ult(row, rows.valid), g, zero64());
  };
  Value upper = k.warpSuffixSum(rowGradient(upperRow));
  Value lower = arith::AddFOp::create(
      b, k.warpSuffixSum(rowGradient(k.lane)),
      k.shuffle(upper, 0, gpu::ShuffleMode::IDX));
  for (auto [row, sum] : {std::pair{k.lane, lower}, std::pair{upperRow, upper}}) {
    OpBuilder::InsertionGuard rowGuard(b);
    b.setInsertionPointToStart(
        scf::IfOp::create(b, k.ult(row, rows.valid), false).thenBlock());
    memref::StoreOp::create(b, arith::TruncFOp::create(b, b.getF32Type(), sum),
                            io.dgates, ValueRange{bIdx, e.addIndex(rows.t0, row), hv});
  }
}

// keyBlockGradients over the key blocks, a run-time loop; the f64 sums
// the blocks add to (with gates) are its carried values.
void KeyGradKernel::keyBlocks() {
  auto sums = [&] {
    SmallVector<Value> held;
    if (p.gates)
      held = {rowAcc[0], rowAcc[1], shareAcc[0], shareAcc[1]};
    if (shDot)
      held.push_back(shDot);
    return held;
  };
  auto setSums = [&](ValueRange held) {
    if (p.gates)
      std::tie(rowAcc[0], rowAcc[1], shareAcc[0], shareAcc[1]) =
          std::tuple{held[0], held[1], held[2], held[3]};
    if (shDot)
      shDot = held.back();
  };
  setSums(e.forEachReduce(
      e.index(p.K / p.keyBlock), sums(),
      [&](Value kb, ValueRange in) -> SmallVector<Value> {
        setSums(in);
        keyBlockGradients(e.mulIndex(kb, e.index(p.keyBlock)));
        return sums();
      }));
}

void KeyGradKernel::emit() {
  Block *body = b.getInsertionBlock();
  n = body->getArgument(0);
  hv = body->getArgument(1);
  bIdx = body->getArgument(2);
  h = e.qkHead(hv, p.numVHeads, p.numQKHeads);
  tiling.emplace(k, p.halves());
  m0 = tiling->m0();
  rows = chunkRows(e, n, io.seqLen);
  Type f32 = b.getF32Type();
  qTile = tile16(p.qOff, kChunk, p.keyStride);
  kTile = tile16(p.kOff, kChunk, p.keyStride);
  if (p.splitKeys) {
    qLo = tile16(p.qLoOff, kChunk, p.keyStride);
    kLo = tile16(p.kLoOff, kChunk, p.keyStride);
  }
  dOTile = tile16(p.dOOff, kChunk, p.valueStride);
  dHi = tile16(p.dHiOff, kChunk, p.valueStride);
  dLo = tile16(p.dLoOff, kChunk, p.valueStride);
  pHi = tile16(p.pHiOff, kChunk, p.pairStride);
  pLo = tile16(p.pLoOff, kChunk, p.pairStride);
  if (p.wyFactors()) {
    fHi = tile16(p.fHiOff, kChunk, p.pairStride);
    fLo = tile16(p.fLoOff, kChunk, p.pairStride);
    cTile = tileOf(p.cOff, kChunk, 1, f32);
  }
  stateHi = tile16(p.stateHiOff, p.keyBlock, p.valueStride);
  stateLo = tile16(p.stateLoOff, p.keyBlock, p.valueStride);
  landing = tileOf(p.landingOff, p.keyBlock, p.V, f32);
  landingS = p.narrowStates ? tileOf(p.landingOff, p.keyBlock, p.V, p.mmaElem) : landing;
  if (p.gates) {
    Type f64 = b.getF64Type();
    mTile = tileOf(p.mOff, kChunk, kChunk + 1, f32);
    rowTerms = tileOf(p.rowOff, kChunk, p.termParts(), f64);
    shareTerms = tileOf(p.shareOff, kChunk, p.termParts(), f64);
    dotTerms = tileOf(p.dotOff, p.threads(), 1, f64);
    gTile = tileOf(p.gOff, kChunk, 1, f32);
    for (int64_t half = 0; half < 2; ++half)
      rowAcc[half] = shareAcc[half] =
          arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
    if (io.dgates)
      shDot = arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
  }
  if (p.perKey) {
    gKeyTile = tileOf(p.gKeyOff, kChunk, p.gKeyStride, f32);
    kPrime = tile16(p.kPrimeOff, kChunk, p.keyStride);
    qPrime = tile16(p.qPrimeOff, kChunk, p.keyStride);
    gradG = tileOf(p.gradGOff, kChunk, p.keyBlock, f32);
    stateShare = tileOf(p.stateShareOff, kChunk, p.keyBlock, f32);
    rowDot = tileOf(p.rowDotOff, p.keyBlock, 1, f32);
  }

  stageInputs();
  if (p.perKey)
    ownFactored = diagonalFactorable(k, gKeyTile, m0, rows.valid, p.K);
  if (p.gates)
    gLast = gateAt(e.subIndex(rows.valid, e.index(1)));
  stagePairs();
  if (p.wyFactors())
    stageFactors();
  keyBlocks();
  if (p.gates && io.dgates)
    gateGradient();
}

} // namespace

std::string whyNoKeyGradKernel(ChunkGradOp op, const GPUTargetInfo &target) {
  std::string why;
  return KeyGradPlan::build(op, target, &why) ? "" : why;
}

std::string describeKeyGradKernel(ChunkGradOp op, const GPUTargetInfo &target) {
  KeyGradPlan p = *KeyGradPlan::build(op, target);
  return describeChunkGradBlock(p.warps, p.sharedBytes);
}

void emitKeyGradKernel(ImplicitLocOpBuilder &b, ChunkGradOp op,
                       const GPUTargetInfo &target, const ChunkGradKeyInputs &io) {
  KeyGradPlan p = *KeyGradPlan::build(op, target);
  emitChunkGridLaunch(b, io.seqLen, p.numVHeads, io.batch, p.sharedBytes,
                      p.mmaElem, [&](MmaEmitter &k) { KeyGradKernel(p, io, k).emit(); },
                      p.threads());
}

} // namespace mlir::linattn::kernel
