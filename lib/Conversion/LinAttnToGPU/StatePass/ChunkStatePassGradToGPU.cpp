//===- ChunkStatePassGradToGPU.cpp - The reverse chunk pass to a kernel ---===//
//
// linattn.chunk_state_pass_grad as the forward state pass's mirror image: a
// block per 32 value columns (16 where the op carries linattn.state_columns
// = 16, which linattn-narrow-state-blocks does not ask here: slower, NOTES
// w2) of one (sequence, value head) carries H^T = (dL/dS)^T in the warps'
// accumulator registers through a loop over the chunks from the last, each
// chunk's inputs staged by cp.async stages ahead (or, where two stages do
// not fit, K = 256 or per-key gates with split keys, copied at the step's
// start into one).
// Per chunk n, with G the in-chunk cumulative log gate and G_C its value at
// the chunk's last token (0 without gates):
//
//   a. grad_chunk_states[n] = H
//   b. A^T_ij = scale q_j . k_i exp(G_j - G_i) for i <= j (0 elsewhere),
//      the chunk's anti-causal scores, to shared memory (hi + lo parts)
//   c. dD^T = H^T Kd^T + dO^T A,  Kd = diag(exp(G_C - G)) K
//   d. dD leaves (f32)
//   e. H^T = exp(G_C) H^T + scale dO^T diag(exp(G)) Q - dD^T W
//
// With q_rnorm s (qk_l2norm factored) every q_j is s_j q_j: s_j joins the
// factors of A^T's column j and of dO's row j.
//
// With per-key gates (G [64][K], GLA and KDA) the exponentials are per
// key: A_ji = sum_r q_jr k_ir exp(G_jr - G_ir) comes a 16 x 16 block at a
// time from PerKeyScores.h (factored around each block's last row, the
// strong-gate diagonal blocks elementwise), Kd = K * exp(G_C - G) and
// Qg = Q * exp(G) replace the staged K and Q in place (rounded once, as
// the forward's per-key kernels round their decayed keys), and H's row r
// decays by exp(G_C[r]). With 16-bit keys the scores' share of dD,
// X = dO^T A, does not depend on H and comes from a parallel kernel ahead
// of the pass (OutputShareOfGradValues.h), staged with the chunk's inputs:
// the pass then forms no scores on its sequential path.
//
// so nothing but the inputs is read and nothing but the results written
// (the loop lowering stages the scores, Kd, Qg and the H-independent
// shares of dD and H through global scratch). Every product runs on the
// tensor cores; the f32 operands (H, dD, the scores, dO exp(G), and q and
// k where they come f32: qk_l2norm's normalised keys) enter split into hi
// + lo parts, the 16-bit inputs exactly.
//
// The kernel takes 16-bit dO and W (the WY form as the UT transform rounds
// it or splits it into hi and lo parts, negeig's; or no W), q and k of
// their type or f32, with gates per row, per key or none; f32 inputs keep
// the loop lowering.
//
//===----------------------------------------------------------------------===//

#include "KeyParts.h"
#include "OutputShareOfGradValues.h"
#include "StatePassPlan.h"

#include "../ChunkedToGPUPatterns.h"
#include "../Kernel/ChunkGeometry.h"
#include "../Kernel/Gates.h"
#include "../Kernel/MmaEmitter.h"
#include "../Kernel/PerKeyScores.h"
#include "../KernelSupport.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::linattn::kernel {
namespace {

/// The reverse pass's kernel, decided: its shapes and shared-memory layout.
struct ReversePassPlan {
  /// The plan for `op`, or nothing where the kernel does not take its
  /// forms (the op then keeps its loop lowering; `whyNot` gets the reason).
  static std::optional<ReversePassPlan> build(ChunkStatePassGradOp op,
                                              const GPUTargetInfo &target,
                                              std::string *whyNot = nullptr);

  Type mmaElem;
  int64_t numQKHeads = 0, numVHeads = 0, K = 0, V = 0;
  bool hasW = false, hasGates = false;
  /// W split into hi and lo parts ([B, T, HV, 2, K]): both staged, W a
  /// split operand of dD^T W.
  bool splitW = false;
  /// Gates per key: staged [64][K + 4] f32 rather than [64][1].
  bool perKeyGates = false;
  /// q and k f32: staged split (their lo parts beside them), through
  /// registers rather than cp.async.
  bool splitKeys = false;
  /// q_rnorm s (qk_l2norm factored): staged [64] f32 with the chunk's
  /// inputs, a factor of the scores' columns and of dO's rows.
  bool rowScales = false;
  int64_t keysPerWarp = 0, keyTiles = 0;
  static constexpr int64_t rowTiles = kChunk / 8;
  StateBlock block; ///< the block's columns and warps

  // Shared memory: `stages` stages of q, k (and their lo parts where
  // split), W ([64][K + pad] 16-bit; its lo part beside it where split),
  // the block's dO columns ([64][32 + pad]) and the row gates ([64] f32);
  // then the scores' hi and lo parts
  // ([64][64 + pad]); then the key parts' exchange, which with per-key
  // gates first holds the keys decayed toward their 16-row block's last
  // row for the scores (K', hi and lo where split: read only before dD's
  // products, barriers away from the exchange's first store).
  int64_t keyStride = 0, gradStride = 0, scoreStride = 0, gateStride = 0;
  int64_t qOffset = 0, kOffset = 0, qLoOffset = 0, kLoOffset = 0;
  int64_t wOffset = 0, wLoOffset = 0, dOffset = 0, gOffset = 0;
  /// Per-key gates with 16-bit keys: X = scale (Q K^T * M)^T dO, dD's
  /// share through the output, comes from a parallel kernel ahead of the
  /// pass (OutputShareOfGradValues.h), staged f32 [64][columns + 4] with the
  /// chunk's inputs; no scores, K' or score tiles in the pass.
  bool outputShareAhead = false;
  int64_t xStride = 0, xOffset = 0;
  int64_t rowScaleOffset = 0;
  int64_t stageBytes = 0, stages = 0;
  int64_t scoreOffset = 0, scoreBytes = 0;
  int64_t blockKeysOffset = 0, blockKeysLoOffset = 0, blockKeysBytes = 0;
  int64_t exchangeOffset = 0;
  int64_t sharedBytes = 0;

