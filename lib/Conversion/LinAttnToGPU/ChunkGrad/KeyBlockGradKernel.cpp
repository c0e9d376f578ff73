//===- KeyBlockGradKernel.cpp - chunk_grad's key gradients by key block ---===//
//
// The key gradients of linattn.chunk_grad (KeyGradKernel.cpp states them)
// with the work cut so that two blocks share an SM: a block per (chunk,
// 64-key block, value head, sequence) computes dq and dk of its 64 keys,
// streaming the V dimension in 64-column slabs, and the gates' gradient
// leaves as partial row terms that a second, small kernel sums. With G the
// in-chunk cumulative row gate, E_ij = exp(G_i - G_j) for j <= i < valid,
// S = S_n, H = H_n, and r a key of the block:
//
//   over the slabs:  dP   = dO D^T        (every block of the chunk alike)
//                    A_ir = (dO S^T)_ir,  B_ir = (D H^T)_ir
//                    <S, H>_block = sum_{r, c} S_rc H_rc
//   dP~  = scale dP * E
//   dq_r = scale exp(G) A_r + dP~ K_r
//   dk_r = exp(G_C - G) B_r + dP~^T Q_r [+ c exp(G) Y_r + (F * E + (F * E)^T) K_r]
//   part_i = q_i . (scale exp(G_i) A_i) - k_i . dkState_i [+ c_i exp(G_i) Y_i . k_i]
//            + sum_j M_ij - sum_j M_ji,  M = dP~ * (Q_r K_r^T) [+ F * P, block 0]
//   part_C += sum_i k_i . dkState_i + exp(G_C) <S, H>_block
//
// (sums over the block's keys only: M's row and column sums and every
// row term are linear in the keys), stored f64 per (token, value head,
// key block); then dgate_i = sum_{i' >= i} sum_blocks part_i' inside the
// chunk. The per-chunk kernel (KeyGradKernel.cpp) holds q, k, dO, D, the
// pairs and a key block of S and H at once, ~214 KB at K = V = 128: one
// block an SM, whose every input wait and barrier is the SM's (bench/
// NOTES.md pr1, pr2). Here a slab's dO, D, S and H (64 x 64 each, the
// f32 ones split into hi + lo through registers; S stored 16-bit comes
// by cp.async as dO does, one tile) are 63 KB, the pairs
// stage over them once the slabs are done, and the key block's q and k
// land by cp.async meanwhile: ~90 KB. dP and D's loads are repeated by
// each of the chunk's K / 64 blocks (adjacent in the grid, so the second
// read is mostly L2's).
//
// It takes what the per-chunk kernel takes with gates per row or none
// (16-bit dO; q and k 16-bit or f32, split), K and V multiples of 64 up to
// 256 (heads above 128 are beyond the per-chunk kernel).
//
//===----------------------------------------------------------------------===//

#include "ChunkGradKernels.h"
#include "KeyGradParts.h"

#include "../Kernel/ChunkGeometry.h"
#include "../Kernel/MmaEmitter.h"
#include "../KernelSupport.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {
namespace {

/// Keys a block takes, and the width of a slab of V.
constexpr int64_t kKeyBlock = 64;
constexpr int64_t kSlab = 64;
/// Resident blocks an SM the plan is for.
constexpr int64_t kBlocksPerSM = 2;

/// The key-block kernel, decided: shapes and shared-memory layout.
struct KeyBlockGradPlan : ChunkGradWarps {
  static std::optional<KeyBlockGradPlan> build(ChunkGradOp op,
                                               const GPUTargetInfo &target,
                                               std::string *whyNot = nullptr);

  Type mmaElem;
  int64_t numQKHeads = 0, numVHeads = 0, K = 0, V = 0;
  /// `gates`: per row; `wy`: WY factors (beta); q and k f32 (split); S
  /// in mmaElem (hasNarrowStates: copied in, no lo tile).
  bool wy = false, gates = false, splitKeys = false, narrowStates = false;
  float scale = 0.0f, rank1Scale = 0.0f;
  int64_t keyBlocks() const { return K / kKeyBlock; }
  int64_t slabs() const { return V / kSlab; }
  /// Row stride of every 16-bit tile ([64][64 + pad]).
  static constexpr int64_t kStride = kSlab + kPad;

