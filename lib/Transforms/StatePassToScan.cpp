//===- StatePassToScan.cpp - Inter-chunk state pass as a scan -------------===//
//
// Chunk n maps its entering state to the next one by an affine map,
// S_{n+1} = M_n S_n + B_n. The entering states are therefore an exclusive
// scan of those maps from the carry-in (I, S_0), and the final state its
// carry-out: the sequential dependence across chunks becomes an associative
// one (DESIGN.md section 2, "segment scan").
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
#define GEN_PASS_DEF_LINATTNSTATEPASSTOSCAN
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

/// I in every [K, K] slice of a [B, HV, K, K] tensor.
Value buildIdentities(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                      ValueRange dynamicSizes) {
  auto type = RankedTensorType::get(shape, b.getF32Type());
  return tensor::GenerateOp::create(
      b, loc, type, dynamicSizes,
      [&](OpBuilder &nb, Location l, ValueRange ivs) {
        Value diagonal = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::eq, ivs[2], ivs[3]);
        Value one = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1.0f));
        Value zero = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0.0f));
        Value x = arith::SelectOp::create(nb, l, diagonal, one, zero);
        tensor::YieldOp::create(nb, l, x);
      });
}

struct StatePassToScan : OpRewritePattern<ChunkStatePassOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ChunkStatePassOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getBeta())
      return rewriter.notifyMatchFailure(
          op, "rank-1 product form: lower it to WY form first");
    if (!isSelectedFor(op, {Strategy::SegmentScan}))
      return rewriter.notifyMatchFailure(op, "another strategy was chosen");
    if (op.getSegmentChunks())
      return rewriter.notifyMatchFailure(op, "already cut into segments");
    if (op.getDecayedKeys())
      return rewriter.notifyMatchFailure(
          op, "keys decayed for the sequential pass (linattn-fuse-chunk-cumsum)");
    Location loc = op.getLoc();
    auto states = cast<RankedTensorType>(op.getChunkStates().getType());
    int64_t batch = states.getDimSize(0), numChunks = states.getDimSize(1);
    int64_t numVHeads = states.getDimSize(2), K = states.getDimSize(3),
            V = states.getDimSize(4);
    Type f32 = rewriter.getF32Type();
    SmallVector<Value> bOnly;
    if (ShapedType::isDynamic(batch))
      bOnly.push_back(tensor::DimOp::create(rewriter, loc, op.getK(), 0));

    // Per-chunk maps: dense for the WY form, log decays otherwise.
    bool dense = static_cast<bool>(op.getW());
    SmallVector<int64_t> mShape = {batch, numChunks, numVHeads};
    SmallVector<int64_t> mCarry = {batch, numVHeads};
    bool perKey = op.getGates() &&
                  cast<RankedTensorType>(op.getGates().getType()).getRank() == 4;
    if (dense || perKey) {
      mShape.push_back(K);
      mCarry.push_back(K);
    }
    if (dense) {
      mShape.push_back(K);
      mCarry.push_back(K);
    }
    auto transitions = ChunkTransitionsOp::create(
        rewriter, loc,
        TypeRange{RankedTensorType::get(mShape, f32),
                  RankedTensorType::get({batch, numChunks, numVHeads, K, V},
                                        f32)},
        op.getK(), op.getU(), op.getW(), op.getGates(), op.getChunkSizeAttr());

    Value mInit = dense ? buildIdentities(rewriter, loc, mCarry, bOnly)
                        : buildZeros(rewriter, loc, mCarry, bOnly);
    SmallVector<Value> inputs = {transitions.getTransitions(),
                                 transitions.getOffsets()};
    SmallVector<Value> inits = {mInit, op.getInitialState()};
    SmallVector<Type> resultTypes = {inputs[0].getType(), inputs[1].getType(),
                                     mInit.getType(),
                                     op.getInitialState().getType()};
    auto scan = ScanOp::create(rewriter, loc, resultTypes, inputs, inits,
                               rewriter.getI64IntegerAttr(1),
                               rewriter.getUnitAttr(), /*reverse=*/nullptr);
    if (dense)
      buildDenseAffineCombiner(rewriter, scan);
    else
      buildDecayCombiner(rewriter, scan, ScanDecay::Log);

    // The new values come from the fp32 states (D = U - W S cancels); the
    // state pass's chunk_states and new_values results may be narrower
    // (they only feed the output), and are then rounded from them.
    Value chunkStates = scan.getOutputs()[1];
    auto wantStates = cast<RankedTensorType>(op.getChunkStates().getType());
    auto f32States = wantStates.clone(f32);
    if (chunkStates.getType() != f32States)
      chunkStates = tensor::CastOp::create(rewriter, loc, f32States, chunkStates);
    auto wantNewValues = cast<RankedTensorType>(op.getNewValues().getType());
    Value newValues = ChunkNewValuesOp::create(
        rewriter, loc, wantNewValues.clone(f32), op.getU(), op.getW(),
        chunkStates, op.getChunkSizeAttr());
    if (!wantNewValues.getElementType().isF32())
      newValues = arith::TruncFOp::create(rewriter, loc, wantNewValues, newValues);
    if (!wantStates.getElementType().isF32())
      chunkStates = arith::TruncFOp::create(rewriter, loc, wantStates, chunkStates);
    Value finalState = scan.getCarries()[1];
    if (finalState.getType() != op.getFinalState().getType())
      finalState = tensor::CastOp::create(
          rewriter, loc, op.getFinalState().getType(), finalState);
    rewriter.replaceOp(op, {newValues, chunkStates, finalState});
    return success();
  }
};

struct LinAttnStatePassToScan
    : impl::LinAttnStatePassToScanBase<LinAttnStatePassToScan> {
  void runOnOperation() override {
    int64_t count = 0;
    bool splitW = false;
    getOperation()->walk([&](ChunkStatePassOp op) {
      if (op.getBeta() || op.getDecayedKeys() ||
          !isSelectedFor(op, {Strategy::SegmentScan}))
        return;
      // chunk_transitions and chunk_new_values take W whole.
      if (op.getW() && isSplitW(op.getW().getType())) {
        op.emitOpError() << "a split 'w' (hi + lo parts) cannot become a "
                            "segment scan: its transitions and new values "
                            "take W [B, T, HV, K] whole";
        splitW = true;
        return;
      }
      ++count;
    });
    if (splitW)
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    patterns.add<StatePassToScan>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    numRewritten += count;
  }
};

} // namespace
} // namespace mlir::linattn
