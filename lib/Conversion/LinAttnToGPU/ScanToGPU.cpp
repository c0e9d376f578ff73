//===- ScanToGPU.cpp - linattn.scan to a thread-per-position kernel -------===//
//
// The GPU mapping of `linattn.scan`. A combiner is pointwise along most of
// its element's dimensions: position (h, j) of a carry only ever meets
// position (h, j) of the next element, whatever the combiner does along the
// other dimensions (the segment scan's K x K transition times a K x V
// state sums over one of them). Constraints "these two indices are always
// equal" (an elementwise op's operands and result, a linalg.generic's
// operand dimensions that one loop indexes, a carry and its yield) split
// the element's dimensions into classes, and each class is either
//
//   - parallel: no reduction loop in it; it becomes a thread coordinate,
//     and every value of the combiner is evaluated at that coordinate only;
//   - held (static size): each thread keeps its slice of every carry along
//     it in registers (a vector) and evaluates the combiner's ops on the
//     slice, summing reductions in order.
//
// One thread per (batch index, parallel coordinates) walks the scan
// dimension in order, the carries in registers across the walk; the next
// element is read from memory where an op needs it. A carry whose results
// are unused and that no used carry reads is not computed (a segment
// scan's composed transitions, of which only the states are used). The
// kernel is a `gpu.launch` of 256-thread blocks on memrefs
// (`bufferization.to_buffer` of the operands, fresh buffers wrapped by
// `bufferization.to_tensor` for the results), before bufferization.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Conversion/Passes.h"

#include "LinAttn/Utils/LoopEmitter.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_CONVERTLINATTNSCANTOGPU
#include "LinAttn/Conversion/Passes.h.inc"

namespace {

constexpr int64_t kThreadsPerBlock = 256;

/// A thread's view of one tensor value of the combiner.
struct Slice {
  /// The values along the held dimensions (a vector, or a scalar when the
  /// value has none); null for the next element (read from memory).
  Value data;
  /// The next element of input #input, at `nextPrefix` (-1: not one).
  int input = -1;
  /// A splat constant's scalar.
  Value splat;
};

class ScanLowering {
public:
  ScanLowering(ScanOp op, int64_t maxHeld)
      : op(op), n(op.getInputs().size()), dim(op.getDimension()),
        maxHeld(maxHeld), body(op.getCombiner().front()),
        yield(cast<YieldOp>(body.getTerminator())) {}

  LogicalResult run();

private:
  //===--- Analysis ------------------------------------------------------===//

  /// The live carries (results used, or read by a live carry) and the
  /// combiner ops they need, in block order.
  LogicalResult findLive();
  /// Unifies the dimension slots of the live values and sorts the classes
  /// into parallel (thread coordinates) and held.
  LogicalResult classify();

  /// The slot of dimension d of a value or of loop d of a generic.
  unsigned slotOf(const void *owner, int64_t d) {
    auto [it, inserted] = slotIds.try_emplace({owner, d}, slotIds.size());
    if (inserted)
      classes.insert(it->second);
    return it->second;
  }
  unsigned slot(Value v, int64_t d) {
    return slotOf(v.getAsOpaquePointer(), d);
  }
  unsigned loopSlot(Operation *generic, int64_t l) {
    return slotOf(generic, l);
  }
  unsigned classOf(unsigned s) { return classes.getLeaderValue(s); }
  unsigned classOf(Value v, int64_t d) { return classOf(slot(v, d)); }
  bool isParallel(unsigned cls) { return coordIndex.count(cls); }
  void unify(unsigned a, unsigned b) { classes.unionSets(a, b); }
  void unifyValues(Value a, Value b) {
    for (int64_t d = 0; d < cast<RankedTensorType>(a.getType()).getRank(); ++d)
      unify(slot(a, d), slot(b, d));
  }
  /// The held dimensions of tensor value `v` and its slice's type.
  SmallVector<int64_t> heldDims(Value v);
  Type sliceType(Value v);
  /// The position in `v`'s slice of the element at dimension indices `at`.
  SmallVector<OpFoldResult> heldPosition(Value v, ArrayRef<Value> at) {
    SmallVector<OpFoldResult> position;
    for (int64_t d : heldDims(v))
      position.push_back(at[d]);
    return position;
  }
  /// A slice of `v`'s type filled with zeros.
  Value zeroSlice(Value v) {
    auto zeros = cast<TypedAttr>(builder->getZeroAttr(sliceType(v)));
    return arith::ConstantOp::create(*builder, zeros);
  }