  // Byte offsets in shared memory. A slab's tiles, then over them the
  // pairs' (dP~ and L split, M); the key block's q and k; row terms.
  int64_t dOOff = 0, dHiOff = 0, dLoOff = 0, sHiOff = 0, sLoOff = 0, hHiOff = 0,
          hLoOff = 0;
  int64_t pHiOff = 0, pLoOff = 0, fHiOff = 0, fLoOff = 0, mOff = 0;
  int64_t qOff = 0, kOff = 0, qLoOff = 0, kLoOff = 0;
  int64_t gOff = 0, cOff = 0, rowOff = 0, shareOff = 0, dotOff = 0;
  int64_t sharedBytes = 0;
};

std::optional<KeyBlockGradPlan>
KeyBlockGradPlan::build(ChunkGradOp op, const GPUTargetInfo &target,
                        std::string *whyNot) {
  KeyBlockGradPlan p;
  p.numQKHeads = dimOf(op.getQ(), 2);
  p.K = dimOf(op.getQ(), 3);
  p.numVHeads = dimOf(op.getV(), 2);
  p.V = dimOf(op.getV(), 3);
  std::optional<BackwardOperandForms> forms = backwardOperandForms(
      {op.getQ(), op.getK()}, {op.getGradOutput()}, op.getGates(),
      op.getChunkSize(), p.K, p.V, whyNot);
  if (!forms)
    return std::nullopt;
  if (forms->perKeyGates) {
    if (whyNot)
      *whyNot = "its gates are per key";
    return std::nullopt;
  }
  if (p.K % kKeyBlock != 0 || p.V % kSlab != 0 || p.K > 256 || p.V > 256) {
    if (whyNot)
      *whyNot = "it takes K and V multiples of 64 up to 256";
    return std::nullopt;
  }
  p.mmaElem = forms->mmaElem;
  p.splitKeys = forms->splitKeys;
  p.narrowStates = hasNarrowStates(op, p.mmaElem);
  p.wy = bool(op.getBeta());
  p.gates = bool(op.getGates());
  p.scale = op.getScale().convertToFloat();
  p.rank1Scale = p.wy ? op.getRank1Scale()->convertToFloat() : 0.0f;
  // Eight warps (ChunkGradWarps: each 16 rows and half of a product's 64
  // columns, at most 128 registers for two blocks an SM) but with row gates
  // and no WY factors (simple GLA, Mamba-2), where four were faster at K =
  // V = 128 (bench/NOTES.md kb1: 0.275 against 0.327 ms; eight faster
  // for every other form measured).
  p.warps = p.gates && !p.wy ? 4 : 8;

  SharedLayout layout;
  auto take = [&](int64_t bytes) { return layout.take(bytes); };
  int64_t tile = kChunk * kStride * 2;
  int64_t slabStart = layout.current();
  for (int64_t *off : {&p.dOOff, &p.dHiOff, &p.dLoOff, &p.sHiOff})
    *off = take(tile);
  if (!p.narrowStates)
    p.sLoOff = take(tile);
  for (int64_t *off : {&p.hHiOff, &p.hLoOff})
    *off = take(tile);
  int64_t slabEnd = layout.current();
  layout.rewind(slabStart);
  p.pHiOff = take(tile);
  p.pLoOff = take(tile);
  if (p.wy) {
    p.fHiOff = take(tile);
    p.fLoOff = take(tile);
  }
  if (p.gates)
    p.mOff = take(kChunk * (kChunk + 1) * 4);
  layout.rewind(std::max(slabEnd, layout.current()));
  p.qOff = take(tile);
  p.kOff = take(tile);
  if (p.splitKeys) {
    p.qLoOff = take(tile);
    p.kLoOff = take(tile);
  }
  if (p.gates) {
    p.gOff = take(kChunk * 4);
    // [64][termParts] f64: each quad's (of each column half) row terms and
    // k_i . dkState_i; [threads] f64: <S, H> partials.
    p.rowOff = take(kChunk * p.termParts() * 8);
    p.shareOff = take(kChunk * p.termParts() * 8);
    p.dotOff = take(p.threads() * 8);
  }
  if (p.wy)
    p.cOff = take(kChunk * 4);
  p.sharedBytes = layout.size();
  if (p.sharedBytes > target.maxSharedBytesPerBlock(kBlocksPerSM)) {
    if (whyNot)
      *whyNot = "its tiles need " + std::to_string(p.sharedBytes) +
                " bytes of shared memory, more than two blocks an SM may have";
    return std::nullopt;
  }
  return p;
}

class KeyBlockGradKernel {
public:
  KeyBlockGradKernel(const KeyBlockGradPlan &plan, const ChunkGradKeyInputs &io,
                     Value partials, MmaEmitter &k)
      : p(plan), io(io), partials(partials), k(k), b(k.b), e(k.e) {}