  /// The plan in one line (convert-linattn-chunked-to-gpu{explain}).
  std::string describe() const;
};

std::string ReversePassPlan::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << V / block.columns << " blocks of " << block.columns
     << " state columns a value head and sequence, " << block.warps
     << " warps (" << block.warps * 32 << " threads); " << stages
     << (stages == 1 ? " input stage" : " input stages");
  if (splitKeys)
    os << "; q and k f32, staged split";
  if (rowScales)
    os << "; q's reciprocal norms on dO's rows (qk_l2norm factored)";
  if (splitW)
    os << "; W split (hi + lo)";
  if (outputShareAhead)
    os << "; the output's share of dD from a kernel ahead";
  else
    os << "; the chunk's scores formed in the pass";
  os << "; " << sharedBytes << " bytes of shared memory";
  return text;
}

std::optional<ReversePassPlan>
ReversePassPlan::build(ChunkStatePassGradOp op, const GPUTargetInfo &target,
                       std::string *whyNot) {
  ReversePassPlan p;
  p.numQKHeads = dimOf(op.getQ(), 2);
  p.K = dimOf(op.getQ(), 3);
  p.numVHeads = dimOf(op.getGradOutput(), 2);
  p.V = dimOf(op.getGradOutput(), 3);
  std::optional<BackwardOperandForms> forms = backwardOperandForms(
      {op.getQ(), op.getK()}, {op.getGradOutput(), op.getW()}, op.getGates(),
      op.getChunkSize(), p.K, p.V, whyNot);
  if (!forms)
    return std::nullopt;
  std::string blockWhyNot;
  std::optional<StateBlock> block = StateBlock::of(op, p.V, blockWhyNot);
  if (block && block->columns == chunked_kernels::kWideStateColumns) {
    blockWhyNot = "the reverse pass takes 16 or 32 state columns";
    block = std::nullopt;
  }
  if (!block) {
    if (whyNot)
      *whyNot = blockWhyNot;
    return std::nullopt;
  }
  p.block = *block;
  p.mmaElem = forms->mmaElem;
  p.splitKeys = forms->splitKeys;
  p.hasW = bool(op.getW());
  p.splitW = forms->splitW;
  p.hasGates = bool(op.getGates());
  p.perKeyGates = forms->perKeyGates;
  p.outputShareAhead = whyNoOutputShareKernel(op, target).empty();
  p.rowScales = static_cast<bool>(op.getQRnorm());
  if (p.rowScales && p.perKeyGates && !p.outputShareAhead) {
    if (whyNot)
      *whyNot = "its per-key scores would be formed in the pass, which does "
                "not take q_rnorm";
    return std::nullopt;
  }
  p.keysPerWarp = p.K / kStateKeySplit;
  p.keyTiles = p.keysPerWarp / 8;

  p.keyStride = p.K + kPad;
  p.gradStride = p.block.columns + kPad;
  p.scoreStride = kChunk + kPad;
  p.gateStride = p.perKeyGates ? p.K + 4 : 1;
  int64_t keyBytes = kChunk * p.keyStride * 2;
  p.qOffset = 0;
  p.kOffset = keyBytes;
  p.wOffset = 2 * keyBytes;
  if (p.splitKeys) {
    p.qLoOffset = p.wOffset;
    p.kLoOffset = p.wOffset + keyBytes;
    p.wOffset += 2 * keyBytes;
  }
  p.wLoOffset = p.wOffset + keyBytes;
  p.dOffset = p.wOffset + (p.hasW ? keyBytes : 0) + (p.splitW ? keyBytes : 0);
  p.gOffset = p.dOffset + kChunk * p.gradStride * 2;
  p.stageBytes = p.gOffset + (p.hasGates ? kChunk * p.gateStride * 4 : 0);
  p.scoreBytes = 2 * kChunk * p.scoreStride * 2;
  if (p.perKeyGates)
    p.blockKeysBytes = keyBytes * (p.splitKeys ? 2 : 1);
  if (p.outputShareAhead) {
    p.xStride = p.block.columns + 4;
    p.xOffset = p.stageBytes;
    p.stageBytes += kChunk * p.xStride * 4;
    p.scoreBytes = p.blockKeysBytes = 0;
  }
  if (p.rowScales) {
    p.rowScaleOffset = p.stageBytes;
    p.stageBytes += kChunk * 4;
  }
  int64_t exchangeBytes = keyPartsExchangeBytes(p.block.warps, rowTiles);
  int64_t limit = target.maxSharedBytesPerBlock();
  // Down to one stage (no copies in flight across steps): slower than two,
  // but it lets K = 256, and per-key gates with split keys, run on the
  // tensor cores instead of the loop lowering (bench/NOTES.md r4).
  for (p.stages = kStateStages; p.stages >= 1; --p.stages) {
    p.scoreOffset = p.stages * p.stageBytes;
    p.exchangeOffset = p.scoreOffset + p.scoreBytes;
    p.blockKeysOffset = p.exchangeOffset;
    p.blockKeysLoOffset = p.blockKeysOffset + keyBytes;
    p.sharedBytes =
        p.exchangeOffset + std::max(exchangeBytes, p.blockKeysBytes);
    if (p.sharedBytes <= limit)
      return p;
  }
  if (whyNot)
    *whyNot = sharedBytesReason(p.sharedBytes, target);
  return std::nullopt;
}

