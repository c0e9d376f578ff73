//===- LinalgToGPU.cpp - Host linalg ops on buffers to mapped loops -------===//
//
// The scan forms leave linalg ops on the host once bufferized: the outer
// products k_t v_t^T a token scan folds, the contraction o_t = S_t^T q_t,
// fills, casts, a tensor.generate's linalg.map. Each becomes the
// upstream scf.parallel nest over its parallel dimensions (reductions stay
// sequential inside, in order), collapsed into one dimension and tiled by
// 256: the tiles are blocks, their elements threads
// (convert-linattn-to-gpu then makes them kernels). One thread per output
// element; consecutive threads take consecutive elements of the innermost
// dimension, so their accesses coalesce.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Conversion/Passes.h"

#include "KernelUtils.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>

namespace mlir::linattn {
#define GEN_PASS_DEF_CONVERTLINATTNLINALGTOGPU
#include "LinAttn/Conversion/Passes.h.inc"

namespace {

constexpr int64_t kThreadsPerBlock = 256;

/// The parallel loop `op` becomes: collapsed to one dimension, then tiles of
/// kThreadsPerBlock mapped to blocks, their elements to threads.
LogicalResult mapToBlocksAndThreads(RewriterBase &rewriter,
                                    scf::ParallelOp op) {
  if (op.getNumLoops() > 1) {
    Operation *after = op->getNextNode();
    std::vector<unsigned> all(op.getNumLoops());
    std::iota(all.begin(), all.end(), 0);
    rewriter.setInsertionPoint(op);
    collapseParallelLoops(rewriter, op, {all});
    op = cast<scf::ParallelOp>(after->getPrevNode());
  }
  auto [blocks, threads] =
      scf::tileParallelLoop(op, {kThreadsPerBlock}, /*noMinMaxBounds=*/true);
  MLIRContext *ctx = op.getContext();
  auto identity = AffineMap::getMultiDimIdentityMap(1, ctx);
  auto dimension = [&](gpu::Processor processor) {
    return gpu::ParallelLoopDimMappingAttr::get(ctx, processor, identity,
                                                identity);
  };
  if (failed(gpu::setMappingAttr(blocks, {dimension(gpu::Processor::BlockX)})) ||
      failed(gpu::setMappingAttr(threads,
                                 {dimension(gpu::Processor::ThreadX)})))
    return failure();
  return success();
}

struct ConvertLinAttnLinalgToGPU
    : impl::ConvertLinAttnLinalgToGPUBase<ConvertLinAttnLinalgToGPU> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (!insideKernel(op) && op.hasPureBufferSemantics())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::LinalgLoops> loops =
          linalg::linalgOpToParallelLoops(rewriter, op);
      if (failed(loops)) {
        op->emitOpError() << "could not be lowered to parallel loops for the GPU";
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
      auto parallel = loops->empty()
                          ? scf::ParallelOp()
                          : dyn_cast<scf::ParallelOp>(loops->front());
      if (!parallel) {
        // A zero-dimensional op, or one whose outermost loop is a reduction:
        // one thread walks it.
        if (loops->empty())
          continue;
        OpBuilder b(loops->front());
        Location loc = loops->front()->getLoc();
        Value zero = arith::ConstantIndexOp::create(b, loc, 0);
        Value one = arith::ConstantIndexOp::create(b, loc, 1);
        parallel = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                           ValueRange{one}, ValueRange{one});
        loops->front()->moveBefore(parallel.getBody()->getTerminator());
      }
      if (failed(mapToBlocksAndThreads(rewriter, parallel))) {
        parallel.emitOpError() << "could not be mapped to GPU blocks and threads";
        return signalPassFailure();
      }
      ++numMapped;
    }
  }
};

} // namespace
} // namespace mlir::linattn
