//===- L2NormToGPU.cpp - linattn.l2norm to a kernel -------------------------===//
//
// One warp per row: x / sqrt(sum(x^2) + eps), the sum by a butterfly of
// shuffles.
//
//===----------------------------------------------------------------------===//

#include "ChunkedToGPUPatterns.h"
#include "KernelSupport.h"
#include "Kernel/KernelEmitter.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

/// Keys per row of the l2norm kernel: a warp per row, 32 per lane at most.
constexpr int64_t kMaxL2NormKeys = 1024;

namespace {

/// y = x / sqrt(sum(x^2) + eps) over the last dimension.
LogicalResult lowerL2Norm(L2NormOp op, RewriterBase &rewriter) {
  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  LoopEmitter e(b);
  auto type = cast<RankedTensorType>(op.getInput().getType());
  if (type.getRank() != 4)
    return op.emitOpError() << "GPU kernel normalises [B, T, H, K] operands";
  int64_t n = type.getDimSize(3); // static: the op's verifier
  if (n > kMaxL2NormKeys)
    return op.emitOpError() << "GPU l2norm kernel takes K of at most "
                            << kMaxL2NormKeys << " (a warp per row), got " << n;
  Value in = e.toBuffer(op.getInput());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < 4; ++d)
    sizes.push_back(e.dim(in, d));
  Value out = e.allocFor(op.getResult().getType(), sizes);
  emitRowWarpLaunch(b, sizes, [&](KernelEmitter &k, Value bIdx, Value t,
                                  Value h) {
    // Lane l holds x[l + 32 j]: consecutive lanes, consecutive addresses.
    SmallVector<Value> x, key;
    Value sum = e.f32(0.0f);
    for (int64_t j = 0; j * 32 < n; ++j) {
      key.push_back(e.addIndex(k.lane, e.index(32 * j)));
      Value xj = (j + 1) * 32 <= n
                     ? e.loadF32(in, {bIdx, t, h, key.back()})
                     : k.loadRowOrZero(key.back(), e.index(n), b.getF32Type(),
                                       [&](Value i) {
                                         return e.loadF32(in, {bIdx, t, h, i});
                                       });
      x.push_back(xj);
      sum = math::FmaOp::create(b, xj, xj, sum);
    }
    // sum(x^2) over the row by a butterfly of shuffles.
    sum = k.warpSum(sum);
    Value inv = arith::DivFOp::create(
        b, e.f32(1.0f), math::SqrtOp::create(b, e.add(sum, e.f32(L2NormOp::kEpsilon))));
    for (size_t j = 0; j < x.size(); ++j) {
      auto store = [&] {
        e.storeFromF32(e.mul(x[j], inv), out, {bIdx, t, h, key[j]});
      };
      if ((int64_t(j) + 1) * 32 <= n) {
        store();
        continue;
      }
      auto tail = scf::IfOp::create(b, k.ult(key[j], e.index(n)), false);
      OpBuilder::InsertionGuard tailGuard(b);
      b.setInsertionPointToStart(tail.thenBlock());
      store();
    }
  });
  e.replaceWithBuffers(rewriter, op, {out});
  return success();
}

struct L2NormToGPU : OpRewritePattern<L2NormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(L2NormOp op,
                                PatternRewriter &rewriter) const override {
    return lowerL2Norm(op, rewriter);
  }
};

} // namespace

void populateL2NormToGPUPatterns(RewritePatternSet &patterns,
                                 const ChunkedLoweringContext &) {
  patterns.add<L2NormToGPU>(patterns.getContext());
}

} // namespace mlir::linattn::kernel
