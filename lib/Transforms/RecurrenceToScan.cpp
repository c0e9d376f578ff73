//===- RecurrenceToScan.cpp - Diagonal recurrences as a token scan --------===//
//
// S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T is the affine map (g_t, k_t v_t^T)
// applied to S_{t-1}. Affine maps compose associatively,
//
//   (g1, B1) then (g2, B2) = (g1 + g2, exp(g2) B1 + B2),
//
// so every S_t is an inclusive scan of the token maps from the carry-in
// (0, S_0), and o_t = scale S_t^T q_t a contraction of the scanned states.
// A constant decay gamma is scanned as it is, (m1 m2, m2 B1 + B2) from
// (1, S_0).
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Transforms/Strategy.h"

#include "RecurrenceUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNRECURRENCETOSCAN
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

using utils::IteratorType;

Value widenToF32(OpBuilder &b, Location loc, Value x) {
  return x.getType().isF32() ? x : arith::ExtFOp::create(b, loc, b.getF32Type(), x);
}

struct RecurrenceToScan : OpRewritePattern<RecurrenceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RecurrenceOp op,
                                PatternRewriter &rewriter) const override {
    if (!isSelectedFor(op, {Strategy::Scan}))
      return rewriter.notifyMatchFailure(op, "another strategy was chosen");
    if (!op.getKindInfo().isDiagonal())
      return rewriter.notifyMatchFailure(
          op, "a delta rule composes to a dense K x K transition");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    int64_t batch = op.getBatchSize(), seqLen = op.getSeqLen();
    int64_t numVHeads = op.getNumVHeads(), K = op.getKeyDim(),
            V = op.getValueDim();
    int64_t group = numVHeads / op.getNumQKHeads();
    SmallVector<Value> bt = batchAndSeqSizes(rewriter, op);
    SmallVector<Value> bOnly;
    if (ShapedType::isDynamic(batch))
      bOnly.push_back(bt.front());
    // The scan's products are f32 element-wise ones: normalised q, k in f32.
    auto [q, k] = buildQueriesAndKeys(rewriter, op, rewriter.getF32Type());

    // kv[b, t, hv, i, j] = k[b, t, hv / G, i] * v[b, t, hv, j]
    AffineExpr d0, d1, d2, d3, d4;
    bindDims(ctx, d0, d1, d2, d3, d4);
    auto map5 = [&](ArrayRef<AffineExpr> r) {
      return AffineMap::get(5, 0, r, ctx);
    };
    auto kvType = RankedTensorType::get({batch, seqLen, numVHeads, K, V},
                                        rewriter.getF32Type());
    Value kvInit = tensor::EmptyOp::create(rewriter, loc, kvType, bt);
    Value kv =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{kvType}, ValueRange{k, op.getV()},
            ValueRange{kvInit},
            ArrayRef<AffineMap>{map5({d0, d1, d2.floorDiv(group), d3}),
                                map5({d0, d1, d2, d4}),
                                map5({d0, d1, d2, d3, d4})},
            SmallVector<IteratorType>(5, IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value p = arith::MulFOp::create(b, l, widenToF32(b, l, args[0]),
                                              widenToF32(b, l, args[1]));
              linalg::YieldOp::create(b, l, p);
            })
            .getResult(0);

    // The scan: elements (g, kv) with the log gate g, (gamma, kv) for
    // constant decays (exact as given: exp(log gamma) is not, and its
    // rounding compounds over the 1 / (1 - gamma) tokens a state remembers)
    // or, without a gate, kv alone.
    bool constantDecay = op.getKindInfo().decay == DecayForm::Constant;
    Value gate = constantDecay ? buildConstantDecays(rewriter, op)
                               : buildLogGate(rewriter, op);
    ScanDecay form = !gate          ? ScanDecay::None
                     : constantDecay ? ScanDecay::Multiplicative
                                     : ScanDecay::Log;
    SmallVector<Value> inputs, inits;
    if (gate) {
      auto gateType = cast<RankedTensorType>(gate.getType());
      SmallVector<int64_t> carryShape = {batch, numVHeads};
      if (gateType.getRank() == 4)
        carryShape.push_back(K);
      inputs.push_back(gate);
      // The identity map: log gate 0, or decay 1.
      inits.push_back(buildZeros(rewriter, loc, carryShape, bOnly,
                                 constantDecay ? 1.0f : 0.0f));
    }
    inputs.push_back(kv);
    inits.push_back(op.getInitialState());
    SmallVector<Type> resultTypes;
    for (Value v : inputs)
      resultTypes.push_back(v.getType());
    for (Value v : inits)
      resultTypes.push_back(v.getType());
    auto scan = ScanOp::create(rewriter, loc, resultTypes, inputs, inits,
                               rewriter.getI64IntegerAttr(1),
                               /*exclusive=*/nullptr, /*reverse=*/nullptr);
    buildDecayCombiner(rewriter, scan, form);
    rewriter.setInsertionPointAfter(scan);

    // o[b, t, hv, j] = scale * sum_i S[b, t, hv, i, j] q[b, t, hv / G, i]
    Value states = scan.getOutputs().back();
    Value acc = buildZeros(rewriter, loc, {batch, seqLen, numVHeads, V}, bt);
    auto accType = cast<RankedTensorType>(acc.getType());
    Value contracted =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{accType}, ValueRange{states, q},
            ValueRange{acc},
            ArrayRef<AffineMap>{map5({d0, d1, d2, d4, d3}),
                                map5({d0, d1, d2.floorDiv(group), d4}),
                                map5({d0, d1, d2, d3})},
            {IteratorType::parallel, IteratorType::parallel,
             IteratorType::parallel, IteratorType::parallel,
             IteratorType::reduction},
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value p = arith::MulFOp::create(b, l, args[0],
                                              widenToF32(b, l, args[1]));
              Value sum = arith::AddFOp::create(b, l, args[2], p);
              linalg::YieldOp::create(b, l, sum);
            })
            .getResult(0);
    auto outType = cast<RankedTensorType>(op.getOutput().getType());
    Value outInit = tensor::EmptyOp::create(
        rewriter, loc,
        RankedTensorType::get({batch, seqLen, numVHeads, V},
                              outType.getElementType()),
        bt);
    Value scale = arith::ConstantOp::create(
        rewriter, loc, rewriter.getF32FloatAttr(op.getEffectiveScale()));
    AffineMap id4 = rewriter.getMultiDimIdentityMap(4);
    Value output =
        linalg::GenericOp::create(
            rewriter, loc, TypeRange{outInit.getType()}, ValueRange{contracted},
            ValueRange{outInit}, ArrayRef<AffineMap>{id4, id4},
            SmallVector<IteratorType>(4, IteratorType::parallel),
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value o = arith::MulFOp::create(b, l, scale, args[0]);
              if (o.getType() != args[1].getType())
                o = arith::TruncFOp::create(b, l, args[1].getType(), o);
              linalg::YieldOp::create(b, l, o);
            })
            .getResult(0);
    if (output.getType() != op.getOutput().getType())
      output = tensor::CastOp::create(rewriter, loc, op.getOutput().getType(),
                                      output);
    rewriter.replaceOp(op, {output, scan.getCarries().back()});
    return success();
  }

};

struct LinAttnRecurrenceToScan
    : impl::LinAttnRecurrenceToScanBase<LinAttnRecurrenceToScan> {
  using Base::Base;

  void runOnOperation() override {
    int64_t count = 0;
    WalkResult walk = getOperation()->walk([&](RecurrenceOp op) {
      if (!isSelectedFor(op, {Strategy::Scan}))
        return WalkResult::advance();
      if (op.getKindInfo().isDiagonal()) {
        ++count;
        return WalkResult::advance();
      }
      if (!requireAll)
        return WalkResult::advance();
      op.emitOpError()
          << "kind '" << stringifyTransitionKind(op.getKind())
          << "' has no token-scan form: its composed transition is a dense "
             "K x K matrix (use strategy 'chunked')";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns.add<RecurrenceToScan>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    numRewritten += count;
  }
};

} // namespace
} // namespace mlir::linattn