  void emit();

private:
  using Acc = SmallVector<SmallVector<Value>>;
  /// 16 x 8 accumulator tiles a warp holds of a 64-column product: its
  /// rows and its column half's columns (WarpTiling).
  int64_t tiles() const { return kChunk / 8 / p.halves(); }
  /// The column (of 64) of the warp's accumulator element i of tile nt.
  Value accColumn(int64_t nt, int64_t i) {
    return tiling->plus(colBase, k.accCol(8 * nt, i));
  }
  /// acc += A B over the warp's rows and its columns of B.
  void gemm(Acc &acc, Operand a, Operand bt, int64_t kDim) {
    tiling->gemm(acc, a, bt, kDim, colBase);
  }
  Value tile16(int64_t offset) {
    return k.tile(offset, kChunk, KeyBlockGradPlan::kStride, p.mmaElem);
  }
  Value gateAt(Value r) {
    return memref::LoadOp::create(b, gTile, ValueRange{r, e.index(0)});
  }
  Value wide(Value x) {
    return arith::ExtFOp::create(b, b.getF64Type(), x).getResult();
  }
  /// The block's q and k (cp.async, or split through registers where f32);
  /// row gates and c = rank1_scale beta (0 at or past valid).
  void stageKeysAndGates();
  /// One slab: dO by cp.async, D and H split through registers, S split
  /// through registers or (narrow) by cp.async; each thread adds its S . H
  /// to `dot`; then dP, A and B accumulate.
  void slab(Value s0, Acc &dP, Acc &a, Acc &bAcc, Value &dot);
  /// dP~ (hi, lo) over the slab tiles and, with gates, M = dP~ * (Q K^T).
  void stagePairs(Acc &dP);
  /// L = F * E (hi, lo); with gates, M += F * P in the first key block.
  void stageFactors();
  void storeRows(ArrayRef<SmallVector<Value>> acc, Value dst);
  /// The row terms' per-row sums, plus M's row minus column sums, plus the
  /// last row's share, to `partials`.
  void storePartials(Value dot);

  const KeyBlockGradPlan &p;
  const ChunkGradKeyInputs &io;
  Value partials;
  MmaEmitter &k;
  ImplicitLocOpBuilder &b;
  LoopEmitter &e;