  //===--- Emission ------------------------------------------------------===//

  /// The scalar of `v`'s slice at dimension indices `at`.
  Value read(Value v, ArrayRef<Value> at);
  /// A slice of `v`'s type built by `scalarAt` (dimension indices -> scalar).
  Value buildSlice(Value v, function_ref<Value(ArrayRef<Value>)> scalarAt);
  /// Indices of `v`'s dimensions with this thread's coordinates filled in
  /// (null at the held dimensions).
  SmallVector<Value> threadPoint(Value v);
  /// For each point of `v`'s held dimensions: body(dimension indices).
  void forEachHeld(Value v, function_ref<void(ArrayRef<Value>)> body);
  /// The slice of `v` as data (reads the next element or a splat if it is
  /// one).
  Value materialize(Value v);
  /// Emits the live combiner ops folding the next element (at `nextAt`)
  /// into `carries`; returns the yielded slices of the live carries.
  LogicalResult combine(ArrayRef<Value> carries,
                        SmallVectorImpl<Value> &folded);
  LogicalResult emitGeneric(linalg::GenericOp generic);
  /// Stores slice `data` of carry #i's shape to `buffer` at
  /// `prefix` ++ element indices (only the thread at coordinate 0 of the
  /// parallel classes the carry lacks).
  void storeSlice(unsigned i, Value data, Value buffer, ArrayRef<Value> prefix);

  ScanOp op;
  unsigned n;
  int64_t dim;
  int64_t maxHeld;
  Block &body;
  YieldOp yield;

  SmallVector<bool> liveCarry;
  SmallVector<Operation *> liveOps;
  DenseMap<std::pair<const void *, int64_t>, unsigned> slotIds;
  llvm::EquivalenceClasses<unsigned> classes;
  /// Slots of the loops that sum (their classes are held).
  DenseSet<unsigned> reductionSlots;
  /// Static size of each class (kDynamic: known only at run time).
  DenseMap<unsigned, int64_t> classSize;
  /// Thread coordinate number of each parallel class, and its order.
  DenseMap<unsigned, unsigned> coordIndex;
  SmallVector<unsigned> coordClasses;

  // Emission state.
  std::unique_ptr<ImplicitLocOpBuilder> builder;
  std::unique_ptr<LoopEmitter> e;
  SmallVector<Value> lead, coords, inputBuffers;
  Value nextAt; // the scan index of the element being folded in
  DenseMap<Value, Slice> slices;
  IRMapping scalars;
};

LogicalResult ScanLowering::findLive() {
  liveCarry.assign(n, false);
  SmallVector<Value> work;
  for (unsigned i = 0; i < n; ++i)
    if (!op.getOutputs()[i].use_empty() || !op.getCarries()[i].use_empty()) {
      liveCarry[i] = true;
      work.push_back(yield.getValues()[i]);
    }
  llvm::SetVector<Operation *> needed;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      unsigned num = arg.getArgNumber();
      if (arg.getOwner() == &body && num < n && !liveCarry[num]) {
        liveCarry[num] = true;
        work.push_back(yield.getValues()[num]);
      }
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != &body) {
      if (isa<TensorType>(v.getType()))
        return op.emitOpError()
               << "has no GPU mapping: its combiner reads a tensor defined "
                  "outside the scan";
      continue;
    }
    if (!needed.insert(def))
      continue;
    def->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands())
        work.push_back(operand);
    });
  }
  for (Operation &inner : body.without_terminator())
    if (needed.contains(&inner))
      liveOps.push_back(&inner);
  return success();
}

static bool isElementwiseOnTensors(Operation *op) {
  if (!op->hasTrait<OpTrait::Elementwise>() || op->getNumResults() != 1)
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  return type && llvm::all_of(op->getOperandTypes(), [&](Type t) {
           auto operand = dyn_cast<RankedTensorType>(t);
           return operand && operand.getShape() == type.getShape();
         });
}

