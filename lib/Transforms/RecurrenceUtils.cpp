//===- RecurrenceUtils.cpp - Helpers for rewriting recurrences ------------===//

#include "RecurrenceUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

namespace mlir::linattn {

SmallVector<Value> batchAndSeqSizes(OpBuilder &b, RecurrenceOp op) {
  SmallVector<Value> sizes;
  auto qType = cast<RankedTensorType>(op.getQ().getType());
  for (int64_t d = 0; d < 2; ++d)
    if (qType.isDynamicDim(d))
      sizes.push_back(tensor::DimOp::create(b, op.getLoc(), op.getQ(), d));
  return sizes;
}

Value buildLogGate(OpBuilder &b, RecurrenceOp op) {
  Location loc = op.getLoc();
  if (Value gate = op.getGate()) {
    auto type = cast<RankedTensorType>(gate.getType());
    if (type.getElementType().isF32())
      return gate;
    return arith::ExtFOp::create(
        b, loc, RankedTensorType::get(type.getShape(), b.getF32Type()), gate);
  }
  if (op.getKind() != TransitionKind::ConstantDecay)
    return Value();
  int64_t numVHeads = op.getNumVHeads();
  SmallVector<Attribute> logGammas;
  for (int64_t hv = 0; hv < numVHeads; ++hv)
    logGammas.push_back(b.getF32FloatAttr(std::log(op.getDecayForHead(hv))));
  auto tableType = RankedTensorType::get({numVHeads}, b.getF32Type());
  Value table = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(tableType, logGammas));
  auto gateType = RankedTensorType::get(
      {op.getBatchSize(), op.getSeqLen(), numVHeads}, b.getF32Type());
  return tensor::GenerateOp::create(
      b, loc, gateType, batchAndSeqSizes(b, op),
      [&](OpBuilder &nested, Location l, ValueRange ivs) {
        Value g = tensor::ExtractOp::create(nested, l, table, ivs[2]);
        tensor::YieldOp::create(nested, l, g);
      });
}

std::pair<Value, Value> buildQueriesAndKeys(OpBuilder &b, RecurrenceOp op) {
  if (!op.getQkL2norm())
    return {op.getQ(), op.getK()};
  auto normalised = [&](Value x) -> Value {
    auto type = cast<RankedTensorType>(x.getType());
    return L2NormOp::create(
        b, op.getLoc(), RankedTensorType::get(type.getShape(), b.getF32Type()),
        x);
  };
  return {normalised(op.getQ()), normalised(op.getK())};
}

} // namespace mlir::linattn
