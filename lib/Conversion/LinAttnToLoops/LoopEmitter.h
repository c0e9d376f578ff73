//===- LoopEmitter.h - Scalar loop nests over memrefs -----------*- C++ -*-===//
//
// Builder helpers shared by the loop lowerings of the LinAttn ops: scf.for
// nests, fp32 loads and stores with widening/narrowing, constants.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOLOOPS_LOOPEMITTER_H
#define LIB_CONVERSION_LINATTNTOLOOPS_LOOPEMITTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::linattn {

/// Epsilon of the L2 normalisation x / sqrt(sum(x^2) + eps).
constexpr float kL2NormEps = 1e-6f;

/// Small builder helpers for scalar loop nests over memrefs.
class LoopEmitter {
public:
  explicit LoopEmitter(ImplicitLocOpBuilder &b) : b(b) {}

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f32(float v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }

  /// memref.load widened to f32.
  Value loadF32(Value memref, ValueRange indices) {
    Value x = memref::LoadOp::create(b, memref, indices);
    if (!x.getType().isF32())
      x = arith::ExtFOp::create(b, b.getF32Type(), x);
    return x;
  }

  /// Stores an f32 value, narrowed to the memref's element type.
  void storeFromF32(Value x, Value memref, ValueRange indices) {
    Type elem = cast<MemRefType>(memref.getType()).getElementType();
    if (elem != x.getType())
      x = arith::TruncFOp::create(b, elem, x);
    memref::StoreOp::create(b, x, memref, indices);
  }

  /// for (iv = 0; iv < ub; ++iv) body(iv)
  void forEach(Value ub, function_ref<void(Value)> body) {
    forRange(index(0), ub, body);
  }

  /// A loop over [0, ub) carrying `inits`; body(iv, carried) returns the
  /// next values.
  ValueRange forEachReduce(
      Value ub, ValueRange inits,
      function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return forRangeReduce(index(0), ub, inits, body);
  }

  /// The same over [lb, ub).
  ValueRange forRangeReduce(
      Value lb, Value ub, ValueRange inits,
      function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(b, lb, ub, index(1), inits);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(loop.getBody());
    SmallVector<Value> next =
        body(loop.getInductionVar(), loop.getRegionIterArgs());
    scf::YieldOp::create(b, next);
    return loop.getResults();
  }

  /// for (iv = lb; iv < ub; ++iv) body(iv)
  void forRange(Value lb, Value ub, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, lb, ub, index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }

  /// A read-only buffer of `tensor` with the tensor's shape.
  Value toBuffer(Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    return bufferization::ToBufferOp::create(
        b, MemRefType::get(type.getShape(), type.getElementType()), tensor,
        /*read_only=*/true);
  }

  /// A fresh buffer for a result of `type`, sized from `sizes` where the
  /// type is dynamic.
  Value allocFor(Type type, ArrayRef<Value> sizes) {
    auto tensor = cast<RankedTensorType>(type);
    SmallVector<Value> dynamic;
    for (int64_t d = 0; d < tensor.getRank(); ++d)
      if (tensor.isDynamicDim(d))
        dynamic.push_back(sizes[d]);
    return memref::AllocOp::create(
        b, MemRefType::get(tensor.getShape(), tensor.getElementType()),
        dynamic);
  }

  /// The tensor view of a buffer this lowering allocated and filled.
  Value toTensor(Value buffer, Type type) {
    return bufferization::ToTensorOp::create(b, type, buffer,
                                             /*restrict=*/true,
                                             /*writable=*/true);
  }

  /// Replaces result i of `op` by the tensor view of buffers[i] and erases
  /// `op`: the end of every lowering that fills its results' buffers.
  void replaceWithBuffers(Operation *op, ArrayRef<Value> buffers) {
    assert(buffers.size() == op->getNumResults() && "one buffer per result");
    for (auto [result, buffer] : llvm::zip(op->getResults(), buffers))
      result.replaceAllUsesWith(toTensor(buffer, result.getType()));
    op->erase();
  }
  /// The same through `rewriter`, for a lowering run as a pattern.
  void replaceWithBuffers(RewriterBase &rewriter, Operation *op,
                          ArrayRef<Value> buffers) {
    assert(buffers.size() == op->getNumResults() && "one buffer per result");
    SmallVector<Value> tensors;
    for (auto [result, buffer] : llvm::zip(op->getResults(), buffers))
      tensors.push_back(toTensor(buffer, result.getType()));
    rewriter.replaceOp(op, tensors);
  }

  /// x - (x rounded to `narrow`), in x's type: what a 16-bit rounding of x
  /// leaves, the lo part of a hi + lo split (x and narrow may be vectors).
  Value roundingRest(Value x, Type narrow) {
    Value hi = arith::TruncFOp::create(b, narrow, x);
    return arith::SubFOp::create(b, x, arith::ExtFOp::create(b, x.getType(), hi));
  }

  Value exp(Value x) { return math::ExpOp::create(b, x); }
  Value minIndex(Value x, Value y) { return arith::MinUIOp::create(b, x, y); }
  Value addIndex(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value mulIndex(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value subIndex(Value x, Value y) { return arith::SubIOp::create(b, x, y); }

  Value add(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }

  /// Size of dimension `d` of a memref as an index value.
  Value dim(Value memref, int64_t d) {
    auto type = cast<MemRefType>(memref.getType());
    if (!type.isDynamicDim(d))
      return index(type.getDimSize(d));
    return memref::DimOp::create(b, memref, d);
  }

  /// Size of dimension `d` of a tensor as an index value.
  Value dim0(Value tensor, int64_t d) {
    auto type = cast<RankedTensorType>(tensor.getType());
    if (!type.isDynamicDim(d))
      return index(type.getDimSize(d));
    return tensor::DimOp::create(b, tensor, d);
  }

  /// Query/key head of value head hv: hv / (HV / H).
  Value qkHead(Value hv, int64_t numVHeads, int64_t numQKHeads) {
    return arith::DivUIOp::create(b, hv, index(numVHeads / numQKHeads));
  }

  /// Segments of a segmented state pass, max(1, ceil(numChunks /
  /// segmentChunks)) (the run-time form of linattn::segmentCount).
  Value segmentCount(Value numChunks, int64_t segmentChunks) {
    return arith::MaxUIOp::create(
        b, index(1), arith::CeilDivUIOp::create(b, numChunks, index(segmentChunks)));
  }

  ImplicitLocOpBuilder &b;
};

/// Static size of dimension d of a shaped value.
inline int64_t dimOf(Value v, int64_t d) {
  return cast<ShapedType>(v.getType()).getDimSize(d);
}


/// Lowers every linattn.scan under `root` to a sequential scf.for nest on
/// tensors, the combiner inlined.
void lowerScansToLoops(Operation *root);

/// Lowers every chunked-state algorithm op (linattn.l2norm, chunk_cumsum,
/// ut_transform, chunk_state_pass, chunk_output) under `root` to loops.
void lowerChunkedOpsToLoops(Operation *root);

} // namespace mlir::linattn

#endif // LIB_CONVERSION_LINATTNTOLOOPS_LOOPEMITTER_H
