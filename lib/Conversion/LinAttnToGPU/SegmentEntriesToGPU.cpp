//===- SegmentEntriesToGPU.cpp - linattn.segment_entries to a kernel -------===//
//
// C_0 = S_0, C_{s+1} = A_s C_s + E_s: a block per kEntryColumns columns of
// one (sequence, value head), sequential over the segments. Thread (r,
// part) owns C[r][4 part .. 4 part + 3] in registers; the block's C goes
// through shared memory for the product, and A_s through one of two
// shared stages, copied by cp.async while step s - 1 computes (loaded from
// global memory in the step, A_s's rows took ~11 us a step: their loads
// waited one after another, bench/NOTES.md s1). K * K * kEntryColumns
// fp32 products a step.
//
//===----------------------------------------------------------------------===//

#include "ChunkedToGPUPatterns.h"
#include "Kernel/KernelEmitter.h"
#include "KernelSupport.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

namespace {

/// Columns of C a block carries: two threads a row, four columns each.
constexpr int64_t kEntryColumns = 8;
constexpr int64_t kEntryColumnsPerThread = 4;

LogicalResult lowerSegmentEntries(SegmentEntriesOp op,
                                  const GPUTargetInfo &target,
                                  RewriterBase &rewriter) {
  int64_t numVHeads = dimOf(op.getInitialState(), 1);
  int64_t K = dimOf(op.getInitialState(), 2), V = dimOf(op.getInitialState(), 3);
  if (V % kEntryColumns != 0 || K % kEntryColumnsPerThread != 0)
    return op.emitOpError() << "GPU segment entries take K a multiple of "
                            << kEntryColumnsPerThread << " and V of "
                            << kEntryColumns << ", got K = " << K
                            << ", V = " << V;
  // Shared memory: C [K][8], then two stages of A_s [K][K + 4] (rows
  // padded by 16 bytes, so that the 16-byte loads of a warp's 16 rows touch
  // distinct banks): K <= 160 on sm_90.
  int64_t cBytes = K * kEntryColumns * 4;
  int64_t aStride = K + 4, aBytes = K * aStride * 4;
  if (failed(checkSharedBytes(op, "segment entries", cBytes + 2 * aBytes,
                              target)))
    return failure();
  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  LoopEmitter e(b);
  Value maps = e.toBuffer(op.getMaps());
  Value init = e.toBuffer(op.getInitialState());
  Value batch = e.dim(maps, 0), numSegs = e.dim(maps, 1);
  Value hvDim = e.index(numVHeads);
  Value entries = e.allocFor(op.getEntries().getType(),
                             {batch, numSegs, hvDim, e.index(K), e.index(V)});
  Value finalState = e.allocFor(op.getFinalState().getType(),
                                {batch, hvDim, e.index(K), e.index(V)});
  int64_t parts = kEntryColumns / kEntryColumnsPerThread;
  int64_t threads = K * parts;
  auto f32x4 = VectorType::get({kEntryColumnsPerThread}, b.getF32Type());
  emitLaunch(b, {e.index(V / kEntryColumns), hvDim, batch},
             /*smemBytes=*/cBytes + 2 * aBytes, [&](KernelEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value hv = body->getArgument(1), bIdx = body->getArgument(2);
    Value v0 = e.mulIndex(body->getArgument(0), e.index(kEntryColumns));
    Value row = arith::DivUIOp::create(b, k.tid, e.index(parts));
    Value c0 = e.mulIndex(arith::RemUIOp::create(b, k.tid, e.index(parts)),
                          e.index(kEntryColumnsPerThread));
    Value col = e.addIndex(v0, c0);
    Value shared = k.tile(0, K, kEntryColumns, b.getF32Type());
    auto stage = [&](Value s) {
      Value slot = arith::RemUIOp::create(b, s, e.index(2));
      return k.tile(e.addIndex(e.index(cBytes), e.mulIndex(slot, e.index(aBytes))),
                    K, aStride, b.getF32Type());
    };
    // A_s's K rows into its stage (none past the last segment: the group
    // is still committed, so that every step waits on the same count).
    auto prefetch = [&](Value s) {
      Value valid = k.select(k.ult(s, numSegs), e.index(K), e.index(0));
      Value sLoad = e.minIndex(s, e.subIndex(numSegs, e.index(1)));
      k.copyRowsAsync(stage(s), e.index(0), K, e.index(0), valid, e.index(K),
                      maps, [&](Value r, Value c) -> SmallVector<Value> {
        return {bIdx, sLoad, hv, r, c};
      }, /*rows=*/K);
      return k.commitCopies();
    };
    Value firstGroup = prefetch(e.index(0));
    Value c = vector::LoadOp::create(b, f32x4, init,
                                     ValueRange{bIdx, hv, row, col});
    ValueRange last = e.forEachReduce(
        numSegs, {c}, [&](Value s, ValueRange carried) -> SmallVector<Value> {
      Value cs = carried[0];
      vector::StoreOp::create(b, cs, entries,
                              ValueRange{bIdx, s, hv, row, col});
      vector::StoreOp::create(b, cs, shared, ValueRange{row, c0});
      // E_s's piece, loaded before the wait so that it lands meanwhile.
      Value offset = vector::LoadOp::create(
          b, f32x4, maps,
          ValueRange{bIdx, s, hv, row, Value(e.addIndex(col, e.index(K)))});
      prefetch(e.addIndex(s, e.index(1)));
      k.waitCopies(firstGroup, 1); // A_s has landed
      k.barrier();
      // acc = E_s[row][col ..] + sum_j A_s[row][j] C_s[j][c0 ..], in four
      // partial sums (j mod 4) so that the FMAs do not wait on each other.
      Value a = stage(s);
      SmallVector<Value> acc(4, arith::ConstantOp::create(
                                    b, f32x4, DenseElementsAttr::get(
                                                  f32x4, b.getF32FloatAttr(0.0f))));
      acc[0] = offset;
      for (int64_t j = 0; j < K; j += 4) {
        Value aj4 = vector::LoadOp::create(
            b, f32x4, a, ValueRange{row, Value(e.index(j))});
        for (int64_t jj = 0; jj < 4; ++jj) {
          Value aj = vector::BroadcastOp::create(
              b, f32x4, vector::ExtractOp::create(b, aj4, jj));
          Value cj = vector::LoadOp::create(
              b, f32x4, shared, ValueRange{Value(e.index(j + jj)), c0});
          acc[jj] = vector::FMAOp::create(b, aj, cj, acc[jj]);
        }
      }
      k.barrier(); // every thread has read C_s and A_s's stage
      return {arith::AddFOp::create(b, arith::AddFOp::create(b, acc[0], acc[1]),
                                    arith::AddFOp::create(b, acc[2], acc[3]))
                  .getResult()};
    });
    k.waitCopies(firstGroup, 0);
    vector::StoreOp::create(b, last[0], finalState,
                            ValueRange{bIdx, hv, row, col});
  }, threads);
  e.replaceWithBuffers(rewriter, op, {entries, finalState});
  return success();
}

struct SegmentEntriesToGPU : OpRewritePattern<SegmentEntriesOp> {
  SegmentEntriesToGPU(MLIRContext *ctx, const ChunkedLoweringContext &context)
      : OpRewritePattern(ctx), context(context) {}
  LogicalResult matchAndRewrite(SegmentEntriesOp op,
                                PatternRewriter &rewriter) const override {
    return lowerSegmentEntries(op, context.getTarget(), rewriter);
  }
  const ChunkedLoweringContext &context;
};

} // namespace

void populateSegmentEntriesToGPUPatterns(RewritePatternSet &patterns,
                                         const ChunkedLoweringContext &context) {
  patterns.add<SegmentEntriesToGPU>(patterns.getContext(), context);
}

} // namespace mlir::linattn::kernel
