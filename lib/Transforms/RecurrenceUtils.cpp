//===- RecurrenceUtils.cpp - Helpers for rewriting recurrences ------------===//

#include "RecurrenceUtils.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

namespace mlir::linattn {

template <typename SpecOp>
SmallVector<Value> batchAndSeqSizes(OpBuilder &b, SpecOp op) {
  SmallVector<Value> sizes;
  auto qType = cast<RankedTensorType>(op.getQ().getType());
  for (int64_t d = 0; d < 2; ++d)
    if (qType.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(b, op.getLoc(), op.getQ(), d));
  return sizes;
}

/// f(hv) on every token, [B, T, HV] f32: a chain of selects on hv, not a
/// constant table, which bufferized is a host global that every GPU call
/// would first copy to the device.
template <typename SpecOp>
static Value buildPerHeadConstant(OpBuilder &b, SpecOp op,
                                  function_ref<float(int64_t)> f) {
  int64_t numVHeads = op.getNumVHeads();
  auto type = RankedTensorType::get(
      {op.getBatchSize(), op.getSeqLen(), numVHeads}, b.getF32Type());
  return tensor::GenerateOp::create(
      b, op.getLoc(), type, batchAndSeqSizes(b, op),
      [&](OpBuilder &nested, Location l, ValueRange ivs) {
        auto at = [&](int64_t hv) -> Value {
          return arith::ConstantOp::create(nested, l,
                                           nested.getF32FloatAttr(f(hv)));
        };
        Value g = at(numVHeads - 1);
        for (int64_t hv = numVHeads - 2; hv >= 0; --hv) {
          Value isHead = arith::CmpIOp::create(
              nested, l, arith::CmpIPredicate::eq, ivs[2],
              arith::ConstantIndexOp::create(nested, l, hv));
          g = arith::SelectOp::create(nested, l, isHead, at(hv), g);
        }
        tensor::YieldOp::create(nested, l, g);
      });
}

template <typename SpecOp>
Value buildLogGate(OpBuilder &b, SpecOp op) {
  Location loc = op.getLoc();
  if (Value gate = op.getGate()) {
    auto type = cast<RankedTensorType>(gate.getType());
    if (type.getElementType().isF32())
      return gate;
    return arith::ExtFOp::create(
        b, loc, RankedTensorType::get(type.getShape(), b.getF32Type()), gate);
  }
  if (op.getKindInfo().decay != DecayForm::Constant)
    return Value();
  return buildPerHeadConstant(
      b, op, [&](int64_t hv) { return std::log(op.getDecayForHead(hv)); });
}

template <typename SpecOp>
Value buildConstantDecays(OpBuilder &b, SpecOp op) {
  return buildPerHeadConstant(
      b, op, [&](int64_t hv) { return op.getDecayForHead(hv); });
}

template <typename SpecOp>
std::pair<Value, Value> buildQueriesAndKeys(OpBuilder &b, SpecOp op,
                                            Type normalisedElem) {
  if (!op.getQkL2norm())
    return {op.getQ(), op.getK()};
  auto normalised = [&](Value x) -> Value {
    auto type = cast<RankedTensorType>(x.getType());
    return L2NormOp::create(
        b, op.getLoc(), RankedTensorType::get(type.getShape(), normalisedElem),
        x);
  };
  return {normalised(op.getQ()), normalised(op.getK())};
}

template <typename SpecOp>
std::optional<std::pair<Value, Value>> buildFactoredNorms(OpBuilder &b,
                                                         SpecOp op) {
  if (!op.getQkL2norm() || !op.getKindInfo().hasRank1())
    return std::nullopt;
  auto rnorm = [&](Value x) -> Value {
    auto type = cast<RankedTensorType>(x.getType());
    return RNormOp::create(
        b, op.getLoc(),
        RankedTensorType::get(type.getShape().drop_back(), b.getF32Type()), x);
  };
  return std::pair{rnorm(op.getQ()), rnorm(op.getK())};
}

#define LINATTN_INSTANTIATE_SPEC_HELPERS(SpecOp)                              \
  template SmallVector<Value> batchAndSeqSizes(OpBuilder &, SpecOp);           \
  template std::optional<std::pair<Value, Value>> buildFactoredNorms(          \
      OpBuilder &, SpecOp);                                                    \
  template Value buildLogGate(OpBuilder &, SpecOp);                            \
  template Value buildConstantDecays(OpBuilder &, SpecOp);                     \
  template std::pair<Value, Value> buildQueriesAndKeys(OpBuilder &, SpecOp,    \
                                                       Type);
LINATTN_INSTANTIATE_SPEC_HELPERS(RecurrenceOp)
LINATTN_INSTANTIATE_SPEC_HELPERS(RecurrenceGradOp)
#undef LINATTN_INSTANTIATE_SPEC_HELPERS

RankedTensorType getWYWeightType(RankedTensorType keyType, int64_t numVHeads,
                                 float rank1Scale, bool allowSplit) {
  Type kElem = keyType.getElementType();
  int64_t batch = keyType.getDimSize(0), seqLen = keyType.getDimSize(1),
          K = keyType.getDimSize(3);
  bool narrowW = rank1Scale == 1.0f;
  if (allowSplit && !narrowW && !kElem.isF32())
    return RankedTensorType::get({batch, seqLen, numVHeads, 2, K}, kElem);
  return RankedTensorType::get(
      {batch, seqLen, numVHeads, K},
      narrowW ? kElem : Float32Type::get(keyType.getContext()));
}

Value buildZeros(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                 ValueRange dynamicSizes, float value) {
  auto type = RankedTensorType::get(shape, b.getF32Type());
  Value empty = tensor::EmptyOp::create(b, loc, type, dynamicSizes);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
  return linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{empty})
      .getResult(0);
}

