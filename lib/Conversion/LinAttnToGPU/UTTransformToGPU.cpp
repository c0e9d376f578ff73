//===- UTTransformToGPU.cpp - linattn.ut_transform to a kernel --------------===//
//
// A block per (chunk, value head): K K^T on tensor cores (per-key gates:
// the decayed scores of PerKeyScores.h), the triangular inverse
// T = (I + L)^-1 in fp32 by 16-row blocks, then W and U as products with
// the split T.
//
//===----------------------------------------------------------------------===//

#include "ChunkedToGPUPatterns.h"
#include "KernelSupport.h"
#include "Kernel/Gates.h"
#include "Kernel/MmaEmitter.h"
#include "Kernel/PerKeyScores.h"
#include "Kernel/TriangularInverse.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

namespace {

/// L = StrictLower(diag(c) P) under per-key gates, c_r = rank1Coeff(r) and
///   P_ij = sum_d k_id k_jd exp(G_id - G_jd),
/// into the fp32 tile `l` ([64][64], zero above the diagonal and past
/// `valid`) by forEachLowerKeyScore (K' staged in `kd` on the way); ends
/// with a barrier.
void lowerTriangleOfPerKeyScores(MmaEmitter &k, const Operand &keys,
                                 const Operand &kd, Value g, Value l,
                                 function_ref<Value(Value)> rank1Coeff,
                                 Value m0, Value valid, int64_t K) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  zeroSquareTile(k, l);
  forEachLowerKeyScore(k, keys, kd, g, m0, valid, K,
                       [&](Value r, Value c, Value score, Value keep) {
    Value cr = rank1Coeff(r);
    memref::StoreOp::create(b, k.select(keep, e.mul(score, cr), e.f32(0.0f)), l,
                            ValueRange{r, c});
  });
  k.barrier();
}

/// The columns of one piece of the products W = (T diag(c exp(G))) K and
/// U = (T diag(beta)) V: above 128 a warp's 16 rows by all the columns
/// would hold 96-128 accumulator registers a thread, so they run in two
/// pieces (bench/NOTES.md u1).
static int64_t productPieceColumns(int64_t cols) {
  return cols > 128 ? cols / 2 : cols;
}

/// One linattn.ut_transform's kernel, decided from the op before any IR is
/// made: the operands' forms and the shared-memory layout.
///
/// Shared memory: Y holds the key tile, later the value tile (16-bit,
/// exact inputs); X holds T in fp32; R holds L in fp32, later the scaled T
/// split in hi/lo 16-bit tiles; then 64 row gates, 64 betas and the
/// inverse's [16][48] fp32 scratch M; T's and L's rows are
/// kInverseStride long (Kernel/TriangularInverse.h). Per-key gates add the
/// chunk's [64][K] gates and a 16-bit [64][K] tile: the keys decayed to
/// their 16-row block's end for the scores, later K * exp(G) for W. f32
/// keys (an f32 spec's, or the backward's normalised ones) are held split:
/// their lo part in a tile of its own, so that W is the keys' own (the
/// state pass and the gradients take them split too). So are f32 values
/// (an f32 spec's), in the same tile once W is out. Per key, the decayed
/// keys' lo part has a tile of its own after it; `{qk_l2norm}` factored,
/// the rows' r last.
struct UTTransformPlan {
  int64_t K = 0, V = 0;
  /// Per-key gates G [B, T, HV, K] (kda), else scalar gates or none.
  bool perKey = false;
  /// The kernel sums raw scalar gates itself (linattn-fuse-chunk-cumsum).
  bool sumsGates = false;
  /// k's reciprocal row norms r are used (`{qk_l2norm}` factored): an
  /// operand, or formed from the staged keys (`k_l2norm`).
  bool hasRNorm = false, formsRNorm = false;
  /// f32 keys / values, held split (hi + lo) in shared memory.
  bool splitKeys = false, splitValues = false;
  bool splitDecayedKeys() const { return perKey && splitKeys; }
  /// W stored split [B, T, HV, 2, K] (hi, lo).
  bool splitW = false;
  Type wElem;
  /// Byte offsets into shared memory (the layout above).
  int64_t xOffset = 0, rOffset = 0, tileBytes = 0, gOffset = 0,
          betaOffset = 0, mOffset = 0, gKeyOffset = 0, kdOffset = 0,
          loOffset = 0, kdLoOffset = 0, rNormOffset = 0, sharedBytes = 0;

