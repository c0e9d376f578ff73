//===- SegmentCarriesToGPU.cpp - linattn.segment_carries to a kernel --------===//
//
// C_{s+1} = exp(L_s) C_s + E_s: a thread per state element, sequential over
// the segments.
//
//===----------------------------------------------------------------------===//

#include "ChunkedToGPUPatterns.h"
#include "KernelSupport.h"
#include "Kernel/Gates.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

namespace {

LogicalResult lowerSegmentCarries(SegmentCarriesOp op, RewriterBase &rewriter) {
  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  LoopEmitter e(b);
  Value ends = e.toBuffer(op.getEnds());
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  int64_t numVHeads = dimOf(op.getEnds(), 2), K = dimOf(op.getEnds(), 3);
  int64_t V = dimOf(op.getEnds(), 4);
  int64_t chunk = op.getChunkSize(), segmentChunks = op.getSegmentChunks();
  Value batch = e.dim(ends, 0), numSegs = e.dim(ends, 1);
  Value hvDim = e.index(numVHeads);
  Value carries = e.allocFor(op.getCarries().getType(),
                             {batch, numSegs, hvDim, e.index(K), e.index(V)});
  Value finalState = e.allocFor(op.getFinalState().getType(),
                                {batch, hvDim, e.index(K), e.index(V)});
  Value seqLen = gates ? e.dim(gates, 1) : Value();
  Value numChunks =
      gates ? arith::CeilDivUIOp::create(b, seqLen, e.index(chunk)).getResult()
            : Value();
  int64_t elements = K * V;
  emitLaunch(b, {e.index(llvm::divideCeil(elements, kThreads)), hvDim, batch},
             /*smemBytes=*/0, [&](KernelEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value hv = body->getArgument(1), bIdx = body->getArgument(2);
    Value idx = e.addIndex(e.mulIndex(body->getArgument(0), e.index(kThreads)), k.tid);
    // Every lane stays for the shuffles; the last block's spare threads
    // read element 0 and store nothing.
    Value inRange = k.ult(idx, e.index(elements));
    Value element = k.select(inRange, idx, e.index(0));
    Value row = arith::DivUIOp::create(b, element, e.index(V));
    Value col = arith::RemUIOp::create(b, element, e.index(V));
    auto storeIfInRange = [&](Value x, Value dst, SmallVector<Value> indices) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(scf::IfOp::create(b, inRange, false).thenBlock());
      e.storeFromF32(x, dst, indices);
    };
    ValueRange last = e.forEachReduce(
        numSegs, {e.f32(0.0f)}, [&](Value s, ValueRange c) -> SmallVector<Value> {
      storeIfInRange(c[0], carries, {bIdx, s, hv, row, col});
      Value decay = e.f32(1.0f);
      if (gates) {
        Value m0 = e.mulIndex(s, e.index(segmentChunks));
        Value m1 = e.minIndex(e.addIndex(m0, e.index(segmentChunks)), numChunks);
        decay = k.exp(sumChunkTotals(k, gates, bIdx, hv, m0, m1, segmentChunks,
                                     chunk, seqLen));
      }
      Value end = e.loadF32(ends, {bIdx, s, hv, row, col});
      return {e.add(e.mul(decay, c[0]), end)};
    });
    storeIfInRange(last[0], finalState, {bIdx, hv, row, col});
  });
  e.replaceWithBuffers(rewriter, op, {carries, finalState});
  return success();
}

struct SegmentCarriesToGPU : OpRewritePattern<SegmentCarriesOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SegmentCarriesOp op,
                                PatternRewriter &rewriter) const override {
    return lowerSegmentCarries(op, rewriter);
  }
};

} // namespace

void populateSegmentCarriesToGPUPatterns(RewritePatternSet &patterns,
                                 const ChunkedLoweringContext &) {
  patterns.add<SegmentCarriesToGPU>(patterns.getContext());
}

} // namespace mlir::linattn::kernel