/// The combiner block of `scan`, with arguments of its element types.
static Block *createCombinerBlock(OpBuilder &b, ScanOp scan) {
  unsigned n = scan.getInputs().size();
  SmallVector<Type> argTypes;
  for (unsigned r = 0; r < 2; ++r)
    for (unsigned i = 0; i < n; ++i)
      argTypes.push_back(scan.getElementType(i));
  return b.createBlock(&scan.getCombiner(), {}, argTypes,
                       SmallVector<Location>(2 * n, scan.getLoc()));
}

void buildDecayCombiner(OpBuilder &b, ScanOp scan, ScanDecay form) {
  using utils::IteratorType;
  OpBuilder::InsertionGuard guard(b);
  Location loc = scan.getLoc();
  Block *body = createCombinerBlock(b, scan);
  if (form == ScanDecay::None) {
    Value sum = arith::AddFOp::create(b, loc, body->getArgument(0),
                                      body->getArgument(1));
    YieldOp::create(b, loc, ValueRange{sum});
    return;
  }
  bool logSpace = form == ScanDecay::Log;
  Value g1 = body->getArgument(0), b1 = body->getArgument(1);
  Value g2 = body->getArgument(2), b2 = body->getArgument(3);
  Value g = logSpace ? arith::AddFOp::create(b, loc, g1, g2).getResult()
                     : arith::MulFOp::create(b, loc, g1, g2).getResult();
  auto bType = cast<RankedTensorType>(b1.getType());
  int64_t rank = bType.getRank();
  int64_t gateRank = cast<RankedTensorType>(g2.getType()).getRank();
  MLIRContext *ctx = b.getContext();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, ctx);
  // The gate broadcasts over B's trailing dims: (hv[, i], j) <- hv[, i].
  AffineMap gateMap =
      AffineMap::get(rank, 0, id.getResults().take_front(gateRank), ctx);
  Value init = tensor::EmptyOp::create(b, loc, bType, ValueRange{});
  Value composed =
      linalg::GenericOp::create(
          b, loc, TypeRange{bType}, ValueRange{g2, b1, b2}, ValueRange{init},
          ArrayRef<AffineMap>{gateMap, id, id, id},
          SmallVector<IteratorType>(rank, IteratorType::parallel),
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value decay =
                logSpace ? math::ExpOp::create(nb, l, args[0]).getResult()
                         : args[0];
            Value s = arith::MulFOp::create(nb, l, decay, args[1]);
            Value sum = arith::AddFOp::create(nb, l, s, args[2]);
            linalg::YieldOp::create(nb, l, sum);
          })
          .getResult(0);
  YieldOp::create(b, loc, ValueRange{g, composed});
}

