//===- PadHeadDims.cpp - Head sizes padded to the kernels' multiple -------===//
//
// A recurrence whose K or V the chunked GPU kernels do not take (multiples
// of 32) but a multiple of 16 is computed at the sizes rounded up: its
// inputs copied into zero-padded tensors, its results sliced back. Zeros
// are exact: a zero key column keeps its state row at zero, a zero value
// column its state column, and neither changes o's other entries.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Transforms/Strategy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNPADHEADDIMS
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

/// The sizes of a tensor shaped `shape` whose dynamic sizes are `value`'s
/// (one tensor.dim each): all of them, and the dynamic ones alone (what
/// its allocation takes).
struct SizesLike {
  SmallVector<OpFoldResult> all;
  SmallVector<Value> dynamic;
};
SizesLike sizesLike(OpBuilder &b, Location loc, Value value,
                    ArrayRef<int64_t> shape) {
  SizesLike sizes;
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (!ShapedType::isDynamic(size)) {
      sizes.all.push_back(b.getIndexAttr(size));
      continue;
    }
    Value dim = tensor::DimOp::create(b, loc, value, d);
    sizes.dynamic.push_back(dim);
    sizes.all.push_back(dim);
  }
  return sizes;
}

/// `value` in a tensor of the static sizes `shape` (at least `value`'s;
/// dynamic ones the same), zero past it: for each padded dimension, its
/// slab past `value` filled with zeros (within `value`'s extent along the
/// padded dimensions before it, so that no two slabs meet and
/// linattn-fuse-independent-launches may run them together), then `value`
/// copied into the leading slice. Each is a
/// slice written in place, and each writes whole rows, which
/// convert-linattn-linalg-to-gpu moves 16 bytes an access (bench/NOTES.md
/// p4), where an element-wise generic with its index clamps and selects
/// was bound by instruction issue (p3).
Value padWithZeros(OpBuilder &b, Location loc, Value value,
                   ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  Type elem = type.getElementType();
  int64_t rank = type.getRank();
  // The padded sizes and value's; the dynamic ones are value's in both.
  SizesLike padded = sizesLike(b, loc, value, shape);
  SmallVector<OpFoldResult> sizes(padded.all);
  for (auto [d, size] : llvm::enumerate(type.getShape()))
    if (!ShapedType::isDynamic(size))
      sizes[d] = b.getIndexAttr(size);
  SmallVector<OpFoldResult> zeros(rank, b.getIndexAttr(0)),
      ones(rank, b.getIndexAttr(1));
  // The slice [offsets, offsets + extents) of `into` written by `write`
  // (given the slice) in place: extract_slice, write, insert_slice of the
  // same slice, which bufferization turns into a write to a subview.
  auto writeSlice = [&](Value into, ArrayRef<OpFoldResult> offsets,
                        ArrayRef<OpFoldResult> extents,
                        function_ref<Value(Value)> write) -> Value {
    Value slice =
        tensor::ExtractSliceOp::create(b, loc, into, offsets, extents, ones);
    return tensor::InsertSliceOp::create(b, loc, write(slice), into, offsets,
                                         extents, ones);
  };
  // alloc_tensor, not tensor.empty: its buffer has the identity layout, as
  // the kernels' results have, so that an scf.if of the dispatch on T
  // yields one buffer type from both branches (no copy at the return).
  Value result = bufferization::AllocTensorOp::create(
      b, loc, RankedTensorType::get(shape, elem), padded.dynamic);
  Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(elem));
  SmallVector<OpFoldResult> slabExtents(padded.all);
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = type.getDimSize(d);
    if (ShapedType::isDynamic(size) || shape[d] == size)
      continue;
    SmallVector<OpFoldResult> offsets(zeros), extents(slabExtents);
    offsets[d] = b.getIndexAttr(size);
    extents[d] = b.getIndexAttr(shape[d] - size);
    result = writeSlice(result, offsets, extents, [&](Value slab) {
      return linalg::FillOp::create(b, loc, zero, slab).getResult(0);
    });
    slabExtents[d] = b.getIndexAttr(size);
  }
  return writeSlice(result, zeros, sizes, [&](Value leading) {
    return linalg::CopyOp::create(b, loc, value, leading).getResult(0);
  });
}

/// The leading part of `value` in the static sizes `shape` (at most
/// `value`'s; dynamic ones the same), copied into a tensor of its own (an
/// identity-layout buffer, as padWithZeros says why).
Value sliceLeading(OpBuilder &b, Location loc, Value value,
                   ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  SizesLike sizes = sizesLike(b, loc, value, shape);
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
      strides(rank, b.getIndexAttr(1));
  Value part = tensor::ExtractSliceOp::create(b, loc, value, offsets,
                                              sizes.all, strides);
  Value init = bufferization::AllocTensorOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()),
      sizes.dynamic);
  return linalg::CopyOp::create(b, loc, part, init).getResult(0);
}

