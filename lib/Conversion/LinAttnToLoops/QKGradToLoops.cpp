//===- QKGradToLoops.cpp - linattn.qk_grad to loops -----------------------===//
//
// A query/key input's gradient from per-value-head shares: summed over each
// head's value heads, then back through the L2 normalisation. Shared by the
// adjoint's reverse loop and the chunked backward's linattn.qk_grad.
//
//===----------------------------------------------------------------------===//

#include "LoopLowerings.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Utils/LoopEmitter.h"

namespace mlir::linattn {

// dy = sum over the value heads of x's head of perValueHead; without
// l2norm dx = dy, with it (y = x r, r = (|x|^2 + eps)^-1/2)
// dx = r (dy - y (y . dy)), or dx = dy - y (y . dy) where dy is the
// factored form's (`factored`: with respect to x, r held fixed). Parallel
// over (b, t, h).
void emitQKGradient(LoopEmitter &e, Value x, Value perValueHead, Value result,
                    bool l2norm, bool factored) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t H = dimOf(x, 2), K = dimOf(x, 3), HV = dimOf(perValueHead, 2);
  int64_t group = HV / H;
  Value batch = e.dim(x, 0), seqLen = e.dim(x, 1);
  // Blocks over (b, t), a thread per head (gpu-map-parallel-loops).
  auto blocks =
      scf::ParallelOp::create(b, ValueRange{e.index(0), e.index(0)},
                              ValueRange{batch, seqLen},
                              ValueRange{e.index(1), e.index(1)});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(blocks.getBody()->getTerminator());
  auto threads = scf::ParallelOp::create(b, ValueRange{e.index(0)},
                                         ValueRange{e.index(H)},
                                         ValueRange{e.index(1)});
  b.setInsertionPoint(threads.getBody()->getTerminator());
  Value bi = blocks.getInductionVars()[0], t = blocks.getInductionVars()[1],
        head = threads.getInductionVars()[0];
  auto summed = [&](Value i) {
    return e.forEachReduce(
        e.index(group), {e.f32(0.0f)},
        [&](Value g, ValueRange acc) -> SmallVector<Value> {
          Value valueHead = e.addIndex(e.mulIndex(head, e.index(group)), g);
          return {e.add(acc[0], e.loadF32(perValueHead, {bi, t, valueHead, i}))};
        })[0];
  };
  if (!l2norm) {
    e.forEach(e.index(K), [&](Value i) {
      e.storeFromF32(summed(i), result, {bi, t, head, i});
    });
    return;
  }
  Value r = e.inverseL2Norm(x, {bi, t, head}, K, L2NormOp::kEpsilon);
  Value yDotDy =
      e.forEachReduce(e.index(K), {e.f32(0.0f)},
                      [&](Value i, ValueRange acc) -> SmallVector<Value> {
                        Value y = e.mul(r, e.loadF32(x, {bi, t, head, i}));
                        return {e.add(acc[0], e.mul(y, summed(i)))};
                      })[0];
  e.forEach(e.index(K), [&](Value i) {
    Value y = e.mul(r, e.loadF32(x, {bi, t, head, i}));
    Value dx = e.sub(summed(i), e.mul(y, yDotDy));
    if (!factored)
      dx = e.mul(r, dx);
    e.storeFromF32(dx, result, {bi, t, head, i});
  });
}

void lowerQKGrad(QKGradOp op) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  LoopEmitter e(b);
  Value x = e.toBuffer(op.getInput());
  Value grad = e.toBuffer(op.getGrad());
  Value result = e.allocFor(op.getResult().getType(),
                            {e.dim(x, 0), e.dim(x, 1), e.dim(x, 2), e.dim(x, 3)});
  emitQKGradient(e, x, grad, result, op.getQkL2norm(), op.getFactored());
  e.replaceWithBuffers(op, {result});
}

} // namespace mlir::linattn
