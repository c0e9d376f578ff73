//===- QKGradToGPU.cpp - linattn.qk_grad to a kernel ------------------------===//
//
// A query/key input's gradient, one warp per (b, t, h) row, lane l holding
// keys l, l + 32, ...: dy = the sum of the row's value heads' shares, then
// with qk_l2norm dx = r (dy - y (y . dy)), y = x r, r = (|x|^2 + eps)^-1/2
// (dx = dy - y (y . dy) where dy is the factored form's, `factored`), both
// sums by a butterfly of shuffles. The loop lowering (a thread per
// row, its keys in sequence) took 1 ms a call at B = 4, T = 16384, H = 8,
// K = 128 on an H200 (bench/NOTES.md b6).
//
//===----------------------------------------------------------------------===//

#include "ChunkedToGPUPatterns.h"
#include "Kernel/KernelEmitter.h"
#include "KernelSupport.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::linattn::kernel {
namespace {

/// Keys a warp's lanes hold in registers, 32 per lane at most.
constexpr int64_t kMaxQKGradKeys = 1024;

LogicalResult lowerQKGrad(QKGradOp op, RewriterBase &rewriter) {
  int64_t H = dimOf(op.getInput(), 2), K = dimOf(op.getInput(), 3);
  int64_t HV = dimOf(op.getGrad(), 2);
  if (K > kMaxQKGradKeys)
    return rewriter.notifyMatchFailure(op, "more keys than a warp holds");
  int64_t group = HV / H;
  bool l2norm = bool(op.getQkL2norm()), factored = bool(op.getFactored());
  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  LoopEmitter e(b);
  Value x = e.toBuffer(op.getInput());
  Value grad = e.toBuffer(op.getGrad());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < 4; ++d)
    sizes.push_back(e.dim(x, d));
  Value out = e.allocFor(op.getResult().getType(), sizes);
  emitRowWarpLaunch(b, sizes, [&](KernelEmitter &k, Value bIdx, Value t,
                                  Value h) {
    // Lanes past K (K not a multiple of 32) read key K - 1 and count 0.
    SmallVector<Value> keys, inRow, dy, xs;
    for (int64_t j = 0; j * 32 < K; ++j) {
      Value key = e.addIndex(k.lane, e.index(32 * j));
      Value in = k.ult(key, e.index(K));
      Value safe = e.minIndex(key, e.index(K - 1));
      Value sum = e.f32(0.0f);
      for (int64_t g = 0; g < group; ++g)
        sum = e.add(sum, e.loadF32(grad, {bIdx, t,
                                           e.addIndex(e.mulIndex(h, e.index(group)),
                                                      e.index(g)),
                                           safe}));
      keys.push_back(key);
      inRow.push_back(in);
      dy.push_back(k.select(in, sum, e.f32(0.0f)));
      if (l2norm)
        xs.push_back(k.select(in, e.loadF32(x, {bIdx, t, h, safe}), e.f32(0.0f)));
    }
    SmallVector<Value> dx = dy;
    if (l2norm) {
      Value sq = e.f32(0.0f);
      for (Value xj : xs)
        sq = e.add(sq, e.mul(xj, xj));
      Value r = e.inverseNormOfSquares(k.warpSum(sq), L2NormOp::kEpsilon);
      Value dot = e.f32(0.0f);
      for (size_t j = 0; j < xs.size(); ++j)
        dot = e.add(dot, e.mul(e.mul(r, xs[j]), dy[j]));
      dot = k.warpSum(dot);
      for (size_t j = 0; j < xs.size(); ++j) {
        dx[j] = e.sub(dy[j], e.mul(e.mul(r, xs[j]), dot));
        if (!factored)
          dx[j] = e.mul(r, dx[j]);
      }
    }
    for (size_t j = 0; j < dx.size(); ++j) {
      OpBuilder::InsertionGuard storeGuard(b);
      if ((int64_t(j) + 1) * 32 > K)
        b.setInsertionPointToStart(scf::IfOp::create(b, inRow[j], false).thenBlock());
      e.storeFromF32(dx[j], out, {bIdx, t, h, keys[j]});
    }
  });
  e.replaceWithBuffers(rewriter, op, {out});
  return success();
}

struct QKGradToGPU : OpRewritePattern<QKGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(QKGradOp op,
                                PatternRewriter &rewriter) const override {
    return lowerQKGrad(op, rewriter);
  }
};

} // namespace

void populateQKGradToGPUPatterns(RewritePatternSet &patterns,
                                 const ChunkedLoweringContext &) {
  patterns.add<QKGradToGPU>(patterns.getContext());
}

} // namespace mlir::linattn::kernel