/// `value`'s shape with dimension d (for each (d, size) of `sizes`) set.
SmallVector<int64_t> withSizes(Value value,
                               ArrayRef<std::pair<int64_t, int64_t>> sizes) {
  SmallVector<int64_t> shape(cast<ShapedType>(value.getType()).getShape());
  for (auto [d, size] : sizes)
    shape[d] = size;
  return shape;
}

/// Whether the kernels need `op`'s head sizes padded to `multiple`: they
/// are multiples of 16 but one is not of `multiple`.
bool needsPadding(RecurrenceOp op, int64_t multiple) {
  int64_t K = op.getKeyDim(), V = op.getValueDim();
  return (K % multiple != 0 || V % multiple != 0) && K % 16 == 0 && V % 16 == 0;
}

/// `op` computed at K and V rounded up to `multiple`: its inputs padded
/// with zeros, its scale made explicit, its results sliced back.
void padRecurrence(RewriterBase &rewriter, RecurrenceOp op, int64_t multiple) {
  int64_t paddedK = llvm::alignTo(op.getKeyDim(), multiple);
  int64_t paddedV = llvm::alignTo(op.getValueDim(), multiple);
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  // One copy per distinct value (q and k are often one), none where the
  // sizes are the kernels' already.
  DenseMap<Value, Value> padded;
  auto pad = [&](Value v, ArrayRef<std::pair<int64_t, int64_t>> sizes) {
    SmallVector<int64_t> shape = withSizes(v, sizes);
    if (ArrayRef(shape) == cast<ShapedType>(v.getType()).getShape())
      return v;
    Value &copy = padded[v];
    if (!copy)
      copy = padWithZeros(rewriter, loc, v, shape);
    return copy;
  };
  Value gate = op.getGate();
  bool perKeyGate = gate && cast<ShapedType>(gate.getType()).getRank() == 4;
  SmallVector<Value> operands;
  for (Value v : op->getOperands()) {
    if (v == op.getQ() || v == op.getK())
      operands.push_back(pad(v, {{3, paddedK}}));
    else if (v == op.getV())
      operands.push_back(pad(v, {{3, paddedV}}));
    else if (v == op.getInitialState())
      operands.push_back(pad(v, {{2, paddedK}, {3, paddedV}}));
    else if (perKeyGate && v == gate)
      operands.push_back(pad(v, {{3, paddedK}})); // log gate 0: no decay
    else
      operands.push_back(v);
  }
  auto outputType = RankedTensorType::get(
      withSizes(op.getOutput(), {{3, paddedV}}),
      op.getOutput().getType().getElementType());
  auto stateType = RankedTensorType::get(
      withSizes(op.getFinalState(), {{2, paddedK}, {3, paddedV}}),
      op.getFinalState().getType().getElementType());
  OperationState state(loc, op->getName().getStringRef(), operands,
                       TypeRange{outputType, stateType}, op->getAttrs());
  auto wide = cast<RecurrenceOp>(rewriter.create(state));
  // The scale of the unpadded K (1 / sqrt(K) unless the spec gave one).
  wide.setScaleAttr(rewriter.getF32FloatAttr(op.getEffectiveScale()));
  auto slice = [&](Value v, Value like) {
    ArrayRef<int64_t> shape = cast<ShapedType>(like.getType()).getShape();
    if (shape == cast<ShapedType>(v.getType()).getShape())
      return v;
    return sliceLeading(rewriter, loc, v, shape);
  };
  rewriter.replaceOp(op, {slice(wide.getOutput(), op.getOutput()),
                          slice(wide.getFinalState(), op.getFinalState())});
}

struct LinAttnPadHeadDims
    : impl::LinAttnPadHeadDimsBase<LinAttnPadHeadDims> {
  using Base::Base;
  void runOnOperation() override {
    if (multiple < 16 || multiple % 16 != 0) {
      getOperation()->emitError()
          << "linattn-pad-head-dims: multiple must be a positive multiple "
             "of 16, got "
          << multiple.getValue();
      return signalPassFailure();
    }
    SmallVector<RecurrenceOp> ops;
    getOperation()->walk([&](RecurrenceOp op) {
      if (isSelectedFor(op, {Strategy::Chunked, Strategy::SegmentScan}) &&
          needsPadding(op, multiple))
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (RecurrenceOp op : ops) {
      padRecurrence(rewriter, op, multiple);
      ++numPadded;
    }
  }
};

} // namespace
} // namespace mlir::linattn