/// The reverse pass's buffers and run-time sizes.
struct ReversePassOperands {
  Value q, k, w, gates, gradOutput, gradFinalState;  ///< inputs
  Value qRNorm; ///< q_rnorm, or null
  Value outputShare; ///< X, where the plan has it computed ahead
  Value gradValues, gradStates, gradInitialState;    ///< results (f32)
  Value seqLen, numChunks;
};

/// A chunk's staged inputs.
struct ReverseStage {
  Value q, k, w, dO, g;
  Value s; ///< q_rnorm's rows, where the op has it
  Value x; ///< X's block columns, where computed ahead
  Value qLo, kLo; ///< q's and k's lo parts where split
  Value wLo;      ///< W's lo part where split
};

class ReversePassKernel {
public:
  ReversePassKernel(const ReversePassPlan &plan, const ReversePassOperands &io,
                    float scale, MmaEmitter &k)
      : p(plan), io(io), scale(scale), k(k), b(k.b), e(k.e) {}

  void emit();

private:
  void placeBlock();
  /// The chunk of step j: NC - 1 - j, or NC (past the end, no rows) for a
  /// step past the last.
  Value chunkOfStep(Value j);
  ReverseStage stageAt(Value j);
  Value prefetch(Value j);
  /// H^T's element i of accumulator tile kt: (key, value column).
  std::pair<Value, Value> stateIndex(int64_t kt, int64_t i);
  SmallVector<Value> loadState(Value src);
  void storeState(ValueRange flat, Value dst, SmallVector<Value> prefix);
  SmallVector<Value> step(Value j, ValueRange carriedIn);
  /// b. The scores A^T (rows i of this warp, every column j) into shared
  /// memory as hi and lo parts.
  void stageScores(const ReverseStage &st, ChunkRows rows);
  void stageScoreTile(const ReverseStage &st, ChunkRows rows, Value m0);
  /// b. with per-key gates: K' to shared memory, then the scores of the
  /// warp's query rows, stored transposed as A^T's columns.
  void stagePerKeyScores(const ReverseStage &st, ChunkRows rows);
  void stagePerKeyScoreColumns(const ReverseStage &st, ChunkRows rows, Value m0);
  /// The staged score tiles (hi, lo).
  std::pair<Value, Value> scoreTiles();
  /// Per-key gates: K and Q become Kd and Qg in place.
  void decayKeysAndQueries(const ReverseStage &st, ChunkRows rows);
  /// c. The warp's partial of dD^T: H^T Kd^T over its keys, dO^T A over its
  /// half of the chunk's tokens.
  SmallVector<SmallVector<Value>> gradValuesPartial(const ReverseStage &st,
                                                    ValueRange flat, Value gLast);
  void writeGradValues(ArrayRef<SmallVector<Value>> d, ChunkRows rows);
  /// e. The next H^T tiles.
  SmallVector<Value> updateState(const ReverseStage &st, ValueRange flat,
                                 ArrayRef<SmallVector<Value>> d, Value gLast,
                                 ChunkRows rows);
  Value rowGate(const ReverseStage &st, Value t) {
    return memref::LoadOp::create(b, st.g, ValueRange{t, e.index(0)});
  }
  /// `factor` times s_t where the op has q_rnorm.
  Value timesRowScale(const ReverseStage &st, Value factor, Value t) {
    if (!st.s)
      return factor;
    return e.mul(factor, memref::LoadOp::create(b, st.s, ValueRange{t, e.index(0)}));
  }

  const ReversePassPlan &p;
  const ReversePassOperands &io;
  float scale;
  MmaEmitter &k;
  ImplicitLocOpBuilder &b;
  LoopEmitter &e;

  Value hv, bIdx, h, columnGroup, keyPart, vLocal, vGlobal, key0, v0;
  Value firstGroup;
};

void ReversePassKernel::placeBlock() {
  Block *body = b.getInsertionBlock();
  Value vTile = body->getArgument(0);
  hv = body->getArgument(1);
  bIdx = body->getArgument(2);
  h = e.qkHead(hv, p.numVHeads, p.numQKHeads);
  columnGroup = arith::DivUIOp::create(b, k.warp, e.index(kStateKeySplit));
  keyPart = arith::RemUIOp::create(b, k.warp, e.index(kStateKeySplit));
  vLocal = e.mulIndex(columnGroup, e.index(16));
  v0 = e.mulIndex(vTile, e.index(p.block.columns));
  vGlobal = e.addIndex(v0, vLocal);
  key0 = e.mulIndex(keyPart, e.index(p.keysPerWarp));
}

Value ReversePassKernel::chunkOfStep(Value j) {
  Value fromLast =
      e.subIndex(e.subIndex(io.numChunks, e.index(1)), e.minIndex(j, io.numChunks));
  return k.select(k.ult(j, io.numChunks), fromLast, io.numChunks);
}