  Value n, keyBlock, key0, hv, bIdx, h, m0, gLast;
  std::optional<WarpTiling> tiling;
  /// The warp's first column of a 64-column product (null: every column).
  Value colBase;
  ChunkRows rows;
  Value dOTile, dHi, dLo, sHi, sLo, hHi, hLo, pHi, pLo, fHi, fLo, mTile;
  Value qTile, kTile, qLo, kLo, gTile, cTile, rowTerms, shareTerms, dotTerms;
  /// Per thread, f64: the row terms of its rows group and group + 8, and
  /// k . dkState alone.
  Value rowAcc[2], shareAcc[2];
  /// qk_l2norm factored: s of rows group and group + 8 (dO's rows enter
  /// times s); empty without.
  SmallVector<Value> rowScales;
};

void KeyBlockGradKernel::stageKeysAndGates() {
  auto keyIndices = [&](Value t, Value c) -> SmallVector<Value> {
    return {bIdx, t, h, e.addIndex(key0, c)};
  };
  if (!p.splitKeys) {
    for (auto [dst, src] : {std::pair{qTile, io.q}, std::pair{kTile, io.k}})
      k.copyRowsAsync(dst, e.index(0), kKeyBlock, rows.t0, rows.valid, io.seqLen,
                      src, keyIndices);
    k.commitCopies();
  } else {
    for (auto [hi, lo, src] :
         {std::tuple{qTile, qLo, io.q}, std::tuple{kTile, kLo, io.k}}) {
      Value from = src;
      k.fillTile(hi, kChunk, kKeyBlock, rows.valid, [&](Value r, Value c) {
        return k.load8(from, {bIdx, e.addIndex(rows.t0, r), h, e.addIndex(key0, c)});
      }, lo);
    }
  }
  stageRowScalars(k, rows, bIdx, hv, io.gates, p.gates ? gTile : Value(), io.beta,
                  p.wy ? cTile : Value(), p.rank1Scale, io.kRNorm, h);
}

void KeyBlockGradKernel::slab(Value s0, Acc &dP, Acc &a, Acc &bAcc, Value &dot) {
  // Every warp is past the previous slab's products.
  k.barrier();
  k.copyRowsAsync(dOTile, e.index(0), kSlab, rows.t0, rows.valid, io.seqLen,
                  io.gradOutput, [&](Value t, Value c) -> SmallVector<Value> {
                    return {bIdx, t, hv, e.addIndex(s0, c)};
                  });
  // S's and H's rows of the block's keys (all K rows are valid).
  auto stateRow = [&](Value r, Value c) -> SmallVector<Value> {
    return {bIdx, n, hv, r, e.addIndex(s0, c)};
  };
  if (p.narrowStates)
    k.copyRowsAsync(sHi, e.index(0), kSlab, key0, e.index(kKeyBlock), e.index(p.K),
                    io.states, stateRow, kKeyBlock);
  Value copies = k.commitCopies();
  k.fillTile(dHi, kChunk, kSlab, rows.valid, [&](Value r, Value c) {
    return k.load8(io.newValues, {bIdx, e.addIndex(rows.t0, r), hv, e.addIndex(s0, c)});
  }, dLo);
  // Each thread's 8-element pieces of H's rows and (f32) S's, split
  // through registers; both elements of a place by the same thread, so
  // that <S, H> comes from their f32 values. With S narrow, <S, H> comes
  // from S as landed (exact) and H's hi + lo once every piece is staged.
  constexpr int64_t kWidth = 8;
  int64_t perRow = kSlab / kWidth;
  Type f64 = b.getF64Type();
  auto narrowx8 = VectorType::get({kWidth}, p.mmaElem);
  auto f32x8 = VectorType::get({kWidth}, b.getF32Type());
  auto pieces = [&](bool addDot,
                    function_ref<std::pair<Value, Value>(Value, Value)> piece) {
    SmallVector<Value> init;
    if (addDot)
      init.push_back(dot);
    auto body = [&](Value it, ValueRange acc) -> SmallVector<Value> {
      Value idx = e.addIndex(e.mulIndex(it, e.index(p.threads())), k.tid);
      Value r = arith::DivUIOp::create(b, idx, e.index(perRow));
      Value c = e.mulIndex(arith::RemUIOp::create(b, idx, e.index(perRow)),
                           e.index(kWidth));
      auto [sx, hx] = piece(r, c);
      if (acc.empty())
        return {};
      Value prod = arith::ExtFOp::create(b, VectorType::get({kWidth}, f64),
                                         arith::MulFOp::create(b, sx, hx).getResult());
      return {arith::AddFOp::create(
          b, acc[0], vector::ReductionOp::create(b, vector::CombiningKind::ADD, prod))};
    };
    int64_t steps = kKeyBlock * perRow / p.threads();
    ValueRange out = e.forEachReduce(e.index(steps), init, body);
    if (addDot)
      dot = out[0];
  };
  auto splitStore = [&](Value x, Value hiBuf, Value loBuf, Value r, Value c) {
    auto [xHi, xLo] = k.split(x, narrowx8);
    vector::StoreOp::create(b, xHi, hiBuf, ValueRange{r, c}, false, llvm::Align(16));
    vector::StoreOp::create(b, xLo, loBuf, ValueRange{r, c}, false, llvm::Align(16));
  };
  pieces(dot && !p.narrowStates, [&](Value r, Value c) -> std::pair<Value, Value> {
    SmallVector<Value> at = stateRow(e.addIndex(key0, r), c);
    Value sx = p.narrowStates ? Value() : k.load8(io.states, at);
    Value hx = k.load8(io.gradStates, at);
    if (sx)
      splitStore(sx, sHi, sLo, r, c);
    splitStore(hx, hHi, hLo, r, c);
    return {sx, hx};
  });
  k.waitCopies(copies, 0);
  k.barrier();
  if (p.narrowStates && dot)
    pieces(true, [&](Value r, Value c) -> std::pair<Value, Value> {
      auto at = [&](Value buf) -> Value {
        Value x = vector::LoadOp::create(b, narrowx8, buf, ValueRange{r, c}, false,
                                         llvm::Align(16));
        return arith::ExtFOp::create(b, f32x8, x);
      };
      return {at(sHi), arith::AddFOp::create(b, at(hHi), at(hLo))};
    });
  Operand dOp{TileView{dOTile}, std::nullopt};
  Operand d = Operand::of(dHi, dLo);
  gemm(dP, dOp, d, kSlab);
  gemm(a, dOp, Operand::of(sHi, sLo), kSlab);
  gemm(bAcc, d, Operand::of(hHi, hLo), kSlab);
}

void KeyBlockGradKernel::stagePairs(Acc &dP) {
  Type f32 = b.getF32Type();
  Acc scores;
  if (p.gates) {
    scores = k.zeroAcc(tiles());
    gemm(scores, Operand::of(qTile, qLo), Operand::of(kTile, kLo), kKeyBlock);
  }
  Acc lo;
  for (int64_t nt = 0; nt < tiles(); ++nt) {
    SmallVector<Value> tileLo;
    for (int64_t i = 0; i < 4; ++i) {
      Value row = k.accRow(m0, i), col = accColumn(nt, i);
      Value keep = arith::AndIOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::ule, col, row),
          k.ult(row, rows.valid));
      Value x = e.mul(dP[nt][i], e.f32(p.scale));
      if (!rowScales.empty())
        x = e.mul(x, rowScales[i / 2]);
      // Selected, not multiplied: exp(G_i - G_j) with i past valid (G
      // staged 0) may overflow.
      if (p.gates)
        x = e.mul(x, k.select(keep, k.exp(e.sub(gateAt(row), gateAt(col))),
                              e.f32(0.0f)));
      x = k.select(keep, x, e.f32(0.0f));
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
  for (int64_t nt = 0; nt < tiles(); nt += 2) {
    Value col = tiling->plus(colBase, e.index(8 * nt));
    k.stmatrix4(pHi, m0, col, dP[nt], dP[nt + 1], false);
    k.stmatrix4(pLo, m0, col, lo[nt], lo[nt + 1], false);
  }
}

// L = F * E split (KeyGradParts.h); F * P added to M by the first key
// block alone (M's other terms are each block's own keys').
void KeyBlockGradKernel::stageFactors() {
  Value firstBlock = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyBlock,
                                           e.index(0));
  stageFactorTiles(k, FactorTiles{io.factorPairs, io.keyPairs, bIdx, hv, rows,
                                  p.gates ? gTile : Value(), p.gates ? mTile : Value(),
                                  firstBlock, fHi, fLo});
}