static bool hasTensors(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), llvm::IsaPred<TensorType>) ||
         llvm::any_of(op->getResultTypes(), llvm::IsaPred<TensorType>);
}

LogicalResult ScanLowering::classify() {
  auto unsupported = [&](Operation *inner, const Twine &why) {
    InFlightDiagnostic diag = op.emitOpError()
                              << "has no GPU mapping: its combiner's '"
                              << inner->getName() << "' " << why;
    diag.attachNote(inner->getLoc()) << "this op";
    return diag;
  };
  // The tensors a thread evaluates: the live carries, the next elements
  // the live ops read, and the live ops' results.
  DenseSet<Operation *> live(liveOps.begin(), liveOps.end());
  auto readByLiveOp = [&](Value v) {
    return llvm::any_of(v.getUsers(), [&](Operation *user) {
      Operation *top = body.findAncestorOpInBlock(*user);
      return top && live.contains(top);
    });
  };
  SmallVector<Value> tensors;
  for (unsigned i = 0; i < n; ++i) {
    Value acc = body.getArgument(i), next = body.getArgument(n + i);
    if (liveCarry[i]) {
      unifyValues(acc, next);
      unifyValues(acc, yield.getValues()[i]);
      tensors.push_back(acc);
    }
    if (liveCarry[i] || readByLiveOp(next))
      tensors.push_back(next);
  }
  for (Operation *inner : liveOps) {
    for (Value result : inner->getResults())
      if (isa<RankedTensorType>(result.getType()))
        tensors.push_back(result);
    if (!hasTensors(inner) || isa<tensor::EmptyOp>(inner))
      continue;
    // Only a linalg op's init may be a tensor.empty, and only where its
    // body does not read it (checked when the body is emitted).
    for (OpOperand &operand : inner->getOpOperands()) {
      auto dps = dyn_cast<DestinationStyleOpInterface>(inner);
      if (operand.get().getDefiningOp<tensor::EmptyOp>() &&
          !(dps && dps.isDpsInit(&operand)))
        return unsupported(inner, "reads a tensor.empty");
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(inner)) {
      auto dense = dyn_cast<SplatElementsAttr>(constant.getValue());
      if (!dense)
        return unsupported(inner, "is a tensor constant that is not a splat");
      continue;
    }
    if (isElementwiseOnTensors(inner)) {
      for (Value operand : inner->getOperands())
        unifyValues(operand, inner->getResult(0));
      continue;
    }
    if (auto fill = dyn_cast<linalg::FillOp>(inner)) {
      unifyValues(fill.getResult(0), fill.getOutputs()[0]);
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(inner);
    if (!generic)
      return unsupported(inner, "is neither elementwise, linalg.fill nor "
                                "linalg.generic");
    for (OpOperand &operand : generic->getOpOperands()) {
      AffineMap map = generic.getMatchingIndexingMap(&operand);
      if (!map.isProjectedPermutation())
        return unsupported(inner, "has an indexing map that is not a "
                                  "projected permutation");
      for (unsigned j = 0; j < map.getNumResults(); ++j)
        unify(slot(operand.get(), j),
              loopSlot(generic, map.getDimPosition(j)));
    }
    for (auto [result, init] :
         llvm::zip(generic->getResults(), generic.getDpsInits()))
      unifyValues(result, init);
    // A loop that indexes no output sums into it: a reduction whatever its
    // iterator type says.
    for (unsigned l = 0; l < generic.getNumLoops(); ++l) {
      bool written = llvm::any_of(generic.getDpsInitsMutable(), [&](OpOperand &o) {
        return generic.getMatchingIndexingMap(&o).isFunctionOfDim(l);
      });
      if (!written)
        reductionSlots.insert(loopSlot(generic, l));
    }
  }
  // Reductions and sizes per class.
  DenseSet<unsigned> reducing;
  for (unsigned s : reductionSlots)
    reducing.insert(classOf(s));
  for (Value v : tensors) {
    auto type = cast<RankedTensorType>(v.getType());
    for (int64_t d = 0; d < type.getRank(); ++d) {
      unsigned cls = classOf(v, d);
      auto [it, inserted] = classSize.try_emplace(cls, type.getDimSize(d));
      if (!inserted && !type.isDynamicDim(d)) {
        if (it->second == ShapedType::kDynamic)
          it->second = type.getDimSize(d);
        else if (it->second != type.getDimSize(d))
          return op.emitOpError()
                 << "has no GPU mapping: its combiner indexes sizes "
                 << it->second << " and " << type.getDimSize(d)
                 << " with one index";
      }
    }
  }
  // Thread coordinates: the parallel classes, the widest live carry's
  // dimensions first in its order (its last dimension varies fastest across
  // threads: coalesced accesses), then any other.
  int primary = -1;
  for (unsigned i = 0; i < n; ++i)
    if (liveCarry[i] &&
        (primary < 0 ||
         op.getElementType(i).getRank() > op.getElementType(primary).getRank()))
      primary = i;
  auto addCoord = [&](unsigned cls) {
    if (reducing.contains(cls) || coordIndex.count(cls))
      return;
    coordIndex[cls] = coordClasses.size();
    coordClasses.push_back(cls);
  };
  if (primary >= 0)
    for (int64_t d = 0; d < op.getElementType(primary).getRank(); ++d)
      addCoord(classOf(body.getArgument(primary), d));
  for (Value v : tensors)
    for (int64_t d = 0; d < cast<RankedTensorType>(v.getType()).getRank(); ++d)
      addCoord(classOf(v, d));
  // Held classes need a static size: they are register arrays. (The next
  // element is read from memory where it is used, not held.)
  for (Value v : tensors) {
    auto arg = dyn_cast<BlockArgument>(v);
    if ((arg && arg.getArgNumber() >= n) || v.getDefiningOp<tensor::EmptyOp>())
      continue;
    auto type = cast<RankedTensorType>(v.getType());
    int64_t elements = 1;
    for (int64_t d : heldDims(v)) {
      if (classSize[classOf(v, d)] == ShapedType::kDynamic)
        return op.emitOpError()
               << "has no GPU mapping: its combiner sums over dimension "
               << d << " of a " << type
               << ", whose size is dynamic (a thread holds such a "
                  "dimension in registers)";
      elements *= type.getDimSize(d);
    }
    if (elements > maxHeld)
      return op.emitOpError()
             << "has no GPU mapping: a thread would hold " << elements
             << " elements of a " << type << " (more than " << maxHeld
             << "), the dimensions its combiner sums over";
  }
  return success();
}

SmallVector<int64_t> ScanLowering::heldDims(Value v) {
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < cast<RankedTensorType>(v.getType()).getRank(); ++d)
    if (!isParallel(classOf(v, d)))
      dims.push_back(d);
  return dims;
}