  static UTTransformPlan of(UTTransformOp op) {
    UTTransformPlan plan;
    plan.K = dimOf(op.getK(), 3);
    plan.V = dimOf(op.getV(), 3);
    int64_t K = plan.K, V = plan.V;
    plan.sumsGates = bool(op.getRawGates());
    plan.perKey = !op.getRawGates() && op.getGates() &&
                  cast<ShapedType>(op.getGates().getType()).getRank() == 4;
    plan.formsRNorm = op.getKL2norm();
    plan.hasRNorm = bool(op.getKRnorm()) || plan.formsRNorm;
    plan.splitKeys = elementOf(op.getK()).isF32();
    plan.splitValues = elementOf(op.getV()).isF32();
    plan.splitW = isSplitW(op.getW().getType());
    plan.wElem = elementOf(op.getW());
    int64_t yBytes = kChunk * (std::max(K, V) + kPad) * 2;
    plan.xOffset = yBytes;
    plan.rOffset = plan.xOffset + kChunk * kInverseStride * 4;
    plan.tileBytes = kChunk * (kChunk + kPad) * 2;
    plan.gOffset = plan.rOffset +
                   std::max(kChunk * kInverseStride * 4, 2 * plan.tileBytes);
    plan.betaOffset = plan.gOffset + kChunk * 4;
    plan.mOffset = plan.betaOffset + kChunk * 4;
    plan.gKeyOffset = plan.mOffset + kInverseScratchBytes;
    plan.kdOffset =
        plan.gKeyOffset + (plan.perKey ? kChunk * plan.gateKeyStride() * 4 : 0);
    plan.loOffset = plan.kdOffset + (plan.perKey ? kChunk * (K + kPad) * 2 : 0);
    int64_t loCols = std::max(plan.splitKeys ? K : 0, plan.splitValues ? V : 0);
    plan.kdLoOffset =
        plan.loOffset + (loCols ? kChunk * (loCols + kPad) * 2 : 0);
    plan.rNormOffset = plan.kdLoOffset +
                       (plan.splitDecayedKeys() ? kChunk * (K + kPad) * 2 : 0);
    plan.sharedBytes = plan.rNormOffset + (plan.hasRNorm ? kChunk * 4 : 0);
    return plan;
  }

  /// Row stride of the per-key gates' fp32 tile.
  int64_t gateKeyStride() const { return K + 4; }

  /// The kernel in one line, for --linattn-explain.
  std::string describe() const {
    std::string text;
    llvm::raw_string_ostream os(text);
    auto pieces = [&](int64_t cols) {
      int64_t n = cols / productPieceColumns(cols);
      return std::to_string(n) + (n == 1 ? " piece" : " pieces");
    };
    os << "a block per (chunk, value head, sequence), " << kWarps << " warps ("
       << kThreads << " threads); "
       << (sumsGates ? "the chunk's gate sums formed in the kernel (no cumsum "
                       "kernel); "
                     : "")
       << (perKey ? "per-key scores from keys decayed by 16-row blocks; " : "")
       << (formsRNorm ? "k's row norms formed from the staged keys "
                        "(k_l2norm); "
                      : "")
       << "T = (I + L)^-1 by 16-row blocks in fp32; W in " << pieces(K)
       << ", U in " << pieces(V);
    if (splitKeys || splitValues)
      os << "; f32 " << (splitKeys && splitValues ? "keys and values"
                         : splitKeys              ? "keys"
                                                  : "values")
         << " split (hi + lo)";
    os << "; W stored as " << wElem << (splitW ? " hi + lo" : "") << "; "
       << sharedBytes << " bytes of shared memory";
    return text;
  }
};