void KeyBlockGradKernel::storeRows(ArrayRef<SmallVector<Value>> acc, Value dst) {
  storeKeyRows(k, acc, dst, rows, m0, bIdx, hv, tiling->plus(colBase, key0));
}

void KeyBlockGradKernel::storePartials(Value dot) {
  // The quad's column among the four of each half.
  Value column = tiling->plus(tiling->base(p.termParts()), k.quad);
  RowTermTiles tiles{rowTerms, shareTerms, dotTerms, mTile, p.termParts()};
  gatherRowTerms(k, tiles, m0, column, rowAcc, shareAcc, dot);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(
      scf::IfOp::create(b, k.ult(k.warp, e.index(1)), false).thenBlock());
  Value lastShare = lastRowShare(k, tiles, gLast);
  Value upperRow = e.addIndex(k.lane, e.index(32));
  auto zero64 = [&] {
    return arith::ConstantOp::create(b, b.getF64FloatAttr(0.0)).getResult();
  };
  Value last = e.subIndex(rows.valid, e.index(1));
  for (Value row : {k.lane, upperRow}) {
    Value g = memref::LoadOp::create(b, rowTerms, ValueRange{row, e.index(0)});
    Value isLast = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, row, last);
    g = arith::AddFOp::create(b, g, k.select(isLast, lastShare, zero64()));
    OpBuilder::InsertionGuard rowGuard(b);
    b.setInsertionPointToStart(
        scf::IfOp::create(b, k.ult(row, rows.valid), false).thenBlock());
    memref::StoreOp::create(b, g, partials,
                            ValueRange{bIdx, e.addIndex(rows.t0, row), hv, keyBlock});
  }
}

