//===- LoopEmitter.cpp - Scalar loop nests over memrefs -------------------===//

#include "LinAttn/Utils/LoopEmitter.h"

namespace mlir::linattn {

Value LoopEmitter::loadF32(Value memref, ValueRange indices) {
  Value x = memref::LoadOp::create(b, memref, indices);
  if (!x.getType().isF32())
    x = arith::ExtFOp::create(b, b.getF32Type(), x);
  return x;
}

void LoopEmitter::storeFromF32(Value x, Value memref, ValueRange indices) {
  Type elem = cast<MemRefType>(memref.getType()).getElementType();
  if (elem != x.getType())
    x = arith::TruncFOp::create(b, elem, x);
  memref::StoreOp::create(b, x, memref, indices);
}

Value LoopEmitter::inverseL2Norm(Value x, ValueRange prefix, int64_t n,
                                 float eps) {
  Value sum = forEachReduce(
      index(n), {f32(0.0f)},
      [&](Value i, ValueRange acc) -> SmallVector<Value> {
        SmallVector<Value> at(prefix);
        at.push_back(i);
        Value xi = loadF32(x, at);
        return {add(acc[0], mul(xi, xi))};
      })[0];
  return inverseNormOfSquares(sum, eps);
}

ValueRange LoopEmitter::forRangeReduce(
    Value lb, Value ub, ValueRange inits,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(b, lb, ub, index(1), inits);
  OpBuilder::InsertionGuard guard(b);
  // Without carried values the builder has put the (empty) yield already.
  if (inits.empty())
    b.setInsertionPoint(loop.getBody()->getTerminator());
  else
    b.setInsertionPointToEnd(loop.getBody());
  SmallVector<Value> next =
      body(loop.getInductionVar(), loop.getRegionIterArgs());
  assert(next.size() == inits.size() && "the body yields one value per init");
  if (!inits.empty())
    scf::YieldOp::create(b, next);
  return loop.getResults();
}

void LoopEmitter::forRange(Value lb, Value ub, function_ref<void(Value)> body) {
  auto loop = scf::ForOp::create(b, lb, ub, index(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  body(loop.getInductionVar());
}

Value LoopEmitter::toBuffer(Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return bufferization::ToBufferOp::create(
      b, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*read_only=*/true);
}

Value LoopEmitter::allocFor(Type type, ArrayRef<Value> sizes) {
  // A tensor's type or a memref's (chunk_grad's scratch buffers).
  auto shaped = cast<ShapedType>(type);
  SmallVector<Value> dynamic;
  for (int64_t d = 0; d < shaped.getRank(); ++d)
    if (shaped.isDynamicDim(d))
      dynamic.push_back(sizes[d]);
  return memref::AllocOp::create(
      b, MemRefType::get(shaped.getShape(), shaped.getElementType()),
      dynamic);
}

Value LoopEmitter::toTensor(Value buffer, Type type) {
  return bufferization::ToTensorOp::create(b, type, buffer,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

void LoopEmitter::replaceWithBuffers(Operation *op, ArrayRef<Value> buffers) {
  assert(buffers.size() == op->getNumResults() && "one buffer per result");
  for (auto [result, buffer] : llvm::zip(op->getResults(), buffers))
    result.replaceAllUsesWith(toTensor(buffer, result.getType()));
  op->erase();
}

void LoopEmitter::replaceWithBuffers(RewriterBase &rewriter, Operation *op,
                        ArrayRef<Value> buffers) {
  assert(buffers.size() == op->getNumResults() && "one buffer per result");
  SmallVector<Value> tensors;
  for (auto [result, buffer] : llvm::zip(op->getResults(), buffers))
    tensors.push_back(toTensor(buffer, result.getType()));
  rewriter.replaceOp(op, tensors);
}

Value LoopEmitter::roundingRest(Value x, Type narrow) {
  Value hi = arith::TruncFOp::create(b, narrow, x);
  return arith::SubFOp::create(b, x, arith::ExtFOp::create(b, x.getType(), hi));
}

Value LoopEmitter::dim(Value memref, int64_t d) {
  auto type = cast<MemRefType>(memref.getType());
  if (!type.isDynamicDim(d))
    return index(type.getDimSize(d));
  return memref::DimOp::create(b, memref, d);
}

Value LoopEmitter::segmentCount(Value numChunks, int64_t segmentChunks) {
  return arith::MaxUIOp::create(
      b, index(1), arith::CeilDivUIOp::create(b, numChunks, index(segmentChunks)));
}

Value LoopEmitter::tensorDim(Value tensor, int64_t d) {
  auto type = cast<RankedTensorType>(tensor.getType());
  if (!type.isDynamicDim(d))
    return index(type.getDimSize(d));
  return tensor::DimOp::create(b, tensor, d);
}

Value LoopEmitter::selectF32(Value index, ArrayRef<float> values) {
  SmallVector<int64_t> cases;
  for (int64_t i = 0; i + 1 < int64_t(values.size()); ++i)
    cases.push_back(i);
  auto sw = scf::IndexSwitchOp::create(b, TypeRange{b.getF32Type()}, index,
                                       cases, cases.size());
  for (auto [i, region] : llvm::enumerate(sw.getCaseRegions())) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&region.emplaceBlock());
    scf::YieldOp::create(b, f32(values[i]));
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&sw.getDefaultRegion().emplaceBlock());
  scf::YieldOp::create(b, f32(values.back()));
  return sw.getResult(0);
}

} // namespace mlir::linattn
