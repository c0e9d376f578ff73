//===- LoopEmitter.h - Scalar loop nests over memrefs -----------*- C++ -*-===//
//
// Builder helpers shared by every lowering of the LinAttn ops, on the CPU
// and in GPU kernels: scf.for nests, fp32 loads and stores with
// widening/narrowing, index arithmetic, the buffers a lowering reads and
// fills.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_UTILS_LOOPEMITTER_H
#define LINATTN_UTILS_LOOPEMITTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::linattn {

/// Small builder helpers for scalar loop nests over memrefs.
class LoopEmitter {
public:
  explicit LoopEmitter(ImplicitLocOpBuilder &b) : b(b) {}

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f32(float v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }

  /// values[index] as an f32 (scf.index_switch over the constants; an
  /// index past the end selects the last): a per-head constant picked by a
  /// run-time head index.
  Value selectF32(Value index, ArrayRef<float> values);

  /// factor * x, written as x for 1 and x + x for 2 (no rounding of a
  /// product; the oracle and the kernels agree to the bit).
  Value scaleExactly(float factor, Value x) {
    if (factor == 1.0f)
      return x;
    if (factor == 2.0f)
      return add(x, x);
    return mul(f32(factor), x);
  }

  /// 1 / sqrt(sum_i x[prefix..., i]^2 + eps) over i < n: the factor of an
  /// L2 normalisation of x's last dimension.
  Value inverseL2Norm(Value x, ValueRange prefix, int64_t n, float eps);
  /// 1 / sqrt(sumOfSquares + eps): the same factor from the row's sum of
  /// squares, however a lowering summed it.
  Value inverseNormOfSquares(Value sumOfSquares, float eps) {
    return arith::DivFOp::create(
        b, f32(1.0f), math::SqrtOp::create(b, add(sumOfSquares, f32(eps))));
  }

  /// memref.load widened to f32.
  Value loadF32(Value memref, ValueRange indices);

  /// Stores an f32 value, narrowed to the memref's element type.
  void storeFromF32(Value x, Value memref, ValueRange indices);

  /// for (iv = 0; iv < ub; ++iv) body(iv)
  void forEach(Value ub, function_ref<void(Value)> body) {
    forRange(index(0), ub, body);
  }

  /// A loop over [0, ub) carrying `inits` (none is allowed: a plain loop);
  /// body(iv, carried) returns the next values.
  ValueRange forEachReduce(
      Value ub, ValueRange inits,
      function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    return forRangeReduce(index(0), ub, inits, body);
  }

  /// The same over [lb, ub).
  ValueRange forRangeReduce(
      Value lb, Value ub, ValueRange inits,
      function_ref<SmallVector<Value>(Value, ValueRange)> body);

  /// for (iv = lb; iv < ub; ++iv) body(iv)
  void forRange(Value lb, Value ub, function_ref<void(Value)> body);

  /// A read-only buffer of `tensor` with the tensor's shape.
  Value toBuffer(Value tensor);

  /// A fresh buffer for a result of `type`, sized from `sizes` where the
  /// type is dynamic.
  Value allocFor(Type type, ArrayRef<Value> sizes);

  /// The tensor view of a buffer this lowering allocated and filled.
  Value toTensor(Value buffer, Type type);

  /// Replaces result i of `op` by the tensor view of buffers[i] and erases
  /// `op`: the end of every lowering that fills its results' buffers.
  void replaceWithBuffers(Operation *op, ArrayRef<Value> buffers);
  /// The same through `rewriter`, for a lowering run as a pattern.
  void replaceWithBuffers(RewriterBase &rewriter, Operation *op,
                          ArrayRef<Value> buffers);

  /// x - (x rounded to `narrow`), in x's type: what a 16-bit rounding of x
  /// leaves, the lo part of a hi + lo split (x and narrow may be vectors).
  Value roundingRest(Value x, Type narrow);

  Value exp(Value x) { return math::ExpOp::create(b, x); }
  Value minIndex(Value x, Value y) { return arith::MinUIOp::create(b, x, y); }
  Value addIndex(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value mulIndex(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value subIndex(Value x, Value y) { return arith::SubIOp::create(b, x, y); }

  Value add(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }

  /// Size of dimension `d` of a memref as an index value.
  Value dim(Value memref, int64_t d);
  /// Size of dimension `d` of a tensor as an index value.
  Value tensorDim(Value tensor, int64_t d);

  /// Query/key head of value head hv: hv / (HV / H).
  Value qkHead(Value hv, int64_t numVHeads, int64_t numQKHeads) {
    return arith::DivUIOp::create(b, hv, index(numVHeads / numQKHeads));
  }

  /// Segments of a segmented state pass, max(1, ceil(numChunks /
  /// segmentChunks)) (the run-time form of linattn::segmentCount).
  Value segmentCount(Value numChunks, int64_t segmentChunks);

  ImplicitLocOpBuilder &b;
};

/// Static size of dimension d of a shaped value.
inline int64_t dimOf(Value v, int64_t d) {
  return cast<ShapedType>(v.getType()).getDimSize(d);
}

} // namespace mlir::linattn

#endif // LINATTN_UTILS_LOOPEMITTER_H