void KeyBlockGradKernel::emit() {
  Block *body = b.getInsertionBlock();
  Value x = body->getArgument(0);
  n = arith::DivUIOp::create(b, x, e.index(p.keyBlocks()));
  keyBlock = arith::RemUIOp::create(b, x, e.index(p.keyBlocks()));
  key0 = e.mulIndex(keyBlock, e.index(kKeyBlock));
  hv = body->getArgument(1);
  bIdx = body->getArgument(2);
  h = e.qkHead(hv, p.numVHeads, p.numQKHeads);
  tiling.emplace(k, p.halves());
  m0 = tiling->m0();
  colBase = tiling->base(kChunk);
  rows = chunkRows(e, n, io.seqLen);
  Type f32 = b.getF32Type(), f64 = b.getF64Type();
  dOTile = tile16(p.dOOff);
  dHi = tile16(p.dHiOff);
  dLo = tile16(p.dLoOff);
  sHi = tile16(p.sHiOff);
  hHi = tile16(p.hHiOff);
  hLo = tile16(p.hLoOff);
  if (!p.narrowStates)
    sLo = tile16(p.sLoOff);
  pHi = tile16(p.pHiOff);
  pLo = tile16(p.pLoOff);
  qTile = tile16(p.qOff);
  kTile = tile16(p.kOff);
  if (p.splitKeys) {
    qLo = tile16(p.qLoOff);
    kLo = tile16(p.kLoOff);
  }
  if (p.wy) {
    fHi = tile16(p.fHiOff);
    fLo = tile16(p.fLoOff);
    cTile = k.tile(p.cOff, kChunk, 1, f32);
  }
  bool gateGradient = p.gates && io.dgates;
  if (p.gates) {
    mTile = k.tile(p.mOff, kChunk, kChunk + 1, f32);
    gTile = k.tile(p.gOff, kChunk, 1, f32);
    rowTerms = k.tile(p.rowOff, kChunk, p.termParts(), f64);
    shareTerms = k.tile(p.shareOff, kChunk, p.termParts(), f64);
    dotTerms = k.tile(p.dotOff, p.threads(), 1, f64);
    for (int64_t half = 0; half < 2; ++half)
      rowAcc[half] = shareAcc[half] =
          arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
  }

  stageKeysAndGates();
  rowScales = outputRowScales(k, io.qRNorm, rows, bIdx, h, m0);
  // Phase 1: dP, A = dO S^T and B = D H^T over the slabs of V, their
  // accumulators (and <S, H>) carried through a run-time loop.
  int64_t tiles = this->tiles();
  Acc dP = k.zeroAcc(tiles), a = k.zeroAcc(tiles), bAcc = k.zeroAcc(tiles);
  Value dot = gateGradient ? arith::ConstantOp::create(b, b.getF64FloatAttr(0.0)).getResult()
                           : Value();
  auto flatten = [&] {
    SmallVector<Value> flat;
    for (Acc *acc : {&dP, &a, &bAcc})
      for (auto &t : *acc)
        flat.append(t.begin(), t.end());
    if (dot)
      flat.push_back(dot);
    return flat;
  };
  auto unflatten = [&](ValueRange flat) {
    size_t at = 0;
    for (Acc *acc : {&dP, &a, &bAcc})
      for (auto &t : *acc)
        for (Value &v : t)
          v = flat[at++];
    if (dot)
      dot = flat[at];
  };
  unflatten(e.forEachReduce(e.index(p.slabs()), flatten(),
                            [&](Value s, ValueRange in) -> SmallVector<Value> {
    unflatten(in);
    slab(e.mulIndex(s, e.index(kSlab)), dP, a, bAcc, dot);
    return flatten();
  }));
  // Every warp is past the slabs' tiles, which the pairs take over; the
  // keys (and gates) have landed.
  k.waitAllCopies();
  k.barrier();
  if (p.gates)
    gLast = gateAt(e.subIndex(rows.valid, e.index(1)));
  Value last = e.subIndex(rows.valid, e.index(1));
  // Y's entries first, so that their latency passes under the products.
  SmallVector<Value> y;
  if (p.wy)
    for (int64_t nt = 0; nt < tiles; ++nt)
      for (int64_t i = 0; i < 4; ++i)
        y.push_back(e.loadF32(
            io.yW, {bIdx, e.addIndex(rows.t0, e.minIndex(k.accRow(m0, i), last)), hv,
                    e.addIndex(key0, accColumn(nt, i))}));
  stagePairs(dP);
  // M and the pairs are whole (stageFactors adds to M's entries that other
  // warps stored).
  k.barrier();
  if (p.wy) {
    stageFactors();
    k.barrier();
  }

  auto keyAt = [&](Value hiBuf, Value loBuf, Value row, Value col) {
    return k.loadJoined(hiBuf, loBuf, {row, col});
  };
  Value rowGates[2];
  for (int64_t half = 0; half < 2; ++half)
    rowGates[half] = p.gates ? gateAt(k.accRow(m0, 2 * half)) : Value();

  // dq = scale exp(G_i) A + dP~ K.
  for (int64_t nt = 0; nt < tiles; ++nt)
    for (int64_t i = 0; i < 4; ++i) {
      Value factor = e.f32(p.scale);
      if (p.gates)
        factor = e.mul(factor, k.exp(rowGates[i / 2]));
      if (!rowScales.empty())
        factor = e.mul(factor, rowScales[i / 2]);
      a[nt][i] = e.mul(a[nt][i], factor);
      if (gateGradient)
        rowAcc[i / 2] = arith::AddFOp::create(
            b, rowAcc[i / 2],
            wide(e.mul(keyAt(qTile, qLo, k.accRow(m0, i), accColumn(nt, i)),
                       a[nt][i])));
    }
  gemm(a, Operand{TileView{pHi}, TileView{pLo}},
       Operand::of(kTile, kLo, /*transposed=*/true), kChunk);
  storeRows(a, io.dq);

  // dk = exp(G_C - G_i) B + dP~^T Q [+ c exp(G) Y + Fs K].
  for (int64_t nt = 0; nt < tiles; ++nt)
    for (int64_t i = 0; i < 4; ++i) {
      if (!p.gates)
        continue;
      bAcc[nt][i] = e.mul(bAcc[nt][i], k.exp(e.sub(gLast, rowGates[i / 2])));
      if (!gateGradient)
        continue;
      Value share = wide(
          e.mul(keyAt(kTile, kLo, k.accRow(m0, i), accColumn(nt, i)), bAcc[nt][i]));
      shareAcc[i / 2] = arith::AddFOp::create(b, shareAcc[i / 2], share);
      rowAcc[i / 2] = arith::SubFOp::create(b, rowAcc[i / 2], share);
    }
  gemm(bAcc, Operand{TileView{pHi, true}, TileView{pLo, true}},
       Operand::of(qTile, qLo, /*transposed=*/true), kChunk);
  if (p.wy) {
    for (bool transposed : {false, true})
      gemm(bAcc, Operand{TileView{fHi, transposed}, TileView{fLo, transposed}},
           Operand::of(kTile, kLo, /*transposed=*/true), kChunk);
    for (int64_t nt = 0; nt < tiles; ++nt)
      for (int64_t i = 0; i < 4; ++i) {
        Value row = k.accRow(m0, i);
        Value coeff = memref::LoadOp::create(b, cTile, ValueRange{row, e.index(0)});
        if (p.gates)
          coeff = e.mul(coeff, k.exp(rowGates[i / 2]));
        Value fromW = k.select(k.ult(row, rows.valid), e.mul(coeff, y[4 * nt + i]),
                               e.f32(0.0f));
        bAcc[nt][i] = e.add(bAcc[nt][i], fromW);
        if (gateGradient)
          rowAcc[i / 2] = arith::AddFOp::create(
              b, rowAcc[i / 2],
              wide(e.mul(fromW, keyAt(kTile, kLo, row, accColumn(nt, i)))));
      }
  }
  storeRows(bAcc, io.dk);
  if (gateGradient)
    storePartials(dot);
}

