//===- LowerRank1ToWY.cpp - Rank-1 transition products to WY/UT form ------===//
//
// The product of a chunk's rank-1 transitions prod_t a_t (I - c_t k_t k_t^T)
// has the WY representation I - K^T W (up to the gates); with the UT
// transform A = (I + StrictLower(diag(c) K K^T * exp(G_i - G_j)))^-1 the new
// values of the chunk are D = A diag(beta) V - A diag(c exp(G)) K S_n
// = U - W S_n. This pass makes that explicit (DESIGN.md section 2).
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Transforms/Strategy.h"

#include "RecurrenceUtils.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNLOWERRANK1TOWY
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

struct Rank1StatePassToWY : OpRewritePattern<ChunkStatePassOp> {
  Rank1StatePassToWY(MLIRContext *context, bool allowSplitW)
      : OpRewritePattern(context), allowSplitW(allowSplitW) {}

  LogicalResult matchAndRewrite(ChunkStatePassOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getBeta())
      return rewriter.notifyMatchFailure(op, "not in rank-1 product form");
    auto kType = cast<RankedTensorType>(op.getK().getType());
    auto uType = cast<RankedTensorType>(op.getU().getType());
    int64_t batch = kType.getDimSize(0), seqLen = kType.getDimSize(1);
    int64_t numVHeads = uType.getDimSize(2);
    // W only multiplies states: for the delta rule (rank1_scale = 1) it is
    // stored like the keys, which halves the state pass's largest read.
    // Its rounding error enters S along the chunk's keys, and the next
    // transitions I - beta k k^T (eigenvalues in [0, 1]) damp it; the
    // negative-eigenvalue rule's reflections (eigenvalue down to -1) keep
    // it, so it accumulates over chunks (a bf16 W failed
    // test/Integration/Numerics/beta-one.test's negeig case, beta = 1,
    // 1000 bf16 tokens: 1.7e-2 against its 1e-2 bound; bench/NOTES.md
    // c14). There W stays f32, or with split-w becomes two 16-bit parts
    // (hi + lo, about 16 significant bits: what the GPU's split of an f32
    // W into tensor-core operands kept, without converting it on the state
    // pass's sequential path, NOTES c28); not for f32 keys, nor where the
    // state pass becomes a segment scan (its ops take W whole).
    // U stays f32 everywhere: D = U - W S cancels, and U's rounding would
    // show in D.
    Type f32 = rewriter.getF32Type();
    RankedTensorType wType = getWYWeightType(
        kType, numVHeads, op.getRank1Scale()->convertToFloat(),
        allowSplitW && getRecordedStrategy(op) != Strategy::SegmentScan);
    auto newUType = RankedTensorType::get(
        {batch, seqLen, numVHeads, uType.getDimSize(3)}, f32);

    auto ut = UTTransformOp::create(rewriter, op.getLoc(),
                                    TypeRange{wType, newUType}, op.getK(),
                                    op.getKRnorm(), op.getU(), op.getBeta(),
                                    op.getGates(),
                                    /*raw_gates=*/Value(), op.getChunkSizeAttr(),
                                    op.getRank1ScaleAttr());
    auto wy = ChunkStatePassOp::create(
        rewriter, op.getLoc(), op.getResultTypes(), op.getK(),
        /*k_rnorm=*/Value(), ut.getU(), ut.getW(), /*beta=*/Value(),
        op.getGates(), op.getInitialState(),
        op.getChunkSizeAttr(), /*rank1_scale=*/FloatAttr(),
        /*segment_chunks=*/IntegerAttr(), /*decayed_keys=*/UnitAttr());
    // The recorded strategy decides whether the state pass becomes a scan.
    if (Attribute strategy = op->getAttr(kStrategyAttrName))
      wy->setAttr(kStrategyAttrName, strategy);
    rewriter.replaceOp(op, wy.getResults());
    return success();
  }

private:
  bool allowSplitW;
};

struct LinAttnLowerRank1ToWY
    : impl::LinAttnLowerRank1ToWYBase<LinAttnLowerRank1ToWY> {
  using Base::Base;

  void runOnOperation() override {
    int64_t count = 0;
    getOperation()->walk([&](ChunkStatePassOp op) { count += !!op.getBeta(); });
    RewritePatternSet patterns(&getContext());
    patterns.add<Rank1StatePassToWY>(&getContext(), splitW);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    numRewritten += count;
  }
};

} // namespace
} // namespace mlir::linattn