Type ScanLowering::sliceType(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape;
  for (int64_t d : heldDims(v))
    shape.push_back(type.getDimSize(d));
  if (shape.empty())
    return type.getElementType();
  return VectorType::get(shape, type.getElementType());
}

Value ScanLowering::read(Value v, ArrayRef<Value> at) {
  Slice &s = slices[v];
  ImplicitLocOpBuilder &b = *builder;
  if (s.splat)
    return s.splat;
  if (s.input >= 0) {
    SmallVector<Value> indices(lead);
    indices.push_back(nextAt);
    indices.append(at.begin(), at.end());
    return memref::LoadOp::create(b, inputBuffers[s.input], indices);
  }
  if (!isa<VectorType>(s.data.getType()))
    return s.data;
  return vector::ExtractOp::create(b, s.data, heldPosition(v, at));
}

SmallVector<Value> ScanLowering::threadPoint(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<Value> at(type.getRank());
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (isParallel(classOf(v, d)))
      at[d] = coords[coordIndex[classOf(v, d)]];
  return at;
}

void ScanLowering::forEachHeld(Value v,
                               function_ref<void(ArrayRef<Value>)> bodyFn) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<Value> at = threadPoint(v);
  SmallVector<int64_t> held = heldDims(v);
  std::function<void(unsigned)> nest = [&](unsigned k) {
    if (k == held.size())
      return bodyFn(at);
    e->forEach(e->index(type.getDimSize(held[k])), [&](Value iv) {
      at[held[k]] = iv;
      nest(k + 1);
    });
  };
  nest(0);
}