ReverseStage ReversePassKernel::stageAt(Value j) {
  Value slot = arith::RemUIOp::create(b, j, e.index(p.stages));
  Value base = e.mulIndex(slot, e.index(p.stageBytes));
  auto at = [&](int64_t offset) { return e.addIndex(base, e.index(offset)); };
  ReverseStage st;
  st.q = k.tile(at(p.qOffset), kChunk, p.keyStride, p.mmaElem);
  st.k = k.tile(at(p.kOffset), kChunk, p.keyStride, p.mmaElem);
  if (p.splitKeys) {
    st.qLo = k.tile(at(p.qLoOffset), kChunk, p.keyStride, p.mmaElem);
    st.kLo = k.tile(at(p.kLoOffset), kChunk, p.keyStride, p.mmaElem);
  }
  if (p.hasW)
    st.w = k.tile(at(p.wOffset), kChunk, p.keyStride, p.mmaElem);
  if (p.splitW)
    st.wLo = k.tile(at(p.wLoOffset), kChunk, p.keyStride, p.mmaElem);
  st.dO = k.tile(at(p.dOffset), kChunk, p.gradStride, p.mmaElem);
  if (p.hasGates) // [64][1] (one 4-byte copy per row) or [64][K + 4]
    st.g = k.tile(at(p.gOffset), kChunk, p.gateStride, b.getF32Type());
  if (p.outputShareAhead)
    st.x = k.tile(at(p.xOffset), kChunk, p.xStride, b.getF32Type());
  if (p.rowScales)
    st.s = k.tile(at(p.rowScaleOffset), kChunk, 1, b.getF32Type());
  return st;
}

Value ReversePassKernel::prefetch(Value j) {
  ChunkRows rows = chunkRows(e, chunkOfStep(j), io.seqLen);
  Value t0 = rows.t0, valid = rows.valid;
  ReverseStage st = stageAt(j);
  Value zero = e.index(0);
  auto keyRows = [&](Value dst, Value src, Value head) {
    k.copyTokenRowsAsync(dst, p.K, rows, io.seqLen, src, bIdx, head,
                         /*narrowRows=*/true);
  };
  if (!p.splitKeys) {
    keyRows(st.q, io.q, h);
    keyRows(st.k, io.k, h);
  } else {
    // f32 q and k split through registers (cp.async copies as it reads),
    // for a chunk with rows: a step past the last has none to read.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(
        scf::IfOp::create(b, k.ult(zero, valid), false).thenBlock());
    for (auto [hi, lo, src] : {std::tuple{st.q, st.qLo, io.q},
                               std::tuple{st.k, st.kLo, io.k}}) {
      Value from = src;
      k.fillTile(hi, kChunk, p.K, valid, [&](Value r, Value c) {
        return k.load8(from, {bIdx, e.addIndex(t0, r), h, c});
      }, lo);
    }
  }
  if (p.splitW)
    k.copyTokenRowPartsAsync(st.w, st.wLo, p.K, rows, io.seqLen, io.w, bIdx, hv,
                             /*narrowRows=*/true);
  else if (p.hasW)
    keyRows(st.w, io.w, hv);
  k.copyRowsAsync(st.dO, zero, p.block.columns, t0, valid, io.seqLen,
                  io.gradOutput, [&](Value t, Value c) -> SmallVector<Value> {
    return {bIdx, t, hv, e.addIndex(v0, c)};
  }, kChunk, /*narrowRows=*/true);
  if (p.outputShareAhead)
    k.copyRowsAsync(st.x, zero, p.block.columns, t0, valid, io.seqLen,
                    io.outputShare, [&](Value t, Value c) -> SmallVector<Value> {
      return {bIdx, t, hv, e.addIndex(v0, c)};
    }, kChunk, /*narrowRows=*/true);
  if (p.perKeyGates)
    k.copyRowsAsync(st.g, zero, p.K, t0, valid, io.seqLen, io.gates,
                    [&](Value t, Value c) -> SmallVector<Value> {
      return {bIdx, t, hv, c};
    }, kChunk, /*narrowRows=*/true);
  else if (p.hasGates)
    k.copyRowsAsync(st.g, zero, 1, t0, valid, io.seqLen, io.gates,
                    [&](Value t, Value) -> SmallVector<Value> {
      return {bIdx, t, hv};
    }, kChunk, /*narrowRows=*/true);
  if (p.rowScales)
    k.copyRowsAsync(st.s, zero, 1, t0, valid, io.seqLen, io.qRNorm,
                    [&](Value t, Value) -> SmallVector<Value> {
      return {bIdx, t, h};
    }, kChunk, /*narrowRows=*/true);
  return k.commitCopies();
}

// H^T of the warp's columns and keys is carried as keyTiles accumulator
// tiles, as the forward pass carries S^T: element i of tile kt is
// H[key0 + accCol(8 kt, i)][vGlobal + accRow(0, i)].
std::pair<Value, Value> ReversePassKernel::stateIndex(int64_t kt, int64_t i) {
  return {e.addIndex(key0, k.accCol(8 * kt, i)),
          e.addIndex(vGlobal, k.accRow(e.index(0), i))};
}

SmallVector<Value> ReversePassKernel::loadState(Value src) {
  SmallVector<Value> flat;
  for (int64_t kt = 0; kt < p.keyTiles; ++kt)
    for (int64_t i = 0; i < 4; ++i) {
      auto [key, v] = stateIndex(kt, i);
      flat.push_back(e.loadF32(src, {bIdx, hv, key, v}));
    }
  return flat;
}

void ReversePassKernel::storeState(ValueRange flat, Value dst,
                                   SmallVector<Value> prefix) {
  for (int64_t kt = 0; kt < p.keyTiles; ++kt)
    for (int64_t i = 0; i < 4; ++i) {
      auto [key, v] = stateIndex(kt, i);
      SmallVector<Value> idx = prefix;
      idx.append({key, v});
      e.storeFromF32(flat[4 * kt + i], dst, idx);
    }
}

