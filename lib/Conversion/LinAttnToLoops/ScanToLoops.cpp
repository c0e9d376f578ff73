//===- ScanToLoops.cpp - linattn.scan to a sequential loop ----------------===//
//
// A scan's CPU semantics: for every index of the batch dimensions, walk the
// scan dimension in order (or reversed), folding each element into the
// accumulator with the combiner region, inlined. Written on tensors
// (slices + scf.for iter_args) and left to bufferization.
//
//===----------------------------------------------------------------------===//

#include "LoopLowerings.h"
#include "LinAttn/Utils/LoopEmitter.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::linattn {
namespace {

class ScanLowering {
public:
  explicit ScanLowering(ScanOp op)
      : op(op), b(op.getLoc(), op), e(b), n(op.getInputs().size()),
        dim(op.getDimension()) {}

  void run();

private:
  /// Offsets [lead..., at, 0...] and sizes [1..., 1, element dims...] of
  /// one element of input `i` (at == nullptr: a carry, without the scan
  /// dimension).
  void elementSlice(unsigned i, ArrayRef<Value> lead, Value at,
                    SmallVectorImpl<OpFoldResult> &offsets,
                    SmallVectorImpl<OpFoldResult> &sizes,
                    SmallVectorImpl<OpFoldResult> &strides) {
    Value input = op.getInputs()[i];
    auto type = cast<RankedTensorType>(input.getType());
    for (Value l : lead)
      offsets.push_back(l);
    if (at)
      offsets.push_back(at);
    for (int64_t d = 0; d < (int64_t)lead.size() + (at ? 1 : 0); ++d)
      sizes.push_back(b.getIndexAttr(1));
    for (int64_t d = dim + 1; d < type.getRank(); ++d) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(tensor::getMixedSize(b, b.getLoc(), input, d));
    }
    strides.assign(offsets.size(), b.getIndexAttr(1));
  }

  Value extractElement(Value source, unsigned i, ArrayRef<Value> lead,
                       Value at) {
    SmallVector<OpFoldResult> offsets, sizes, strides;
    elementSlice(i, lead, at, offsets, sizes, strides);
    return tensor::ExtractSliceOp::create(b, op.getElementType(i), source,
                                          offsets, sizes, strides);
  }

  Value insertElement(Value element, Value dest, unsigned i,
                      ArrayRef<Value> lead, Value at) {
    SmallVector<OpFoldResult> offsets, sizes, strides;
    elementSlice(i, lead, at, offsets, sizes, strides);
    return tensor::InsertSliceOp::create(b, element, dest, offsets, sizes,
                                         strides);
  }

  /// The combiner applied to (acc..., next...), inlined here.
  SmallVector<Value> combine(ValueRange acc, ValueRange next) {
    Block &body = op.getCombiner().front();
    IRMapping map;
    for (unsigned i = 0; i < n; ++i) {
      map.map(body.getArgument(i), acc[i]);
      map.map(body.getArgument(n + i), next[i]);
    }
    for (Operation &inner : body.without_terminator())
      b.clone(inner, map);
    SmallVector<Value> out;
    for (Value v : cast<YieldOp>(body.getTerminator()).getValues())
      out.push_back(map.lookupOrDefault(v));
    return out;
  }

  /// The scan of one batch index `lead`; `state` holds outputs then carries.
  SmallVector<Value> scanOne(ArrayRef<Value> lead, ValueRange state);

  /// Loops over batch dimension `d` onwards, threading `state`.
  SmallVector<Value> nest(int64_t d, SmallVector<Value> lead,
                          ValueRange state);

  ScanOp op;
  ImplicitLocOpBuilder b;
  LoopEmitter e;
  unsigned n;
  int64_t dim;
  Value scanLen;
};