Value ScanLowering::buildSlice(Value v,
                               function_ref<Value(ArrayRef<Value>)> scalarAt) {
  ImplicitLocOpBuilder &b = *builder;
  Type type = sliceType(v);
  auto vectorType = dyn_cast<VectorType>(type);
  if (!vectorType) // No held dimension: the thread's one element.
    return scalarAt(threadPoint(v));
  // The vector is carried through the loops over the held dimensions.
  auto tensorType = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> held = heldDims(v);
  SmallVector<Value> at = threadPoint(v);
  Value zero = zeroSlice(v);
  std::function<Value(unsigned, Value)> nest = [&](unsigned k,
                                                   Value acc) -> Value {
    if (k == held.size()) {
      return vector::InsertOp::create(b, scalarAt(at), acc,
                                      heldPosition(v, at));
    }
    return e->forEachReduce(
        e->index(tensorType.getDimSize(held[k])), {acc},
        [&](Value iv, ValueRange carried) -> SmallVector<Value> {
          at[held[k]] = iv;
          return {nest(k + 1, carried[0])};
        })[0];
  };
  return nest(0, zero);
}

Value ScanLowering::materialize(Value v) {
  Slice &s = slices[v];
  if (s.data)
    return s.data;
  return buildSlice(v, [&](ArrayRef<Value> at) { return read(v, at); });
}

LogicalResult ScanLowering::emitGeneric(linalg::GenericOp generic) {
  ImplicitLocOpBuilder &b = *builder;
  Block &region = generic.getRegion().front();
  unsigned numInputs = generic.getNumDpsInputs();
  // The results start from the inits (zeros where the body ignores them).
  SmallVector<Value> results;
  for (auto [k, init] : llvm::enumerate(generic.getDpsInits())) {
    Value result = generic->getResult(k);
    if (region.getArgument(numInputs + k).use_empty()) {
      results.push_back(zeroSlice(result));
      continue;
    }
    if (!slices.count(init))
      return op.emitOpError()
             << "has no GPU mapping: a linalg.generic in its combiner reads "
                "an init that no op wrote";
    results.push_back(materialize(init));
  }
  // Loops over the loop dimensions that are not thread coordinates.
  unsigned numLoops = generic.getNumLoops();
  SmallVector<Value> loopIndex(numLoops);
  SmallVector<unsigned> heldLoops;
  SmallVector<int64_t> bounds = generic.getStaticLoopRanges();
  for (unsigned l = 0; l < numLoops; ++l) {
    unsigned cls = classOf(loopSlot(generic, l));
    if (isParallel(cls))
      loopIndex[l] = coords[coordIndex[cls]];
    else
      heldLoops.push_back(l);
  }
  auto indicesOf = [&](OpOperand &operand) {
    AffineMap map = generic.getMatchingIndexingMap(&operand);
    SmallVector<Value> at;
    for (unsigned j = 0; j < map.getNumResults(); ++j)
      at.push_back(loopIndex[map.getDimPosition(j)]);
    return at;
  };
  std::function<SmallVector<Value>(unsigned, ValueRange)> nest =
      [&](unsigned k, ValueRange acc) -> SmallVector<Value> {
    if (k < heldLoops.size()) {
      unsigned l = heldLoops[k];
      int64_t extent = bounds[l] != ShapedType::kDynamic
                           ? bounds[l]
                           : classSize[classOf(loopSlot(generic, l))];
      return SmallVector<Value>(e->forEachReduce(
          e->index(extent), acc,
          [&](Value iv, ValueRange carried) -> SmallVector<Value> {
            loopIndex[l] = iv;
            return nest(k + 1, carried);
          }));
    }
    for (OpOperand *input : generic.getDpsInputOperands())
      scalars.map(region.getArgument(input->getOperandNumber()),
                  read(input->get(), indicesOf(*input)));
    SmallVector<SmallVector<Value>> outAt;
    for (auto [k2, init] : llvm::enumerate(generic.getDpsInitsMutable())) {
      SmallVector<Value> at = indicesOf(init);
      Value result = generic->getResult(k2);
      Value current = acc[k2];
      if (isa<VectorType>(current.getType()))
        current = vector::ExtractOp::create(b, acc[k2],
                                            heldPosition(result, at));
      scalars.map(region.getArgument(numInputs + k2), current);
      outAt.push_back(at);
    }
    for (Operation &inner : region.without_terminator())
      b.clone(inner, scalars);
    auto terminator = cast<linalg::YieldOp>(region.getTerminator());
    SmallVector<Value> next;
    for (auto [k2, value] : llvm::enumerate(terminator.getValues())) {
      Value scalar = scalars.lookupOrDefault(value);
      if (!isa<VectorType>(acc[k2].getType())) {
        next.push_back(scalar);
        continue;
      }
      next.push_back(vector::InsertOp::create(
          b, scalar, acc[k2], heldPosition(generic->getResult(k2), outAt[k2])));
    }
    return next;
  };
  SmallVector<Value> out = nest(0, results);
  for (auto [k, result] : llvm::enumerate(generic->getResults()))
    slices[result].data = out[k];
  return success();
}

