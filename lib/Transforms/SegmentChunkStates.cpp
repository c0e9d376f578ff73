//===- SegmentChunkStates.cpp - The state pass cut into segments ----------===//
//
// With scalar transitions a_n = exp(G_C(n)) the state pass
//   S_{n+1} = a_n S_n + B_n
// is a linear recurrence whose composition over a run of chunks is again a
// scalar times a state. Cutting the chunks into segments of M, each run
// from zero gives local states L_n with
//   S_n = L_n + exp(sum_{m = sM}^{n-1} G_C(m)) C_s,
//   C_0 = 0 (S_0 is in segment 0's local states),
//   C_{s+1} = exp(sum over segment s of G_C) C_s + E_s,
// E_s the local state at segment s's end (DESIGN.md section 2's scan over
// chunks, two levels deep). The chunk states' bytes are unchanged; the
// carries are one state per segment.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNSEGMENTCHUNKSTATES
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

/// Whether `op` can be cut: not yet segmented, scalar transitions (no
/// rank-1 term, no per-key gates), and chunk states read only by outputs
/// of its chunk size and gates (which then take the carries).
bool isSegmentable(ChunkStatePassOp op) {
  if (op.getSegmentChunks() || op.getW() || op.getBeta() ||
      (op.getGates() && cast<ShapedType>(op.getGates().getType()).getRank() == 4))
    return false;
  return llvm::all_of(op.getChunkStates().getUsers(), [&](Operation *user) {
    auto output = dyn_cast<ChunkOutputOp>(user);
    return output && !output.getCarries() &&
           output.getChunkSize() == op.getChunkSize() &&
           output.getGates() == op.getGates();
  });
}

void segment(ChunkStatePassOp op, int64_t segmentChunks) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto finalType = cast<RankedTensorType>(op.getFinalState().getType());
  auto statesType = cast<RankedTensorType>(op.getChunkStates().getType());
  int64_t ns = segmentCount(statesType.getDimSize(1), segmentChunks);
  // [B, NS, HV, K, V]: ends in f32, carries in the chunk states' type (they
  // only feed the outputs, as the chunk states do).
  auto segmentType = [&](Type elem) {
    return RankedTensorType::get({finalType.getDimSize(0), ns,
                                  finalType.getDimSize(1),
                                  finalType.getDimSize(2),
                                  finalType.getDimSize(3)},
                                 elem);
  };
  IntegerAttr segmentAttr = b.getI64IntegerAttr(segmentChunks);
  auto local = ChunkStatePassOp::create(
      b, loc,
      TypeRange{op.getNewValues().getType(), statesType,
                segmentType(finalType.getElementType())},
      op.getK(), op.getU(), /*w=*/Value(), /*beta=*/Value(), op.getGates(),
      op.getInitialState(), op.getChunkSizeAttr(), /*rank1_scale=*/FloatAttr(),
      segmentAttr);
  local->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  auto carries = SegmentCarriesOp::create(
      b, loc, TypeRange{segmentType(statesType.getElementType()), finalType},
      local.getFinalState(), op.getGates(), op.getChunkSizeAttr(), segmentAttr);
  for (Operation *user : llvm::make_early_inc_range(op.getChunkStates().getUsers())) {
    auto output = cast<ChunkOutputOp>(user);
    OpBuilder ob(output);
    auto segmented = ChunkOutputOp::create(
        ob, output.getLoc(), output.getOutput().getType(), output.getQ(),
        output.getK(), local.getNewValues(), local.getChunkStates(),
        output.getGates(), carries.getCarries(), output.getChunkSizeAttr(),
        output.getScaleAttr(), segmentAttr);
    segmented->setDiscardableAttrs(output->getDiscardableAttrDictionary());
    output.getOutput().replaceAllUsesWith(segmented.getOutput());
    output.erase();
  }
  op.getNewValues().replaceAllUsesWith(local.getNewValues());
  op.getFinalState().replaceAllUsesWith(carries.getFinalState());
  op.erase();
}

struct LinAttnSegmentChunkStates
    : impl::LinAttnSegmentChunkStatesBase<LinAttnSegmentChunkStates> {
  using Base::Base;

  void runOnOperation() override {
    if (int64_t(segmentChunks) <= 0) {
      getOperation()->emitError()
          << "linattn-segment-chunk-states: segment-chunks must be positive, got "
          << int64_t(segmentChunks);
      return signalPassFailure();
    }
    SmallVector<ChunkStatePassOp> candidates;
    getOperation()->walk([&](ChunkStatePassOp op) {
      if (isSegmentable(op))
        candidates.push_back(op);
    });
    for (ChunkStatePassOp op : candidates)
      segment(op, segmentChunks);
    numSegmented += candidates.size();
  }
};

} // namespace
} // namespace mlir::linattn