// The 16-row tiles of A^T = K Q^T over all keys, tile m by warp m % warps
// (four warps: one each; the narrow block's two: two each): keeps i <= j <
// valid, scales by scale exp(G_j - G_i) (<= 1: G falls along the chunk),
// and stores the result split: hi = round(x), lo = round(x - hi), so that
// dO^T A keeps what a rounded score would lose.
void ReversePassKernel::stageScores(const ReverseStage &st, ChunkRows rows) {
  int64_t warps = p.block.warps;
  assert((kChunk / 16) % warps == 0 && "the score tiles split among the warps");
  for (int64_t rep = 0; rep < kChunk / 16 / warps; ++rep)
    stageScoreTile(st, rows,
                   e.mulIndex(e.addIndex(k.warp, e.index(rep * warps)),
                              e.index(16)));
}

// Rows [m0, m0 + 16) of the staged scores.
void ReversePassKernel::stageScoreTile(const ReverseStage &st, ChunkRows rows,
                                       Value m0) {
  SmallVector<SmallVector<Value>> acc = k.zeroAcc(kChunk / 8);
  k.gemm(acc, Operand::of(st.k, st.kLo), m0, Operand::of(st.q, st.qLo), p.K);
  Value scaleF = e.f32(scale);
  SmallVector<Value> rowGates;
  for (int64_t half : {0, 2})
    rowGates.push_back(p.hasGates ? rowGate(st, k.accRow(m0, half)) : Value());
  Type f32 = b.getF32Type();
  SmallVector<SmallVector<Value>> lo;
  for (int64_t nt = 0; nt < kChunk / 8; ++nt) {
    SmallVector<Value> colGates;
    for (int64_t odd = 0; odd < 2; ++odd)
      colGates.push_back(p.hasGates ? rowGate(st, k.accCol(8 * nt, odd))
                                    : Value());
    SmallVector<Value> tileLo;
    for (int64_t i = 0; i < 4; ++i) {
      Value row = k.accRow(m0, i), col = k.accCol(8 * nt, i);
      Value keep = arith::AndIOp::create(
          b, arith::CmpIOp::create(b, arith::CmpIPredicate::ule, row, col),
          k.ult(col, rows.valid));
      Value factor = scaleF;
      if (p.hasGates)
        factor = e.mul(factor, k.exp(e.sub(colGates[i & 1], rowGates[i / 2])));
      factor = timesRowScale(st, factor, col);
      Value x = k.select(keep, e.mul(acc[nt][i], factor), e.f32(0.0f));
      acc[nt][i] = x;
      Value hi = arith::ExtFOp::create(
          b, f32, arith::TruncFOp::create(b, p.mmaElem, x).getResult());
      tileLo.push_back(e.sub(x, hi));
    }
    lo.push_back(tileLo);
  }
  auto [hiTile, loTile] = scoreTiles();
  for (int64_t nt = 0; nt < kChunk / 8; nt += 2) {
    k.stmatrix4(hiTile, m0, e.index(8 * nt), acc[nt], acc[nt + 1],
                /*transposed=*/false);
    k.stmatrix4(loTile, m0, e.index(8 * nt), lo[nt], lo[nt + 1],
                /*transposed=*/false);
  }
}

std::pair<Value, Value> ReversePassKernel::scoreTiles() {
  return {k.tile(p.scoreOffset, kChunk, p.scoreStride, p.mmaElem),
          k.tile(p.scoreOffset + p.scoreBytes / 2, kChunk, p.scoreStride,
                 p.mmaElem)};
}

// K' = K * exp(G_L - G), L the last valid row of the key's 16-row block
// (what perKeyBlockScores factors around), then the scores: P's row block
// m by warp m % warps, as stageScores splits A^T's.
void ReversePassKernel::stagePerKeyScores(const ReverseStage &st,
                                          ChunkRows rows) {
  Value blockKeys = k.tile(p.blockKeysOffset, kChunk, p.keyStride, p.mmaElem);
  Value blockKeysLo =
      p.splitKeys ? k.tile(p.blockKeysLoOffset, kChunk, p.keyStride, p.mmaElem)
                  : Value();
  decayRows(k, st.k, blockKeys, st.g, rows.valid, [&](Value r) {
    Value row0 =
        e.mulIndex(arith::DivUIOp::create(b, r, e.index(16)), e.index(16));
    return blockLastRow(e, row0, rows.valid);
  }, p.K, st.kLo, blockKeysLo);
  k.barrier();
  int64_t warps = p.block.warps;
  for (int64_t rep = 0; rep < kChunk / 16 / warps; ++rep)
    stagePerKeyScoreColumns(
        st, rows,
        e.mulIndex(e.addIndex(k.warp, e.index(rep * warps)), e.index(16)));
}

