//===- FuseChunkCumsum.cpp - Fold chunk cumsums into their first reader ---===//
//
// The fusion decisions of the GPU kernels, made on the algorithm ops: a
// scalar chunk_cumsum read first by a UT transform becomes that
// transform's raw gates; a per-key chunk_cumsum read by a state pass
// without `beta` (GLA's, or KDA's in WY form) also decays that state
// pass's keys.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNFUSECHUNKCUMSUM
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

/// Whether every user of `cumsum` but `first` comes after `first` in
/// `first`'s block, so that `first` may compute what they read.
bool readFirstBy(ChunkCumsumOp cumsum, Operation *first) {
  return llvm::all_of(cumsum->getUsers(), [&](Operation *user) {
    return user == first ||
           (user->getBlock() == first->getBlock() && first->isBeforeInBlock(user));
  });
}

/// G = chunk_cumsum(g) [B, T, HV] read first by `op`: op sums g itself.
///   %G = chunk_cumsum %g; ut_transform ... gates(%G)
///   -> %w, %u, %G = ut_transform ... raw_gates(%g)
bool foldIntoUTTransform(UTTransformOp op, RewriterBase &rewriter) {
  auto cumsum = op.getGates() ? op.getGates().getDefiningOp<ChunkCumsumOp>()
                              : ChunkCumsumOp();
  if (!cumsum || cumsum.getKeys() ||
      cast<ShapedType>(cumsum.getResult().getType()).getRank() != 3 ||
      cumsum.getChunkSize() != op.getChunkSize() || !readFirstBy(cumsum, op))
    return false;
  rewriter.setInsertionPoint(op);
  auto fused = UTTransformOp::create(
      rewriter, op.getLoc(),
      TypeRange{op.getW().getType(), op.getU().getType(),
                cumsum.getResult().getType()},
      op.getK(), op.getKRnorm(), op.getV(), op.getBeta(), /*gates=*/Value(),
      cumsum.getGate(),
      op.getChunkSizeAttr(), op.getRank1ScaleAttr(), op.getKL2normAttr());
  fused->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  rewriter.replaceOp(cumsum, fused.getCumulativeGates());
  rewriter.replaceOp(op, fused.getResults().take_front(2));
  return true;
}

/// G = chunk_cumsum(g) [B, T, HV, K] read by a state pass without `beta`
/// or segments: the cumsum also returns the state pass's keys decayed to
/// their chunk's end and the chunk totals. It moves to just before the
/// state pass where that reads G first (GLA), else stays where it is if
/// the keys are defined there (KDA: the UT transform reads G first).
///   %G = chunk_cumsum %g; chunk_state_pass k(%k) ... gates(%G)
///   -> %G, %kd, %gc = chunk_cumsum %g keys(%k)
///      chunk_state_pass k(%kd) ... gates(%gc) {decayed_keys}
bool decayKeysInCumsum(ChunkCumsumOp cumsum, DominanceInfo &dominance,
                       RewriterBase &rewriter) {
  auto gateType = cast<RankedTensorType>(cumsum.getResult().getType());
  if (cumsum.getKeys() || gateType.getRank() != 4)
    return false;
  ChunkStatePassOp statePass;
  for (Operation *user : cumsum->getUsers())
    if (auto pass = dyn_cast<ChunkStatePassOp>(user))
      if (pass.getGates() == cumsum.getResult() && !pass.getSegmentChunks() &&
          !pass.getBeta() && !pass.getDecayedKeys() &&
          pass.getChunkSize() == cumsum.getChunkSize() && !statePass)
        statePass = pass;
  if (!statePass)
    return false;
  bool readFirst = readFirstBy(cumsum, statePass);
  if (!readFirst && !dominance.properlyDominates(statePass.getK(), cumsum))
    return false;
  auto keyType = cast<RankedTensorType>(statePass.getK().getType());
  auto statesType = cast<RankedTensorType>(statePass.getChunkStates().getType());
  // K' is per value head, in the keys' type; G_C per chunk.
  auto decayedType = RankedTensorType::get(gateType.getShape(),
                                           keyType.getElementType());
  auto totalsType = RankedTensorType::get(
      {gateType.getDimSize(0), statesType.getDimSize(1), gateType.getDimSize(2),
       gateType.getDimSize(3)},
      rewriter.getF32Type());
  rewriter.setInsertionPoint(readFirst ? statePass.getOperation()
                                       : cumsum.getOperation());
  auto fused = ChunkCumsumOp::create(rewriter, cumsum.getLoc(), gateType,
                                     decayedType, totalsType, cumsum.getGate(),
                                     statePass.getK(), cumsum.getChunkSizeAttr());
  rewriter.replaceOp(cumsum, fused.getResult());
  rewriter.modifyOpInPlace(statePass, [&] {
    statePass.getKMutable().assign(fused.getDecayedKeys());
    statePass.getGatesMutable().assign(fused.getChunkTotals());
    statePass.setDecayedKeys(true);
  });
  return true;
}

struct LinAttnFuseChunkCumsum
    : impl::LinAttnFuseChunkCumsumBase<LinAttnFuseChunkCumsum> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Collected before each rewrite, which erases ops: the UT folds erase
    // scalar cumsums, so the per-key ones are collected after them.
    SmallVector<UTTransformOp> transforms;
    getOperation()->walk([&](UTTransformOp op) { transforms.push_back(op); });
    for (UTTransformOp op : transforms)
      numIntoUTTransform += foldIntoUTTransform(op, rewriter);
    SmallVector<ChunkCumsumOp> cumsums;
    getOperation()->walk([&](ChunkCumsumOp op) { cumsums.push_back(op); });
    DominanceInfo dominance(getOperation());
    for (ChunkCumsumOp op : cumsums)
      numDecayingKeys += decayKeysInCumsum(op, dominance, rewriter);
  }
};

} // namespace
} // namespace mlir::linattn
