//===- NarrowStateBlocks.cpp - Narrow state-pass blocks for few chains ----===//
//
// The state pass is B * HV sequential chains over the chunks, and its GPU
// kernel gives each chain V / 32 blocks of four warps, one block an SM
// (their staged inputs fill its shared memory). Where those blocks would
// fill under half the SMs (one long sequence, few heads), blocks of 16
// columns and two warps run twice as many chains side by side, each
// chunk's step on half the columns; where the blocks fill the SMs they
// take twice the waves (bench/NOTES.md e1). B is known at run time, so a
// state pass the segments cannot cut (a rank-1 term or per-key gates:
// linattn-segment-chunk-states takes the scalar ones) keeps both widths
// behind an scf.if (the backward's reverse pass keeps 32 columns: its
// 16-column kernel is slower there, bench/NOTES.md w2):
//   B * HV * V <= max-state-columns ? 16-column blocks : 32-column blocks.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "RecurrenceUtils.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNNARROWSTATEBLOCKS
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

using chunked_kernels::kNarrowStateColumns;
using chunked_kernels::kStateColumnsAttrName;

/// Whether `op`'s transitions are not scalars, so that segments cannot cut
/// its chain (a rank-1 term, or per-key gates).
bool hasDenseOrPerKeyTransitions(ChunkStatePassOp op) {
  return op.getW() || op.getBeta() ||
         (op.getGates() &&
          cast<ShapedType>(op.getGates().getType()).getRank() == 4);
}

/// `op` (a state pass whose value head sizes are those of `values` [B, T,
/// HV, V]) in both widths behind an scf.if on B * HV * V.
void narrowAtRunTime(Operation *op, Value values, int64_t maxStateColumns) {
  OpBuilder b(op);
  branchOnStateColumns(
      op, buildFewStateColumns(b, op->getLoc(), values, maxStateColumns),
      /*markThen=*/true, kNarrowStateColumns);
}

struct LinAttnNarrowStateBlocks
    : impl::LinAttnNarrowStateBlocksBase<LinAttnNarrowStateBlocks> {
  using Base::Base;

  void runOnOperation() override {
    if (int64_t(maxStateColumns) <= 0) {
      getOperation()->emitError()
          << "linattn-narrow-state-blocks: max-state-columns must be "
             "positive, got "
          << int64_t(maxStateColumns);
      return signalPassFailure();
    }
    // (op, its [B, T, HV, V] values), for every pass not yet given a width.
    SmallVector<std::pair<Operation *, Value>> candidates;
    auto unmarked = [](Operation *op) {
      return !op->hasAttr(kStateColumnsAttrName);
    };
    getOperation()->walk([&](Operation *op) {
      if (auto pass = dyn_cast<ChunkStatePassOp>(op)) {
        if (unmarked(op) && !pass.getSegmentChunks() &&
            hasDenseOrPerKeyTransitions(pass))
          candidates.push_back({op, pass.getU()});
      }
    });
    for (auto [op, values] : candidates) {
      // Not where even B = 1 has too many columns (HV * V alone over the
      // limit: the narrow form would never run).
      auto type = cast<RankedTensorType>(values.getType());
      if (type.isDynamicDim(2) || type.isDynamicDim(3) ||
          chunked_kernels::fewChainsForm(
              /*scalarTransitions=*/false, type.getDimSize(2),
              type.getDimSize(3), maxStateColumns) !=
              chunked_kernels::FewChainsForm::NarrowBlocks)
        continue;
      narrowAtRunTime(op, values, maxStateColumns);
      ++numNarrowed;
    }
  }
};

} // namespace
} // namespace mlir::linattn