LogicalResult lowerUTTransform(UTTransformOp op, Type mmaType,
                               const GPUTargetInfo &target, bool explain,
                               RewriterBase &rewriter) {
  std::optional<Type> mmaElem = mmaType;
  const UTTransformPlan plan = UTTransformPlan::of(op);
  int64_t numQKHeads = dimOf(op.getK(), 2), K = plan.K;
  int64_t numVHeads = dimOf(op.getV(), 2), V = plan.V;
  if (failed(checkChunkGeometry(op, op.getChunkSize(), {{"K", K}, {"V", V}},
                                "the UT transform")))
    return failure();

  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  LoopEmitter e(b);
  Value kBuf = e.toBuffer(op.getK()), vBuf = e.toBuffer(op.getV());
  Value beta = e.toBuffer(op.getBeta());
  // qk_l2norm factored: k's reciprocal row norms r, so that c = rank1Scale
  // beta r^2 and b = beta r (the op's description).
  Value kRNorm = op.getKRnorm() ? e.toBuffer(op.getKRnorm()) : Value();
  Value batch = e.dim(kBuf, 0), seqLen = e.dim(kBuf, 1);
  // Raw scalar gates g (linattn-fuse-chunk-cumsum): this kernel sums them
  // itself (warp 0, warpChunkCumsum) and writes G for the state pass and
  // the output kernel, so that no cumsum kernel runs (NOTES c22: Gated
  // DeltaNet 0.096 -> 0.092 ms at T = 1024).
  std::optional<GateReader> rawGates;
  Value gates, cumulative;
  if (op.getRawGates()) {
    rawGates.emplace(e, op.getRawGates());
    cumulative = e.allocFor(op.getCumulativeGates().getType(),
                            {batch, seqLen, e.index(numVHeads)});
  } else if (op.getGates()) {
    gates = e.toBuffer(op.getGates());
  }
  bool perKey = plan.perKey;
  // W [B, T, HV, K], or split [B, T, HV, 2, K] (hi, lo).
  SmallVector<Value> wSizes = {batch, seqLen, e.index(numVHeads)};
  if (plan.splitW)
    wSizes.push_back(e.index(2));
  wSizes.push_back(e.index(K));
  Value w = e.allocFor(op.getW().getType(), wSizes);
  Value u = e.allocFor(op.getU().getType(),
                       {batch, seqLen, e.index(numVHeads), e.index(V)});
  float rank1Scale = op.getRank1Scale().convertToFloat();

  if (failed(checkSharedBytes(op, "UT transform", plan.sharedBytes, target)))
    return failure();
  if (explain)
    op.emitRemark() << "linattn GPU kernel for " << op->getName() << ": "
                    << plan.describe();
  Value numChunks = arith::CeilDivUIOp::create(b, seqLen, e.index(kChunk));
  emitLaunch(b, {numChunks, e.index(numVHeads), batch}, plan.sharedBytes,
             *mmaElem, [&](MmaEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value n = body->getArgument(0), hv = body->getArgument(1);
    Value bIdx = body->getArgument(2);
    Value h = e.qkHead(hv, numVHeads, numQKHeads);
    ChunkRows rows = chunkRows(e, n, seqLen);
    Type elem = *mmaElem, f32 = b.getF32Type();
    Value gShared = k.vec(plan.gOffset, kChunk, f32);
    // The write coefficients b (beta, or beta r), and r.
    Value betaShared = k.vec(plan.betaOffset, kChunk, f32);
    Value rShared =
        plan.hasRNorm ? k.vec(plan.rNormOffset, kChunk, f32) : Value();
    // The rank-1 coefficient of row i: rank1Scale beta_i (r_i^2).
    auto rank1Coeff = [&](Value i) {
      Value c = e.mul(e.f32(rank1Scale), memref::LoadOp::create(b, betaShared, i));
      return rShared ? e.mul(c, memref::LoadOp::create(b, rShared, i)) : c;
    };
    // A [64][cols + kPad] 16-bit tile at `offset`, where `present`.
    auto rowTile = [&](bool present, int64_t offset, int64_t cols) {
      return present ? k.tile(offset, kChunk, cols + kPad, elem) : Value();
    };
    Value keyTile = rowTile(true, 0, K);
    Value valueTile = rowTile(true, 0, V);
    Value tF32 = k.tile(plan.xOffset, kChunk, kInverseStride, f32);
    Value lTile = k.tile(plan.rOffset, kChunk, kInverseStride, f32);
    Value tHi = rowTile(true, plan.rOffset, kChunk);
    Value tLo = rowTile(true, plan.rOffset + plan.tileBytes, kChunk);
    Value mTile = k.tile(plan.mOffset, 16, kChunk - 16, f32);
    Value gKeys = perKey ? k.tile(plan.gKeyOffset, kChunk,
                                  plan.gateKeyStride(), f32)
                         : Value();
    Value kdTile = rowTile(perKey, plan.kdOffset, K);
    Value keyLo = rowTile(plan.splitKeys, plan.loOffset, K);
    Value valueLo = rowTile(plan.splitValues, plan.loOffset, V);
    Value kdLo = rowTile(plan.splitDecayedKeys(), plan.kdLoOffset, K);

    // 1. Keys, gates and betas of the chunk. Every global read is issued
    //    before any is waited on: 16-bit keys by cp.async, then each row's
    //    scalars into registers, then their sums and stores, so that the
    //    block meets one memory latency here, not one for the keys, one
    //    for warp 0's gates and one for the betas after them
    //    (bench/NOTES.md ut1).
    bool asyncKeys = elementOf(op.getK()) == elem;
    if (asyncKeys)
      k.copyTokenRowsAsync(keyTile, K, rows, seqLen, kBuf, bIdx, h);
    else
      k.fillTile(keyTile, kChunk, K, rows.valid, [&](Value r, Value c) {
        return k.load8(kBuf, {bIdx, e.addIndex(rows.t0, r), h, c});
      }, keyLo);
    if (perKey)
      k.copyTokenRowsAsync(gKeys, K, rows, seqLen, gates, bIdx, hv);
    Value rRow = kRNorm ? readRowScalar(k, rows, [&](Value t) {
      return e.loadF32(kRNorm, {bIdx, t, h});
    }) : Value();
    Value betaRow = readRowScalar(k, rows, [&](Value t) {
      return e.loadF32(beta, {bIdx, t, hv});
    });
    if (rRow) // b = beta r
      betaRow = e.mul(betaRow, rRow);
    // Raw gates: every warp reads the chunk's (the same addresses), warp 0
    // sums and stores them.
    SmallVector<Value> rawGateRows;
    Value gateRow;
    if (rawGates)
      rawGateRows = readChunkGates(k, *rawGates, bIdx, rows, hv);
    else if (!perKey)
      gateRow = gates ? readRowScalar(k, rows, [&](Value t) {
        return e.loadF32(gates, {bIdx, t, hv});
      }) : e.f32(0.0f);
    if (rawGates) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(k.warp, e.index(1)), false).thenBlock());
      storeChunkCumsum(k, sumChunkGates(k, rawGateRows), cumulative, gShared,
                       bIdx, rows, hv);
    }
    SmallVector<std::pair<Value, Value>> rowScalars = {{betaRow, betaShared}};
    if (gateRow)
      rowScalars.push_back({gateRow, gShared});
    if (rRow)
      rowScalars.push_back({rRow, rShared});
    storeRowScalars(k, rowScalars);
    if (asyncKeys || perKey)
      k.waitCopies(k.commitCopies(), 0);
    k.barrier();

    Value m0 = e.mulIndex(k.warp, e.index(16));
    if (plan.formsRNorm) {
      // k_l2norm: each warp forms r of its own 16 rows from the staged
      // keys, r_i into R and b_i = beta_i r_i over beta_i. The scores below
      // read the warp's own rows' coefficients (a warp barrier suffices);
      // per-key scores read every row's (a block barrier).
      std::array<Value, 2> norms =
          k.accRowInverseNorms(keyTile, keyLo, m0, K, L2NormOp::kEpsilon);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(
            scf::IfOp::create(b, k.ult(k.quad, e.index(1)), false).thenBlock());
        for (int64_t half = 0; half < 2; ++half) {
          Value row = k.accRow(m0, 2 * half);
          memref::StoreOp::create(b, norms[half], rShared, row);
          Value beta = memref::LoadOp::create(b, betaShared, row);
          memref::StoreOp::create(b, e.mul(beta, norms[half]), betaShared, row);
        }
      }
      if (perKey)
        k.barrier();
      else
        NVVM::SyncWarpOp::create(
            b, arith::ConstantOp::create(b, b.getI32IntegerAttr(-1)));
    }
    if (perKey)
      lowerTriangleOfPerKeyScores(k, Operand::of(keyTile, keyLo),
                                  Operand::of(kdTile, kdLo), gKeys, lTile,
                                  rank1Coeff, m0, rows.valid, K);
    // 2. A = K K^T; L = StrictLower(c_i A_ij exp(G_i - G_j)) for valid rows.
    SmallVector<SmallVector<Value>> acc = k.zeroAcc(perKey ? 0 : kChunk / 8);
    if (!perKey)
      k.gemm(acc, Operand::of(keyTile, keyLo), m0, Operand::of(keyTile, keyLo), K);
    for (int64_t nt = 0; nt < (perKey ? 0 : kChunk / 8); ++nt) {
      for (int64_t i = 0; i < 4; ++i) {
        Value r = k.accRow(m0, i), c = k.accCol(8 * nt, i);
        Value gr = memref::LoadOp::create(b, gShared, r);
        Value gc = memref::LoadOp::create(b, gShared, c);
        Value cr = rank1Coeff(r);
        Value l = e.mul(e.mul(acc[nt][i], cr), k.exp(e.sub(gr, gc)));
        Value keep = arith::AndIOp::create(b, k.ult(c, r), k.ult(r, rows.valid));
        memref::StoreOp::create(b, k.select(keep, l, e.f32(0.0f)), lTile,
                                ValueRange{r, c});
      }
    }
    // T's blocks above the diagonal stay zero; the inverse writes the rest.
    zeroSquareTile(k, tF32);
    k.barrier();

    // 3. T = (I + L)^-1 in fp32 (Kernel/TriangularInverse.h).
    invertUnitLowerTriangular(k, lTile, tF32, mTile);
    k.barrier();

    // 4. W = (T diag(c exp(G))) K, then U = (T diag(beta)) V: the column
    //    scaling goes into T (split over L), so the keys and values stay
    //    exact. Per key, W = (T diag(c)) (K * exp(G)), the decayed keys
    //    rounded to the operand type (<= 1 times a key: W's own rounding,
    //    as fla's chunk_kda).
    //    Each product's result leaves through shared memory when its
    //    staging tile fits (`stageOffset` >= 0): the warps store their
    //    accumulator pairs there, then the block copies whole rows out in
    //    16-byte pieces (coalesced: 8-16 stores per thread instead of 32
    //    scattered pairs). W's tile overlays the T hi/lo tiles (T's fp32
    //    copy is still needed for U); U's the fp32 T as well, which is
    //    dead by then.
    //    Products of more than 128 columns (K or V > 128) run in two
    //    column pieces, so that a warp holds half the accumulators (at
    //    192: 48 registers a thread instead of 96, where the kernel
    //    spilled; NOTES u1); their pieces leave by direct stores, since
    //    the staging tiles overlay the T tiles the second piece reads.
    auto splitScaledT = [&](function_ref<Value(Value)> columnScale) {
      k.fillTile(tHi, kChunk, kChunk, Value(), [&](Value r, Value c) {
        SmallVector<Value> scales;
        for (int64_t j = 0; j < 8; ++j)
          scales.push_back(columnScale(e.addIndex(c, e.index(j))));
        Value scale = vector::FromElementsOp::create(
            b, VectorType::get({8}, b.getF32Type()), scales);
        return arith::MulFOp::create(b, k.load8(tF32, {r, c}), scale).getResult();
      }, tLo);
      k.barrier();
    };
    auto productPiece = [&](int64_t cols, Operand right, int64_t c0) {
      SmallVector<SmallVector<Value>> out = k.zeroAcc(cols / 8);
      k.gemm(out, {{tHi}, TileView{tLo}}, m0, right, kChunk, c0);
      return out;
    };
    // Stores a product's rows [t0, t0 + valid), columns [c0, c0 + cols),
    // to dst: [B, T, HV, cols], or part `part` of a split W
    // [B, T, HV, 2, cols].
    auto storeResult = [&](ArrayRef<SmallVector<Value>> out, int64_t cols,
                           Value dst, int64_t stageOffset,
                           std::optional<int64_t> part, int64_t c0 = 0) {
      auto dstIndices = [&](Value r, Value c) -> SmallVector<Value> {
        Value t = e.addIndex(rows.t0, r);
        Value col = c0 ? e.addIndex(c, e.index(c0)) : c;
        if (part)
          return {bIdx, t, hv, e.index(*part), col};
        return {bIdx, t, hv, col};
      };
      if (stageOffset < 0) {
        for (int64_t nt = 0; nt < cols / 8; ++nt)
          k.forEachPair(m0, nt, [&](Value r, Value c, int64_t i) {
            k.storePair(out[nt][i], out[nt][i + 1], dst, dstIndices(r, c),
                        k.ult(r, rows.valid));
          });
        k.barrier();
        return;
      }
      Type dstElem = cast<MemRefType>(dst.getType()).getElementType();
      Value stage = k.tile(stageOffset, kChunk, cols + kPad, dstElem);
      k.barrier(); // every warp is done reading the T tiles (or the stage)
      for (int64_t nt = 0; nt < cols / 8; ++nt)
        k.forEachPair(m0, nt, [&](Value r, Value c, int64_t i) {
          k.storePair(out[nt][i], out[nt][i + 1], stage, {r, c}, Value());
        });
      k.barrier();
      k.copyRowsOut(stage, e.index(0), kChunk, cols, rows.valid, dst, dstIndices);
      k.barrier();
    };
    // Staging tiles: W's in R (the T hi/lo tiles), U's in X and R.
    auto stageBytes = [&](int64_t cols, Value dst) {
      return kChunk * (cols + kPad) *
             int64_t(cast<MemRefType>(dst.getType()).getElementTypeBitWidth() / 8);
    };
    int64_t rBytes = plan.gOffset - plan.rOffset;
    int64_t wStage = stageBytes(K, w) <= rBytes ? plan.rOffset : -1;
    int64_t uStage =
        stageBytes(V, u) <= plan.gOffset - plan.xOffset ? plan.xOffset : -1;
    if (perKey) {
      decayRows(k, keyTile, kdTile, gKeys, rows.valid, /*ref=*/nullptr, K,
                keyLo, kdLo);
      k.barrier();
    }
    splitScaledT([&](Value c) {
      Value g = perKey ? Value() : memref::LoadOp::create(b, gShared, c);
      Value betaC = memref::LoadOp::create(b, betaShared, c);
      if (rShared) // c = rank1Scale (beta r) r
        betaC = e.mul(betaC, memref::LoadOp::create(b, rShared, c));
      if (perKey)
        return e.mul(e.f32(rank1Scale), betaC);
      return e.mul(e.mul(e.f32(rank1Scale), betaC), k.exp(g));
    });
    Operand keys = perKey ? Operand::of(kdTile, kdLo, /*transposed=*/true)
                          : Operand::of(keyTile, keyLo, /*transposed=*/true);
    int64_t wPiece = productPieceColumns(K);
    // 16-bit values arrive by cp.async into the key tile once every warp
    // is past W's last product (the keys' last reader), landing while W
    // leaves.
    bool asyncValues = elementOf(op.getV()) == elem;
    for (int64_t c0 = 0; c0 < K; c0 += wPiece) {
      SmallVector<SmallVector<Value>> wOut = productPiece(wPiece, keys, c0);
      if (asyncValues && c0 + wPiece >= K) {
        k.barrier();
        k.copyTokenRowsAsync(valueTile, V, rows, seqLen, vBuf, bIdx, hv);
      }
      int64_t stage = wPiece == K ? wStage : -1;
      if (plan.splitW) {
        // hi = W rounded (storePair rounds), lo = W - hi, rounded in turn:
        // the state pass reads both by ldmatrix (NOTES c28).
        storeResult(wOut, wPiece, w, stage, /*part=*/0, c0);
        Type wElem = cast<MemRefType>(w.getType()).getElementType();
        for (auto &tile : wOut)
          for (Value &x : tile)
            x = e.roundingRest(x, wElem);
        storeResult(wOut, wPiece, w, stage, /*part=*/1, c0);
      } else {
        storeResult(wOut, wPiece, w, stage, std::nullopt, c0);
      }
    }
    // (splitScaledT's barrier makes the copied values visible.)
    if (asyncValues)
      k.waitCopies(k.commitCopies(), 0);
    else
      k.fillTile(valueTile, kChunk, V, rows.valid, [&](Value r, Value c) {
        return k.load8(vBuf, {bIdx, e.addIndex(rows.t0, r), hv, c});
      }, valueLo);
    splitScaledT([&](Value c) {
      return memref::LoadOp::create(b, betaShared, c).getResult();
    });
    Operand values = Operand::of(valueTile, valueLo, /*transposed=*/true);
    int64_t uPiece = productPieceColumns(V);
    for (int64_t c0 = 0; c0 < V; c0 += uPiece)
      storeResult(productPiece(uPiece, values, c0), uPiece, u,
                  uPiece == V ? uStage : -1, std::nullopt, c0);
  });
  if (cumulative)
    e.replaceWithBuffers(rewriter, op, {w, u, cumulative});
  else
    e.replaceWithBuffers(rewriter, op, {w, u});
  return success();
}

struct UTTransformToGPU : OpRewritePattern<UTTransformOp> {
  UTTransformToGPU(MLIRContext *ctx, const ChunkedLoweringContext &context)
      : OpRewritePattern(ctx), context(context) {}
  LogicalResult matchAndRewrite(UTTransformOp op,
                                PatternRewriter &rewriter) const override {
    return lowerUTTransform(op, context.getMmaType(op), context.getTarget(),
                            context.explains(), rewriter);
  }
  const ChunkedLoweringContext &context;
};

} // namespace

void populateUTTransformToGPUPatterns(RewritePatternSet &patterns,
                                 const ChunkedLoweringContext &context) {
  patterns.add<UTTransformToGPU>(patterns.getContext(), context);
}

} // namespace mlir::linattn::kernel