SmallVector<Value> ScanLowering::scanOne(ArrayRef<Value> lead,
                                         ValueRange state) {
  bool hasInit = !op.getInits().empty();
  SmallVector<Value> acc;
  for (unsigned i = 0; i < n; ++i) {
    if (hasInit) {
      acc.push_back(extractElement(op.getInits()[i], i, lead, Value()));
      continue;
    }
    // Placeholder, never read: the first step takes the first element.
    RankedTensorType type = op.getElementType(i);
    SmallVector<Value> dynamic;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamic.push_back(tensor::DimOp::create(b, op.getInputs()[i],
                                                dim + 1 + d));
    acc.push_back(tensor::EmptyOp::create(b, type, dynamic));
  }

  SmallVector<Value> inits(state.take_front(n));
  inits.append(acc);
  auto loop = scf::ForOp::create(b, e.index(0), scanLen, e.index(1), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(loop.getBody());
    Value k = loop.getInductionVar();
    Value at = op.getReverse()
                   ? e.subIndex(e.subIndex(scanLen, e.index(1)), k)
                   : k;
    ValueRange iter = loop.getRegionIterArgs();
    SmallVector<Value> outs(iter.take_front(n)), cur(iter.drop_front(n));
    SmallVector<Value> next;
    for (unsigned i = 0; i < n; ++i)
      next.push_back(extractElement(op.getInputs()[i], i, lead, at));
    if (op.getExclusive())
      for (unsigned i = 0; i < n; ++i)
        outs[i] = insertElement(cur[i], outs[i], i, lead, at);

    SmallVector<Value> folded;
    if (hasInit) {
      folded = combine(cur, next);
    } else {
      // Inclusive without init: the first element starts the accumulator.
      Value first =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, k, e.index(0));
      SmallVector<Type> types;
      for (unsigned i = 0; i < n; ++i)
        types.push_back(op.getElementType(i));
      auto branch = scf::IfOp::create(b, types, first, /*withElse=*/true);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(branch.thenBlock());
      scf::YieldOp::create(b, next);
      b.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(b, combine(cur, next));
      folded.assign(branch.getResults().begin(), branch.getResults().end());
    }
    if (!op.getExclusive())
      for (unsigned i = 0; i < n; ++i)
        outs[i] = insertElement(folded[i], outs[i], i, lead, at);
    SmallVector<Value> yielded(outs);
    yielded.append(folded);
    scf::YieldOp::create(b, yielded);
  }

  SmallVector<Value> result(loop.getResults().take_front(n));
  for (unsigned i = 0; i < n; ++i)
    result.push_back(insertElement(loop.getResult(n + i), state[n + i], i,
                                   lead, Value()));
  return result;
}

SmallVector<Value> ScanLowering::nest(int64_t d, SmallVector<Value> lead,
                                      ValueRange state) {
  if (d == dim)
    return scanOne(lead, state);
  Value size = e.tensorDim(op.getInputs()[0], d);
  auto loop = scf::ForOp::create(b, e.index(0), size, e.index(1), state);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(loop.getBody());
  lead.push_back(loop.getInductionVar());
  scf::YieldOp::create(b, nest(d + 1, lead, loop.getRegionIterArgs()));
  return SmallVector<Value>(loop.getResults());
}

void ScanLowering::run() {
  scanLen = e.tensorDim(op.getInputs()[0], dim);
  SmallVector<Value> state;
  for (OpResult result : op->getResults()) {
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<Value> dynamic;
    // Outputs take the input's sizes, carries the input's without `dim`.
    unsigned idx = result.getResultNumber();
    Value input = op.getInputs()[idx % n];
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamic.push_back(tensor::DimOp::create(
            b, input, idx < n || d < dim ? d : d + 1));
    state.push_back(tensor::EmptyOp::create(b, type, dynamic));
  }
  SmallVector<Value> results = nest(0, {}, state);
  op.replaceAllUsesWith(results);
  op.erase();
}

} // namespace

void lowerScansToLoops(Operation *root) {
  SmallVector<ScanOp> scans;
  root->walk([&](ScanOp op) { scans.push_back(op); });
  for (ScanOp op : scans)
    ScanLowering(op).run();
}

} // namespace mlir::linattn
