//===- RecurrenceGradToChunked.cpp - The adjoint in chunked form ----------===//
//
// linattn.recurrence_grad as the chunked backward (docs/backward.md): the
// forward's chunk ops recompute W, U, D and the chunk states in f32, the
// reverse chunk pass carries the state gradient back chunk by chunk, and
// every other gradient is local to a chunk.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Transforms/Strategy.h"

#include "RecurrenceUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNRECURRENCEGRADTOCHUNKED
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

struct RecurrenceGradToChunked : OpRewritePattern<RecurrenceGradOp> {
  RecurrenceGradToChunked(MLIRContext *ctx, int64_t chunkSize,
                          bool forwardWForm, bool narrowStates)
      : OpRewritePattern(ctx), chunkSize(chunkSize), forwardWForm(forwardWForm),
        narrowStates(narrowStates) {}

  LogicalResult matchAndRewrite(RecurrenceGradOp op,
                                PatternRewriter &rewriter) const override {
    if (!isSelectedFor(op, {Strategy::Chunked}))
      return rewriter.notifyMatchFailure(op, "another strategy was chosen");
    Location loc = op.getLoc();
    const TransitionKindInfo &kind = op.getKindInfo();
    int64_t batch = op.getBatchSize(), seqLen = op.getSeqLen();
    int64_t HV = op.getNumVHeads(), K = op.getKeyDim(), V = op.getValueDim();
    int64_t numChunks = ShapedType::isDynamic(seqLen)
                            ? ShapedType::kDynamic
                            : (seqLen + chunkSize - 1) / chunkSize;
    Type f32 = rewriter.getF32Type();
    auto f32Tensor = [&](ArrayRef<int64_t> shape) {
      return RankedTensorType::get(shape, f32);
    };
    IntegerAttr chunkAttr = rewriter.getI64IntegerAttr(chunkSize);
    FloatAttr scaleAttr = rewriter.getF32FloatAttr(op.getEffectiveScale());

    // qk_l2norm of a delta kind factored (LinAttnOps.td): q and k exact in
    // their own type, their reciprocal norms in the coefficients and on
    // dO's rows, and qk_grad {factored} adds r's share. Otherwise
    // normalised q and k stay f32 here (the chunk kernels take them split
    // into hi + lo parts), though the forward rounds them to the inputs'
    // type: rounded, they move the delta rules' dq, dv, dbeta and the row
    // gates' dgate by 1.6-3e-2 on hard inputs (bench/NOTES.md b6, ws1).
    // qk_grad differentiates the normalisation at f32.
    std::optional<std::pair<Value, Value>> norms =
        buildFactoredNorms(rewriter, op);
    auto [q, k] = norms ? std::pair{op.getQ(), op.getK()}
                        : buildQueriesAndKeys(rewriter, op, f32);
    Value qRNorm = norms ? norms->first : Value();
    Value kRNorm = norms ? norms->second : Value();
    Value gates;
    if (Value logGate = buildLogGate(rewriter, op))
      gates = ChunkCumsumOp::create(
                  rewriter, loc, logGate.getType(), /*decayed_keys=*/Type(),
                  /*chunk_totals=*/Type(), logGate, /*keys=*/Value(), chunkAttr)
                  .getResult();

    // The forward, recomputed: W and U (delta kinds), then D and S_n. W in
    // f32, or as the forward's chunked form stores it (in the inputs' type,
    // normalised keys too); D in f32 (the gradients multiply it: its bf16
    // copy gave dq 7e-3 and dgate 2e-2 relative error on hard inputs at T =
    // 1000, bench/NOTES.md b1, b16). With narrow-states, S_n is stored in
    // bf16 where the keys are bf16 (f16 keeps f32: the states' range): the
    // pass carries it in f32 and only the stored copy, read by chunk_grad's
    // products, is rounded. Its gradient H_n stays f32: with both rounded,
    // dgate at T = 1 (one dot product <S_0, H>) reached 6.8e-3 on the CPU,
    // with S alone 3.4e-3 at worst over ten seeds (bench/NOTES.md b22).
    auto keyType = cast<RankedTensorType>(op.getK().getType());
    Value beta, w, u = op.getV();
    FloatAttr rank1Scale;
    if (kind.hasRank1()) {
      beta = op.getBeta();
      rank1Scale = rewriter.getF32FloatAttr(kind.rank1Scale);
      Type wType = forwardWForm
                       ? getWYWeightType(keyType, HV, kind.rank1Scale,
                                         /*allowSplit=*/true)
                       : f32Tensor({batch, seqLen, HV, K});
      auto ut = UTTransformOp::create(
          rewriter, loc, wType, f32Tensor({batch, seqLen, HV, V}),
          /*cumulative_gates=*/Type(), k, kRNorm, op.getV(), beta, gates,
          /*raw_gates=*/Value(), chunkAttr, rank1Scale);
      w = ut.getW();
      u = ut.getU();
    }
    Type stateType = op.getInitialState().getType();
    Type storedStateElem =
        narrowStates && keyType.getElementType().isBF16() ? keyType.getElementType()
                                                          : f32;
    auto statesType =
        RankedTensorType::get({batch, numChunks, HV, K, V}, storedStateElem);
    auto gradStatesType = f32Tensor({batch, numChunks, HV, K, V});
    auto valuesType = f32Tensor({batch, seqLen, HV, V});
    auto forward = ChunkStatePassOp::create(
        rewriter, loc, TypeRange{valuesType, statesType, stateType}, k,
        /*k_rnorm=*/Value(), u, w, /*beta=*/Value(), gates,
        op.getInitialState(), chunkAttr,
        /*rank1_scale=*/FloatAttr(), /*segment_chunks=*/IntegerAttr(),
        /*decayed_keys=*/UnitAttr());

    // The recorded choice (chunked) travels with the state pass, so that
    // linattn-state-pass-to-scan leaves it alone.
    if (Attribute strategy = op->getAttr(kStrategyAttrName))
      forward->setAttr(kStrategyAttrName, strategy);

    // The backward.
    auto statePassGrad = ChunkStatePassGradOp::create(
        rewriter, loc, TypeRange{valuesType, gradStatesType, stateType}, q, qRNorm,
        k, w, gates, op.getGradOutput(), op.getGradFinalState(), chunkAttr,
        scaleAttr);
    // dq and dk per value head in f32 for qk_grad to sum and normalise;
    // with one value head a q/k head and no normalisation, qk_grad would
    // only round them, so chunk_grad returns them rounded.
    UnitAttr l2norm = op.getQkL2normAttr();
    bool gradientsDirect = !l2norm && HV == op.getNumQKHeads();
    Type perValueHead = f32Tensor({batch, seqLen, HV, K});
    Type dqType = gradientsDirect ? op.getGradientOf(0).getType() : perValueHead;
    Type dkType = gradientsDirect ? op.getGradientOf(1).getType() : perValueHead;
    Type gateGradType, betaGradType;
    if (op.getGate())
      gateGradType = op.getGradientOf(3).getType();
    if (beta)
      betaGradType = op.getGradientOf(op.getInitialStateIndex() - 1).getType();
    auto chunkGrad = ChunkGradOp::create(
        rewriter, loc, dqType, dkType, op.getGradientOf(2).getType(),
        gateGradType, betaGradType, q, qRNorm, k, kRNorm, op.getV(), beta,
        gates, w,
        beta ? u : Value(), forward.getNewValues(),
        forward.getChunkStates(), op.getGradOutput(),
        statePassGrad.getGradNewValues(), statePassGrad.getGradChunkStates(),
        chunkAttr, scaleAttr, rank1Scale);
    Value dq = chunkGrad.getGradQ(), dk = chunkGrad.getGradK();
    if (!gradientsDirect) {
      UnitAttr factored = norms ? rewriter.getUnitAttr() : UnitAttr();
      dq = QKGradOp::create(rewriter, loc, op.getGradientOf(0).getType(),
                            op.getQ(), dq, l2norm, factored);
      dk = QKGradOp::create(rewriter, loc, op.getGradientOf(1).getType(),
                            op.getK(), dk, l2norm, factored);
    }

    SmallVector<Value> results = {dq, dk, chunkGrad.getGradV()};
    if (op.getGate())
      results.push_back(chunkGrad.getGradGates());
    if (beta)
      results.push_back(chunkGrad.getGradBeta());
    results.push_back(statePassGrad.getGradInitialState());
    rewriter.replaceOp(op, results);
    return success();
  }

  int64_t chunkSize;
  bool forwardWForm, narrowStates;
};

struct LinAttnRecurrenceGradToChunked
    : impl::LinAttnRecurrenceGradToChunkedBase<LinAttnRecurrenceGradToChunked> {
  using Base::Base;

  void runOnOperation() override {
    if (chunkSize <= 0) {
      getOperation()->emitError()
          << "linattn-recurrence-grad-to-chunked: chunk-size must be "
             "positive, got "
          << chunkSize.getValue();
      return signalPassFailure();
    }
    int64_t count = 0;
    getOperation()->walk([&](RecurrenceGradOp op) {
      count += isSelectedFor(op, {Strategy::Chunked});
    });
    RewritePatternSet patterns(&getContext());
    patterns.add<RecurrenceGradToChunked>(&getContext(), chunkSize,
                                          forwardWForm, narrowStates);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    numRewritten += count;
  }
};

} // namespace
} // namespace mlir::linattn
