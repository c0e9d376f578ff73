//===- RecurrenceToChunked.cpp - linattn.recurrence to chunked form -------===//
//
// The chunkwise two-pass algorithm as IR (DESIGN.md section 2): gates become
// in-chunk cumulative log gates, the state is carried chunk to chunk by
// linattn.chunk_state_pass, and outputs come from the entering state of each
// chunk plus the causal intra-chunk term (linattn.chunk_output).
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Transforms/Strategy.h"

#include "RecurrenceUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"


namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNRECURRENCETOCHUNKED
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

/// tensor<d0 x d1 x ... x f32> with the given (possibly dynamic) sizes.
RankedTensorType f32Tensor(OpBuilder &b, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, b.getF32Type());
}

struct RecurrenceToChunked : OpRewritePattern<RecurrenceOp> {
  RecurrenceToChunked(MLIRContext *ctx, int64_t chunkSize,
                      bool narrowIntermediates)
      : OpRewritePattern(ctx), chunkSize(chunkSize),
        narrowIntermediates(narrowIntermediates) {}

  LogicalResult matchAndRewrite(RecurrenceOp op,
                                PatternRewriter &rewriter) const override {
    if (!isSelectedFor(op, {Strategy::Chunked, Strategy::SegmentScan}))
      return rewriter.notifyMatchFailure(op, "another strategy was chosen");
    // The selector's chunk size, if it recorded one, else the pass option.
    int64_t chunkSize = this->chunkSize;
    if (auto recorded = op->getAttrOfType<IntegerAttr>(kChunkSizeAttrName))
      chunkSize = recorded.getInt();
    Location loc = op.getLoc();
    int64_t batch = op.getBatchSize(), seqLen = op.getSeqLen();
    int64_t numVHeads = op.getNumVHeads(), K = op.getKeyDim(),
            V = op.getValueDim();
    int64_t numChunks = ShapedType::isDynamic(seqLen)
                            ? ShapedType::kDynamic
                            : (seqLen + chunkSize - 1) / chunkSize;

    // qk_l2norm of a delta kind factored: q and k stay exact in their own
    // type, the state pass's coefficients take k's reciprocal norms and the
    // output q's (LinAttnOps.td). Otherwise normalised q and k in the
    // inputs' type: every chunk op takes them as tensor-core operands
    // (rounded once, as fla's l2norm_fwd does), and the keys' type sets W's
    // and the chunk states' (f32 ones doubled the state pass's traffic and
    // split W; bench/NOTES.md n1).
    std::optional<std::pair<Value, Value>> norms =
        buildFactoredNorms(rewriter, op);
    auto [q, k] =
        norms ? std::pair{op.getQ(), op.getK()}
              : buildQueriesAndKeys(
                    rewriter, op,
                    cast<ShapedType>(op.getK().getType()).getElementType());
    Value qRNorm = norms ? norms->first : Value();
    Value kRNorm = norms ? norms->second : Value();
    // In-chunk cumulative log gates (constant_decay: log(gamma) per token).
    Value logGate = buildLogGate(rewriter, op);
    Value gates;
    if (logGate) {
      auto gateType = cast<RankedTensorType>(logGate.getType());
      gates = ChunkCumsumOp::create(rewriter, loc,
                                    f32Tensor(rewriter, gateType.getShape()),
                                    /*decayed_keys=*/Type(), /*chunk_totals=*/Type(),
                                    logGate, /*keys=*/Value(),
                                    rewriter.getI64IntegerAttr(chunkSize))
                  .getResult();
    }

    Value beta;
    FloatAttr rank1Scale;
    if (const TransitionKindInfo &kind = op.getKindInfo(); kind.hasRank1()) {
      beta = op.getBeta();
      rank1Scale = rewriter.getF32FloatAttr(kind.rank1Scale);
    }
    // The chunk states and the new values only feed the output (Q S_n and
    // P D), so they are stored like the keys (bf16: half the bytes the
    // state pass writes and the output reads). Their rounding is not
    // carried: the state and D stay fp32 inside the state pass, and D is
    // rounded after its cancellation (D = U - W S), not before. A segment
    // scan computes its new values from f32 chunk states, and keeps both
    // f32.
    Type narrowElem = cast<RankedTensorType>(k.getType()).getElementType();
    if (!narrowIntermediates || getRecordedStrategy(op) == Strategy::SegmentScan)
      narrowElem = rewriter.getF32Type();
    auto statesType = RankedTensorType::get(
        {batch, numChunks, numVHeads, K, V}, narrowElem);
    // Without a decay the delta rule's new values telescope on nearly
    // parallel keys with beta near 1 (D_i ~ v_i - v_(i-1)): the output's
    // P D sums a chunk of them back to ~v, and a bf16 D's rounding, 2^-9
    // of each |D_i|, came to 1e-2 of o (bench/NOTES.md p1). Those keep D
    // f32; a decay damps the sum.
    const TransitionKindInfo &kindInfo = op.getKindInfo();
    Type valuesElem = kindInfo.hasRank1() && kindInfo.decay == DecayForm::None
                          ? rewriter.getF32Type()
                          : narrowElem;
    auto newValuesType =
        RankedTensorType::get({batch, seqLen, numVHeads, V}, valuesElem);
    auto statePass = ChunkStatePassOp::create(
        rewriter, loc,
        TypeRange{newValuesType, statesType, op.getFinalState().getType()},
        k, kRNorm, op.getV(), /*w=*/Value(), beta, gates, op.getInitialState(),
        rewriter.getI64IntegerAttr(chunkSize), rank1Scale,
        /*segment_chunks=*/IntegerAttr(), /*decayed_keys=*/UnitAttr());
    // The segment-scan choice travels to linattn-state-pass-to-scan.
    if (Attribute strategy = op->getAttr(kStrategyAttrName))
      statePass->setAttr(kStrategyAttrName, strategy);
    Value output = ChunkOutputOp::create(
        rewriter, loc, op.getOutput().getType(), q, qRNorm, k,
        statePass.getNewValues(), statePass.getChunkStates(), gates,
        /*carries=*/Value(), rewriter.getI64IntegerAttr(chunkSize),
        rewriter.getF32FloatAttr(op.getEffectiveScale()),
        /*segment_chunks=*/IntegerAttr());
    rewriter.replaceOp(op, {output, statePass.getFinalState()});
    return success();
  }

  int64_t chunkSize;
  bool narrowIntermediates;
};

struct LinAttnRecurrenceToChunked
    : impl::LinAttnRecurrenceToChunkedBase<LinAttnRecurrenceToChunked> {
  using Base::Base;

  void runOnOperation() override {
    if (chunkSize <= 0) {
      getOperation()->emitError()
          << "linattn-recurrence-to-chunked: chunk-size must be positive, got "
          << chunkSize.getValue();
      return signalPassFailure();
    }
    int64_t count = 0;
    getOperation()->walk([&](RecurrenceOp op) {
      count += isSelectedFor(op, {Strategy::Chunked, Strategy::SegmentScan});
    });
    RewritePatternSet patterns(&getContext());
    patterns.add<RecurrenceToChunked>(&getContext(), chunkSize,
                                      narrowIntermediates);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    numRewritten += count;
  }
};

} // namespace
} // namespace mlir::linattn
