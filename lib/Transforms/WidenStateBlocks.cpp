//===- WidenStateBlocks.cpp - Wide state-pass blocks for many chains ------===//
//
// The state pass's GPU kernel gives each of its B * HV chains V / 32
// blocks of four warps, one block an SM, each chunk's step a latency-bound
// chain of four warps. Where those blocks take more than one wave (grouped
// value heads, larger batches), blocks of 64 columns and eight warps take
// half the waves, each chunk's step about 1.6x as long (the warps of two
// column-group pairs interleave on the SM), so one wave of them beats two
// of 32 columns; where the 32-column blocks fit one wave they lose
// (bench/NOTES.md w3). B is known at run time, so every state pass not
// yet given a width (and not segmented, a form for few chains) keeps both
// behind an scf.if:
//   B * HV * V <= max-state-columns ? 32-column blocks : 64-column blocks.
// The 64-column width is a request: where its shared memory does not fit
// the kernel stores its outputs from registers, and where even that does
// not, keeps 32 columns (StatePassPlan).
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "RecurrenceUtils.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNWIDENSTATEBLOCKS
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

using chunked_kernels::kStateColumnsAttrName;
using chunked_kernels::kWideStateColumns;

void widenAtRunTime(ChunkStatePassOp op, int64_t maxStateColumns) {
  OpBuilder b(op);
  branchOnStateColumns(
      op, buildFewStateColumns(b, op.getLoc(), op.getU(), maxStateColumns),
      /*markThen=*/false, kWideStateColumns);
}

struct LinAttnWidenStateBlocks
    : impl::LinAttnWidenStateBlocksBase<LinAttnWidenStateBlocks> {
  using Base::Base;

  void runOnOperation() override {
    if (int64_t(maxStateColumns) <= 0) {
      getOperation()->emitError()
          << "linattn-widen-state-blocks: max-state-columns must be "
             "positive, got "
          << int64_t(maxStateColumns);
      return signalPassFailure();
    }
    SmallVector<ChunkStatePassOp> candidates;
    getOperation()->walk([&](ChunkStatePassOp op) {
      auto type = cast<RankedTensorType>(op.getU().getType());
      if (!op->hasAttr(kStateColumnsAttrName) && !op.getSegmentChunks() &&
          !type.isDynamicDim(2) && !type.isDynamicDim(3) &&
          chunked_kernels::hasWideStateBlocks(type.getDimSize(3)))
        candidates.push_back(op);
    });
    for (ChunkStatePassOp op : candidates) {
      widenAtRunTime(op, maxStateColumns);
      ++numWidened;
    }
  }
};

} // namespace
} // namespace mlir::linattn