LogicalResult ScanLowering::combine(ArrayRef<Value> carries,
                                    SmallVectorImpl<Value> &folded) {
  ImplicitLocOpBuilder &b = *builder;
  for (unsigned i = 0; i < n; ++i)
    if (liveCarry[i])
      slices[body.getArgument(i)].data = carries[i];
  for (Operation *inner : liveOps) {
    if (!hasTensors(inner)) {
      b.clone(*inner, scalars);
      continue;
    }
    if (isa<tensor::EmptyOp>(inner))
      continue;
    if (auto constant = dyn_cast<arith::ConstantOp>(inner)) {
      auto splat = cast<SplatElementsAttr>(constant.getValue());
      slices[constant.getResult()].splat =
          arith::ConstantOp::create(b, splat.getSplatValue<TypedAttr>());
      continue;
    }
    if (auto fill = dyn_cast<linalg::FillOp>(inner)) {
      Value scalar = scalars.lookupOrDefault(fill.getInputs()[0]);
      slices[fill.getResult(0)].data =
          buildSlice(fill.getResult(0), [&](ArrayRef<Value>) { return scalar; });
      continue;
    }
    if (auto generic = dyn_cast<linalg::GenericOp>(inner)) {
      if (failed(emitGeneric(generic)))
        return failure();
      continue;
    }
    // Elementwise on tensors: the same op on each scalar of the slice.
    Value result = inner->getResult(0);
    Type elementType = cast<RankedTensorType>(result.getType()).getElementType();
    slices[result].data = buildSlice(result, [&](ArrayRef<Value> at) {
      SmallVector<Value> operands;
      for (Value operand : inner->getOperands())
        operands.push_back(read(operand, at));
      OperationState state(inner->getLoc(), inner->getName().getStringRef(),
                           operands, {elementType}, inner->getAttrs());
      return b.create(state)->getResult(0);
    });
  }
  for (unsigned i = 0; i < n; ++i)
    folded.push_back(liveCarry[i] ? materialize(yield.getValues()[i])
                                  : Value());
  return success();
}

void ScanLowering::storeSlice(unsigned i, Value data, Value buffer,
                              ArrayRef<Value> prefix) {
  ImplicitLocOpBuilder &b = *builder;
  Value element = body.getArgument(i);
  // One writer per element: the thread at coordinate 0 of every parallel
  // class the carry does not have.
  Value owner;
  DenseSet<unsigned> own;
  for (int64_t d = 0; d < op.getElementType(i).getRank(); ++d)
    own.insert(classOf(element, d));
  for (auto [k, cls] : llvm::enumerate(coordClasses)) {
    if (own.contains(cls))
      continue;
    Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                        coords[k], e->index(0));
    owner = owner ? arith::AndIOp::create(b, owner, first) : first;
  }
  OpBuilder::InsertionGuard guard(b);
  if (owner) {
    auto branch = scf::IfOp::create(b, owner, /*withElseRegion=*/false);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
  }
  forEachHeld(element, [&](ArrayRef<Value> at) {
    Value scalar = data;
    if (isa<VectorType>(data.getType()))
      scalar = vector::ExtractOp::create(b, data, heldPosition(element, at));
    SmallVector<Value> indices(prefix);
    indices.append(at.begin(), at.end());
    memref::StoreOp::create(b, scalar, buffer, indices);
  });
}