/// dgate_i = sum_{i' >= i, i' < valid} sum_blocks part_i' for one (chunk,
/// value head, sequence), a warp: rows l and l + 32 in lane l.
void emitGateGradientSum(ImplicitLocOpBuilder &b, Value partials, Value dgates,
                         Value seqLen, int64_t numVHeads, int64_t keyBlocks,
                         Value batch) {
  LoopEmitter e(b);
  Value numChunks = arith::CeilDivUIOp::create(b, seqLen, e.index(kChunk));
  emitLaunch(b, {numChunks, e.index(numVHeads), batch}, /*smemBytes=*/0,
             [&](KernelEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value n = body->getArgument(0), hv = body->getArgument(1),
          bIdx = body->getArgument(2);
    ChunkRows rows = chunkRows(e, n, seqLen);
    Value last = e.subIndex(rows.valid, e.index(1));
    auto rowSum = [&](Value row) {
      Value t = e.addIndex(rows.t0, e.minIndex(row, last));
      Value g = arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
      for (int64_t kb = 0; kb < keyBlocks; ++kb)
        g = arith::AddFOp::create(
            b, g, memref::LoadOp::create(b, partials,
                                         ValueRange{bIdx, t, hv, e.index(kb)}));
      return k.select(k.ult(row, rows.valid), g,
                      arith::ConstantOp::create(b, b.getF64FloatAttr(0.0)));
    };
    Value upperRow = e.addIndex(k.lane, e.index(32));
    Value upper = k.warpSuffixSum(rowSum(upperRow));
    Value lower = arith::AddFOp::create(b, k.warpSuffixSum(rowSum(k.lane)),
                                        k.shuffle(upper, 0, gpu::ShuffleMode::IDX));
    for (auto [row, sum] : {std::pair{k.lane, lower}, std::pair{upperRow, upper}}) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(row, rows.valid), false).thenBlock());
      memref::StoreOp::create(b, arith::TruncFOp::create(b, b.getF32Type(), sum),
                              dgates, ValueRange{bIdx, e.addIndex(rows.t0, row), hv});
    }
  }, /*threads=*/32);
}

} // namespace