// P[j][i] = sum_r q_jr k_ir exp(G_jr - G_ir) for the query rows j in [m0,
// m0 + 16) against every key block [i0, i0 + 16) (zero for i0 > m0), kept
// for i <= j < valid, scaled and stored transposed, hi and lo: A^T[i][j]
// = scale P[j][i]. The loop body is one block's code (the forward's
// per-key output kernel loops for the instruction cache's sake too).
void ReversePassKernel::stagePerKeyScoreColumns(const ReverseStage &st,
                                                ChunkRows rows, Value m0) {
  Operand q = Operand::of(st.q, st.qLo), keys = Operand::of(st.k, st.kLo);
  Operand blockKeys = Operand::of(
      k.tile(p.blockKeysOffset, kChunk, p.keyStride, p.mmaElem),
      p.splitKeys ? k.tile(p.blockKeysLoOffset, kChunk, p.keyStride, p.mmaElem)
                  : Value());
  // Named values, not a structured binding: the loop body's lambda takes
  // them (which C++17 does not allow of a binding).
  Value hiTile, loTile;
  std::tie(hiTile, loTile) = scoreTiles();
  forEachCausalScoreBlock(k, q, keys, blockKeys, st.g, m0, rows.valid, scale,
                          p.K, [&](Value i0, ArrayRef<Value> hi,
                                   ArrayRef<Value> lo) {
    k.stmatrix4(hiTile, i0, m0, hi.take_front(4), hi.drop_front(4),
                /*transposed=*/true);
    k.stmatrix4(loTile, i0, m0, lo.take_front(4), lo.drop_front(4),
                /*transposed=*/true);
  });
}

// Kd = K * exp(G_C - G) (G_C the last valid row's) and Qg = Q * exp(G),
// each factor <= 1, in place of the staged K and Q (their lo parts too
// where split): what dD's and the update's products take.
void ReversePassKernel::decayKeysAndQueries(const ReverseStage &st,
                                            ChunkRows rows) {
  Value last = e.subIndex(rows.valid, e.index(1));
  decayRows(k, st.k, st.k, st.g, rows.valid, [&](Value) { return last; }, p.K,
            st.kLo, st.kLo);
  decayRows(k, st.q, st.q, st.g, rows.valid, nullptr, p.K, st.qLo, st.qLo);
}

// The warp's dD^T tiles (m = its 16 value columns, n = the chunk's 64
// tokens in 8 tiles): H^T Kd^T over its keys (A = H^T split from the
// registers, B^T = K's staged rows), decayed per token by exp(G_C - G_i);
// plus dO^T A over tokens j of its key part's half of the chunk (A = dO^T
// by ldmatrix .trans, B^T = the staged A^T, hi and lo).
SmallVector<SmallVector<Value>>
ReversePassKernel::gradValuesPartial(const ReverseStage &st, ValueRange flat,
                                     Value gLast) {
  SmallVector<SmallVector<Value>> d = k.zeroAcc(ReversePassPlan::rowTiles);
  for (int64_t ks = 0; ks < p.keysPerWarp / 16; ++ks) {
    SmallVector<Value> tile0(flat.slice(8 * ks, 4));
    SmallVector<Value> tile1(flat.slice(8 * ks + 4, 4));
    auto [aHi, aLo] = k.fragmentAFromAcc(tile0, tile1, /*negate=*/false);
    Value k0 = e.addIndex(key0, e.index(16 * ks));
    for (int64_t rt = 0; rt < ReversePassPlan::rowTiles; rt += 2) {
      SmallVector<Value> bFrag = k.fragB2({st.k}, 8 * rt, k0), bLo;
      if (st.kLo)
        bLo = k.fragB2({st.kLo}, 8 * rt, k0);
      for (int64_t j = 0; j < 2; ++j)
        d[rt + j] = k.mmaSplit(aHi, aLo, ArrayRef(bFrag).slice(2 * j, 2),
                               st.kLo ? ArrayRef(bLo).slice(2 * j, 2)
                                      : ArrayRef<Value>(),
                               d[rt + j]);
    }
  }
  if (gLast)
    for (int64_t rt = 0; rt < ReversePassPlan::rowTiles; ++rt)
      for (int64_t odd = 0; odd < 2; ++odd) {
        Value decay = k.exp(e.sub(gLast, rowGate(st, k.accCol(8 * rt, odd))));
        for (int64_t i : {odd, odd + 2})
          d[rt][i] = e.mul(d[rt][i], decay);
      }
  if (p.outputShareAhead) {
    // + X^T, once per column group (key part 0's partial).
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyPart,
                                        e.index(0));
    for (int64_t rt = 0; rt < ReversePassPlan::rowTiles; ++rt)
      for (int64_t i = 0; i < 4; ++i) {
        Value t = k.accCol(8 * rt, i);
        Value c = e.addIndex(vLocal, k.accRow(e.index(0), i));
        Value xv = memref::LoadOp::create(b, st.x, ValueRange{t, c});
        d[rt][i] = k.select(first, e.add(d[rt][i], xv), d[rt][i]);
      }
    return d;
  }
  auto [hiTile, loTile] = scoreTiles();
  // Key part `part` takes the tokens of k-steps [part * stepsPerPart, +
  // stepsPerPart).
  int64_t stepsPerPart = kChunk / 16 / kStateKeySplit;
  for (int64_t s = 0; s < stepsPerPart; ++s) {
    Value j0 = e.mulIndex(
        e.addIndex(e.mulIndex(keyPart, e.index(stepsPerPart)), e.index(s)),
        e.index(16));
    SmallVector<Value> a;
    for (Value pair : k.ldmatrix4Pairs({st.dO, /*transposed=*/true}, vLocal, j0,
                                       /*swap=*/false))
      a.push_back(k.mmaRegister(pair));
    for (int64_t rt = 0; rt < ReversePassPlan::rowTiles; rt += 2) {
      SmallVector<Value> bHi = k.fragB2({hiTile}, 8 * rt, j0);
      SmallVector<Value> bLo = k.fragB2({loTile}, 8 * rt, j0);
      for (int64_t j = 0; j < 2; ++j)
        d[rt + j] = k.mmaSplit(a, /*aLo=*/{}, ArrayRef(bHi).slice(2 * j, 2),
                               ArrayRef(bLo).slice(2 * j, 2), d[rt + j]);
    }
  }
  return d;
}