LogicalResult ScanLowering::run() {
  if (failed(findLive()))
    return failure();
  if (llvm::none_of(liveCarry, [](bool live) { return live; })) {
    op.erase(); // Nothing reads any result.
    return success();
  }
  if (failed(classify()))
    return failure();
  builder = std::make_unique<ImplicitLocOpBuilder>(op.getLoc(), op);
  ImplicitLocOpBuilder &b = *builder;
  e = std::make_unique<LoopEmitter>(b);

  Value first = op.getInputs()[0];
  Value scanLength = e->tensorDim(first, dim);
  SmallVector<Value> extents;
  for (int64_t d = 0; d < dim; ++d)
    extents.push_back(e->tensorDim(first, d));
  for (unsigned cls : coordClasses) {
    if (classSize[cls] != ShapedType::kDynamic) {
      extents.push_back(e->index(classSize[cls]));
      continue;
    }
    // A dynamic parallel size is an element dimension of an input.
    Value size;
    for (unsigned i = 0; i < n && !size; ++i)
      for (int64_t d = 0; d < op.getElementType(i).getRank(); ++d)
        if (classOf(body.getArgument(n + i), d) == cls) {
          size = e->tensorDim(op.getInputs()[i], dim + 1 + d);
          break;
        }
    if (!size)
      return op.emitOpError() << "has no GPU mapping: the size of a "
                                 "dimension of its combiner is unknown";
    extents.push_back(size);
  }

  for (Value input : op.getInputs())
    inputBuffers.push_back(e->toBuffer(input));
  SmallVector<Value> initBuffers(n), outputBuffers(n), carryBuffers(n);
  bool hasInit = !op.getInits().empty();
  for (unsigned i = 0; i < n; ++i) {
    if (!liveCarry[i])
      continue;
    Value input = op.getInputs()[i];
    auto inputType = cast<RankedTensorType>(input.getType());
    SmallVector<Value> sizes, carrySizes;
    for (int64_t d = 0; d < inputType.getRank(); ++d) {
      sizes.push_back(e->tensorDim(input, d));
      if (d != dim)
        carrySizes.push_back(sizes.back());
    }
    if (hasInit)
      initBuffers[i] = e->toBuffer(op.getInits()[i]);
    if (!op.getOutputs()[i].use_empty())
      outputBuffers[i] = e->allocFor(op.getOutputs()[i].getType(), sizes);
    if (!op.getCarries()[i].use_empty())
      carryBuffers[i] = e->allocFor(op.getCarries()[i].getType(), carrySizes);
  }

  Value total = e->index(1);
  for (Value extent : extents)
    total = e->mulIndex(total, extent);
  Value perBlock = e->index(kThreadsPerBlock);
  Value blocks = arith::MaxUIOp::create(
      b, arith::CeilDivUIOp::create(b, total, perBlock), e->index(1));
  auto launch = gpu::LaunchOp::create(b, blocks, e->index(1), e->index(1),
                                      perBlock, e->index(1), e->index(1));
  LogicalResult status = success();
  {
    OpBuilder::InsertionGuard guard(b);
    Block &kernel = launch.getBody().front();
    b.setInsertionPointToEnd(&kernel);
    auto terminator = gpu::TerminatorOp::create(b);
    b.setInsertionPoint(terminator);
    Value flat = e->addIndex(e->mulIndex(launch.getBlockIds().x, perBlock),
                             launch.getThreadIds().x);
    auto inRange = scf::IfOp::create(
        b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, flat, total),
        /*withElseRegion=*/false);
    b.setInsertionPoint(inRange.thenBlock()->getTerminator());
    // Delinearise: the last coordinate varies fastest.
    SmallVector<Value> index(extents.size());
    for (int64_t k = extents.size() - 1; k >= 0; --k) {
      index[k] = arith::RemUIOp::create(b, flat, extents[k]);
      flat = arith::DivUIOp::create(b, flat, extents[k]);
    }
    lead.assign(index.begin(), index.begin() + dim);
    coords.assign(index.begin() + dim, index.end());

    // The next element is read from input #i where the combiner needs it.
    for (unsigned i = 0; i < n; ++i)
      slices[body.getArgument(n + i)].input = i;

    // The carries start from init, or (inclusive without init) from the
    // first element, taken by the first step.
    SmallVector<Value> carries;
    for (unsigned i = 0; i < n; ++i) {
      Value element = body.getArgument(i);
      if (!liveCarry[i]) {
        carries.push_back(Value());
        continue;
      }
      if (hasInit) {
        carries.push_back(buildSlice(element, [&](ArrayRef<Value> at) {
          SmallVector<Value> indices(lead);
          indices.append(at.begin(), at.end());
          return memref::LoadOp::create(b, initBuffers[i], indices);
        }));
      } else {
        carries.push_back(zeroSlice(element));
      }
    }
    SmallVector<Value> liveInits;
    for (Value carry : carries)
      if (carry)
        liveInits.push_back(carry);

    auto storeOutputs = [&](ArrayRef<Value> values, Value t) {
      SmallVector<Value> prefix(lead);
      prefix.push_back(t);
      for (unsigned i = 0; i < n; ++i)
        if (outputBuffers[i])
          storeSlice(i, values[i], outputBuffers[i], prefix);
    };
    auto unpack = [&](ValueRange live) {
      SmallVector<Value> all;
      unsigned k = 0;
      for (unsigned i = 0; i < n; ++i)
        all.push_back(liveCarry[i] ? live[k++] : Value());
      return all;
    };
    auto pack = [&](ArrayRef<Value> all) {
      SmallVector<Value> live;
      for (unsigned i = 0; i < n; ++i)
        if (liveCarry[i])
          live.push_back(all[i]);
      return live;
    };
    ValueRange finals = e->forEachReduce(
        scanLength, liveInits,
        [&](Value s, ValueRange carried) -> SmallVector<Value> {
          Value t = op.getReverse()
                        ? e->subIndex(e->subIndex(scanLength, e->index(1)), s)
                        : s;
          nextAt = t;
          SmallVector<Value> current = unpack(carried);
          if (op.getExclusive())
            storeOutputs(current, t);
          SmallVector<Value> folded;
          if (hasInit) {
            if (failed(combine(current, folded)))
              status = failure();
          } else {
            // The first step takes the first element as it is.
            Value isFirst = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                                  s, e->index(0));
            auto branch = scf::IfOp::create(b, ValueRange(carried).getTypes(),
                                            isFirst, /*withElseRegion=*/true);
            OpBuilder::InsertionGuard inner(b);
            b.setInsertionPointToStart(branch.thenBlock());
            SmallVector<Value> firsts;
            for (unsigned i = 0; i < n; ++i)
              if (liveCarry[i])
                firsts.push_back(materialize(body.getArgument(n + i)));
            scf::YieldOp::create(b, firsts);
            b.setInsertionPointToStart(branch.elseBlock());
            SmallVector<Value> combined;
            if (failed(combine(current, combined)))
              status = failure();
            scf::YieldOp::create(b, pack(combined));
            folded = unpack(branch.getResults());
          }
          if (!op.getExclusive())
            storeOutputs(folded, t);
          return pack(folded);
        });
    SmallVector<Value> finalCarries = unpack(finals);
    for (unsigned i = 0; i < n; ++i)
      if (carryBuffers[i])
        storeSlice(i, finalCarries[i], carryBuffers[i], lead);
  }
  if (failed(status))
    return failure();

  for (unsigned i = 0; i < n; ++i) {
    if (outputBuffers[i])
      op.getOutputs()[i].replaceAllUsesWith(
          e->toTensor(outputBuffers[i], op.getOutputs()[i].getType()));
    if (carryBuffers[i])
      op.getCarries()[i].replaceAllUsesWith(
          e->toTensor(carryBuffers[i], op.getCarries()[i].getType()));
  }
  op.erase();
  return success();
}

struct ConvertLinAttnScanToGPU
    : impl::ConvertLinAttnScanToGPUBase<ConvertLinAttnScanToGPU> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<ScanOp> scans;
    getOperation()->walk([&](ScanOp op) { scans.push_back(op); });
    for (ScanOp scan : scans) {
      if (failed(ScanLowering(scan, maxHeld).run()))
        return signalPassFailure();
      ++numKernels;
    }
  }
};

} // namespace
} // namespace mlir::linattn