void buildDenseAffineCombiner(OpBuilder &b, ScanOp scan) {
  using utils::IteratorType;
  OpBuilder::InsertionGuard guard(b);
  Location loc = scan.getLoc();
  Block *body = createCombinerBlock(b, scan);
  Value m1 = body->getArgument(0), b1 = body->getArgument(1);
  Value m2 = body->getArgument(2), b2 = body->getArgument(3);
  MLIRContext *ctx = b.getContext();
  AffineExpr h, i, j, l;
  bindDims(ctx, h, i, j, l);
  auto map = [&](ArrayRef<AffineExpr> r) { return AffineMap::get(4, 0, r, ctx); };
  SmallVector<IteratorType> iters = {IteratorType::parallel,
                                     IteratorType::parallel,
                                     IteratorType::parallel,
                                     IteratorType::reduction};
  auto matmulAccumulate = [&](Value lhs, Value rhs, Value acc) -> Value {
    // acc[h, i, j] += lhs[h, i, l] rhs[h, l, j]
    return linalg::GenericOp::create(
               b, loc, TypeRange{acc.getType()}, ValueRange{lhs, rhs},
               ValueRange{acc},
               ArrayRef<AffineMap>{map({h, i, l}), map({h, l, j}),
                                   map({h, i, j})},
               iters,
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 Value p = arith::MulFOp::create(nb, nl, args[0], args[1]);
                 Value sum = arith::AddFOp::create(nb, nl, args[2], p);
                 linalg::YieldOp::create(nb, nl, sum);
               })
        .getResult(0);
  };
  auto mType = cast<RankedTensorType>(m1.getType());
  Value m = matmulAccumulate(m2, m1,
                             buildZeros(b, loc, mType.getShape(), ValueRange{}));
  Value offset = matmulAccumulate(m2, b1, b2);
  YieldOp::create(b, loc, ValueRange{m, offset});
}

Value buildFewStateColumns(OpBuilder &b, Location loc, Value values,
                           int64_t maxStateColumns) {
  auto type = cast<RankedTensorType>(values.getType());
  assert(!type.isDynamicDim(2) && !type.isDynamicDim(3) &&
         "static value heads and value head size");
  Value batch = tensor::DimOp::create(b, loc, values, 0);
  Value columns = arith::MulIOp::create(
      b, loc, batch,
      arith::ConstantIndexOp::create(b, loc,
                                     type.getDimSize(2) * type.getDimSize(3)));
  return arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ule, columns,
      arith::ConstantIndexOp::create(b, loc, maxStateColumns));
}

void branchOnStateColumns(Operation *op, Value cond, bool markThen,
                          int64_t columns) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto ifOp = scf::IfOp::create(b, loc, op->getResultTypes(), cond,
                                /*withElseRegion=*/true);
  for (bool then : {true, false}) {
    OpBuilder bb = OpBuilder::atBlockEnd(then ? ifOp.thenBlock()
                                              : ifOp.elseBlock());
    Operation *clone = bb.clone(*op);
    if (then == markThen)
      clone->setAttr(chunked_kernels::kStateColumnsAttrName,
                     bb.getI64IntegerAttr(columns));
    scf::YieldOp::create(bb, loc, clone->getResults());
  }
  op->replaceAllUsesWith(ifOp.getResults());
  op->erase();
}

} // namespace mlir::linattn