// dD for rows below `valid`, f32; the warps of a column group take turns
// by row tile.
void ReversePassKernel::writeGradValues(ArrayRef<SmallVector<Value>> d,
                                        ChunkRows rows) {
  for (int64_t rt = 0; rt < ReversePassPlan::rowTiles; ++rt)
    for (int64_t odd = 0; odd < 2; ++odd) {
      Value t = k.accCol(8 * rt, odd);
      Value store = arith::AndIOp::create(
          b, k.ult(t, rows.valid),
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyPart,
                                e.index(rt % kStateKeySplit)));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(scf::IfOp::create(b, store, false).thenBlock());
      for (int64_t i : {odd, odd + 2})
        e.storeFromF32(d[rt][i], io.gradValues,
                       {bIdx, e.addIndex(rows.t0, t), hv,
                        e.addIndex(vGlobal, k.accRow(e.index(0), i))});
    }
}

// H^T = exp(G_C) H^T + dO'^T Q - dD^T W with dO' = scale diag(exp(G)) dO:
// A = dO'^T from the staged dO by ldmatrix .trans, decayed per row pair in
// f32 and split; A = -dD^T split from the registers; B = Q and W from their
// staged rows (.trans). Rows past T are staged zeros in dO and W.
SmallVector<Value> ReversePassKernel::updateState(const ReverseStage &st,
                                                  ValueRange flat,
                                                  ArrayRef<SmallVector<Value>> d,
                                                  Value gLast, ChunkRows rows) {
  SmallVector<SmallVector<Value>> acc;
  Value stateDecay = gLast ? k.exp(gLast) : Value();
  Value last = e.subIndex(rows.valid, e.index(1));
  for (int64_t kt = 0; kt < p.keyTiles; ++kt) {
    SmallVector<Value> tile(flat.slice(4 * kt, 4));
    for (int64_t i = 0; i < 4; ++i) {
      if (stateDecay)
        tile[i] = e.mul(tile[i], stateDecay);
      if (!p.perKeyGates)
        continue;
      // Element i of tile kt is H[key][column]: H's row `key` decays by
      // exp(G_C[key]).
      Value key = stateIndex(kt, i).first;
      tile[i] = e.mul(tile[i], k.exp(memref::LoadOp::create(
                                   b, st.g, ValueRange{last, key})));
    }
    acc.push_back(tile);
  }
  auto f32x2 = VectorType::get({2}, b.getF32Type());
  Value scaleF = e.f32(scale);
  for (int64_t ks = 0; ks < kChunk / 16; ++ks) {
    // Register j holds rows 16 ks + 8 (j / 2) + 2 quad + {0, 1} of column
    // vLocal + group + 8 (j % 2) of dO.
    SmallVector<Value> pairs = k.ldmatrix4Pairs({st.dO, /*transposed=*/true},
                                                vLocal, e.index(16 * ks),
                                                /*swap=*/false);
    SmallVector<Value> aHi, aLo;
    Value factors;
    for (int64_t j = 0; j < 4; ++j) {
      if (j % 2 == 0) {
        Value t = e.addIndex(e.index(16 * ks + 8 * (j / 2)),
                             e.mulIndex(k.quad, e.index(2)));
        SmallVector<Value> f;
        for (Value r : {t, e.addIndex(t, e.index(1))})
          f.push_back(timesRowScale(st,
                                    p.hasGates && !p.perKeyGates
                                        ? e.mul(scaleF, k.exp(rowGate(st, r)))
                                        : scaleF,
                                    r));
        factors = vector::FromElementsOp::create(b, f32x2, f);
      }
      Value wide = arith::MulFOp::create(
          b, arith::ExtFOp::create(b, f32x2, pairs[j]), factors);
      auto [hi, lo] = k.splitRegister(wide);
      aHi.push_back(hi);
      aLo.push_back(lo);
    }
    for (int64_t kt = 0; kt < p.keyTiles; kt += 2) {
      SmallVector<Value> bFrag =
          k.fragB2({st.q, /*transposed=*/true}, key0, 8 * kt, 16 * ks), bLo;
      if (st.qLo)
        bLo = k.fragB2({st.qLo, /*transposed=*/true}, key0, 8 * kt, 16 * ks);
      for (int64_t j = 0; j < 2; ++j)
        acc[kt + j] = k.mmaSplit(aHi, aLo, ArrayRef(bFrag).slice(2 * j, 2),
                                 st.qLo ? ArrayRef(bLo).slice(2 * j, 2)
                                        : ArrayRef<Value>(),
                                 acc[kt + j]);
    }
    if (!p.hasW)
      continue;
    auto [dHi, dLo] = k.fragmentAFromAcc(d[2 * ks], d[2 * ks + 1],
                                         /*negate=*/true);
    for (int64_t kt = 0; kt < p.keyTiles; kt += 2) {
      SmallVector<Value> bFrag =
          k.fragB2({st.w, /*transposed=*/true}, key0, 8 * kt, 16 * ks), bLo;
      if (st.wLo)
        bLo = k.fragB2({st.wLo, /*transposed=*/true}, key0, 8 * kt, 16 * ks);
      for (int64_t j = 0; j < 2; ++j)
        acc[kt + j] = k.mmaSplit(dHi, dLo, ArrayRef(bFrag).slice(2 * j, 2),
                                 st.wLo ? ArrayRef(bLo).slice(2 * j, 2)
                                        : ArrayRef<Value>(),
                                 acc[kt + j]);
    }
  }
  SmallVector<Value> next;
  for (auto &tile : acc)
    next.append(tile.begin(), tile.end());
  return next;
}