std::string whyNoKeyBlockGradKernel(ChunkGradOp op, const GPUTargetInfo &target) {
  std::string why;
  return KeyBlockGradPlan::build(op, target, &why) ? "" : why;
}

std::string describeKeyBlockGradKernel(ChunkGradOp op, const GPUTargetInfo &target) {
  KeyBlockGradPlan p = *KeyBlockGradPlan::build(op, target);
  return describeChunkGradBlock(p.warps, p.sharedBytes) + ", " +
         std::to_string(p.keyBlocks()) + " a chunk";
}

void emitKeyBlockGradKernel(ImplicitLocOpBuilder &b, ChunkGradOp op,
                            const GPUTargetInfo &target,
                            const ChunkGradKeyInputs &io) {
  KeyBlockGradPlan p = *KeyBlockGradPlan::build(op, target);
  LoopEmitter e(b);
  Value partials;
  if (p.gates && io.dgates)
    partials = e.allocFor(
        MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic, p.numVHeads,
                         p.keyBlocks()},
                        b.getF64Type()),
        {io.batch, io.seqLen, e.index(p.numVHeads), e.index(p.keyBlocks())});
  Value numChunks = arith::CeilDivUIOp::create(b, io.seqLen, e.index(kChunk));
  emitLaunch(b, {e.mulIndex(numChunks, e.index(p.keyBlocks())), e.index(p.numVHeads),
                 io.batch},
             p.sharedBytes, p.mmaElem,
             [&](MmaEmitter &k) { KeyBlockGradKernel(p, io, partials, k).emit(); },
             p.threads());
  if (partials)
    emitGateGradientSum(b, partials, io.dgates, io.seqLen, p.numVHeads,
                        p.keyBlocks(), io.batch);
}

} // namespace mlir::linattn::kernel