SmallVector<Value> ReversePassKernel::step(Value j, ValueRange carriedIn) {
  Value n = chunkOfStep(j);
  ChunkRows rows = chunkRows(e, n, io.seqLen);
  if (p.stages == 1) {
    // One stage: step j's copies wait until step j - 1 has left the stage
    // and the scores (the first barrier), and land before anything reads
    // them (the second).
    k.barrier();
    k.waitCopies(prefetch(j), 0);
    k.barrier();
  } else {
    // Step j has landed once at most stages - 2 newer groups are in
    // flight; the barrier also frees step j - 1's stage and the scores.
    k.waitCopies(firstGroup, p.stages - 2);
    k.barrier();
    prefetch(e.addIndex(j, e.index(p.stages - 1)));
  }
  ReverseStage st = stageAt(j);
  storeState(carriedIn, io.gradStates, {bIdx, n, hv});
  Value gLast;
  if (p.perKeyGates) {
    if (!p.outputShareAhead) {
      stagePerKeyScores(st, rows);
      k.barrier();
    }
    decayKeysAndQueries(st, rows);
  } else {
    stageScores(st, rows);
    if (p.hasGates)
      gLast = rowGate(st, e.subIndex(rows.valid, e.index(1)));
  }
  k.barrier();
  SmallVector<SmallVector<Value>> d = sumKeyParts(
      k, p.exchangeOffset, p.block.warps, columnGroup,
      gradValuesPartial(st, carriedIn, gLast), /*ownFromRegisters=*/false);
  writeGradValues(d, rows);
  return updateState(st, carriedIn, d, gLast, rows);
}

void ReversePassKernel::emit() {
  placeBlock();
  SmallVector<Value> init = loadState(io.gradFinalState);
  if (p.stages > 1) {
    firstGroup = prefetch(e.index(0));
    for (int64_t ahead = 1; ahead + 1 < p.stages; ++ahead)
      prefetch(e.index(ahead));
  }
  ValueRange final = e.forEachReduce(
      io.numChunks, init,
      [&](Value j, ValueRange carriedIn) { return step(j, carriedIn); });
  if (firstGroup)
    k.waitCopies(firstGroup, 0);
  storeState(final, io.gradInitialState, {bIdx, hv});
}

struct ChunkStatePassGradToGPU : OpRewritePattern<ChunkStatePassGradOp> {
  ChunkStatePassGradToGPU(MLIRContext *ctx, const ChunkedLoweringContext &context)
      : OpRewritePattern(ctx), context(context) {}

  LogicalResult matchAndRewrite(ChunkStatePassGradOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<ReversePassPlan> plan =
        ReversePassPlan::build(op, context.getTarget());
    if (!plan)
      return rewriter.notifyMatchFailure(op, "forms the kernel does not take");
    const ReversePassPlan &p = *plan;
    if (context.explains())
      op.emitRemark() << "linattn GPU kernel for " << op->getName() << ": "
                      << p.describe();
    rewriter.setInsertionPoint(op);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    LoopEmitter e(b);
    ReversePassOperands io;
    io.q = e.toBuffer(op.getQ());
    io.k = e.toBuffer(op.getK());
    io.w = op.getW() ? e.toBuffer(op.getW()) : Value();
    io.gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
    io.gradOutput = e.toBuffer(op.getGradOutput());
    io.gradFinalState = e.toBuffer(op.getGradFinalState());
    io.qRNorm = op.getQRnorm() ? e.toBuffer(op.getQRnorm()) : Value();
    if (p.outputShareAhead)
      io.outputShare = emitOutputShareOfGradValues(
          b, op, context.getTarget(), io.q, io.k, io.gates, io.gradOutput,
          io.qRNorm);
    Value batch = e.dim(io.q, 0);
    io.seqLen = e.dim(io.q, 1);
    io.numChunks = arith::CeilDivUIOp::create(b, io.seqLen, e.index(kChunk));
    Value hvDim = e.index(p.numVHeads), kDim = e.index(p.K), vDim = e.index(p.V);
    io.gradValues = e.allocFor(op.getGradNewValues().getType(),
                               {batch, io.seqLen, hvDim, vDim});
    io.gradStates = e.allocFor(op.getGradChunkStates().getType(),
                               {batch, io.numChunks, hvDim, kDim, vDim});
    io.gradInitialState = e.allocFor(op.getGradInitialState().getType(),
                                     {batch, hvDim, kDim, vDim});
    float scale = op.getScale().convertToFloat();
    emitLaunch(b, {e.index(p.V / p.block.columns), hvDim, batch}, p.sharedBytes,
               p.mmaElem, [&](MmaEmitter &k) {
      ReversePassKernel(p, io, scale, k).emit();
    }, p.block.warps * 32);
    rewriter.replaceOp(
        op, ValueRange{
                e.toTensor(io.gradValues, op.getGradNewValues().getType()),
                e.toTensor(io.gradStates, op.getGradChunkStates().getType()),
                e.toTensor(io.gradInitialState,
                           op.getGradInitialState().getType())});
    return success();
  }

  const ChunkedLoweringContext &context;
};

} // namespace

std::string whyNoReversePassKernel(ChunkStatePassGradOp op,
                                   const GPUTargetInfo &target) {
  std::string why;
  return ReversePassPlan::build(op, target, &why) ? "" : why;
}

void populateChunkStatePassGradToGPUPatterns(
    RewritePatternSet &patterns, const ChunkedLoweringContext &context) {
  patterns.add<ChunkStatePassGradToGPU>(patterns.getContext(), context);
}

} // namespace mlir::linattn::kernel
