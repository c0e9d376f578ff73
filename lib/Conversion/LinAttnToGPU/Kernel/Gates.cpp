//===- Gates.cpp - Log gates inside a chunked kernel ----------------------===//

#include "Gates.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::linattn::kernel {

GateReader::GateReader(LoopEmitter &e, Value gate) : e(e) {
  generator = gate.getDefiningOp<tensor::GenerateOp>();
  if (!generator || !inlinable(generator))
    buffer = e.toBuffer(gate), generator = nullptr;
}

Value GateReader::read(ImplicitLocOpBuilder &b, ValueRange indices) {
  if (!generator)
    return e.loadF32(buffer, indices);
  IRMapping map;
  Block &body = generator.getBody().front();
  for (auto [arg, idx] : llvm::zip(body.getArguments(), indices))
    map.map(arg, idx);
  for (Operation &op : body.without_terminator()) {
    if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
      auto cst = extract.getTensor().getDefiningOp<arith::ConstantOp>();
      auto dense = cast<DenseElementsAttr>(cst.getValue());
      auto vecType = VectorType::get(dense.getType().getShape(),
                                     dense.getType().getElementType());
      Value vec = arith::ConstantOp::create(b, dense.reshape(
          cast<ShapedType>(vecType)));
      Value x = vector::ExtractOp::create(
          b, vec, ArrayRef<OpFoldResult>{map.lookupOrDefault(extract.getIndices()[0])});
      map.map(extract.getResult(), x);
      continue;
    }
    b.clone(op, map);
  }
  Value y = map.lookupOrDefault(body.getTerminator()->getOperand(0));
  if (!y.getType().isF32())
    y = arith::ExtFOp::create(b, b.getF32Type(), y);
  return y;
}

Value GateReader::size(int64_t d) {
  if (!generator)
    return e.dim(buffer, d);
  RankedTensorType type = generator.getType();
  if (!type.isDynamicDim(d))
    return e.index(type.getDimSize(d));
  return generator.getDynamicExtents()[type.getDynamicDimIndex(d)];
}

bool GateReader::inlinable(tensor::GenerateOp op) {
  for (Operation &inner : op.getBody().front().without_terminator()) {
    if (auto extract = dyn_cast<tensor::ExtractOp>(inner)) {
      auto cst = extract.getTensor().getDefiningOp<arith::ConstantOp>();
      if (!cst || extract.getIndices().size() != 1 ||
          !isa<DenseElementsAttr>(cst.getValue()))
        return false;
      continue;
    }
    if (inner.getNumRegions() != 0 || !isPure(&inner))
      return false;
    for (Value operand : inner.getOperands())
      if (!op.getBody().isAncestor(operand.getParentRegion()) &&
          !operand.getDefiningOp<arith::ConstantOp>())
        return false;
  }
  return true;
}

void fillRowScalars(KernelEmitter &k, Value dst, ChunkRows rows,
                    function_ref<Value(Value)> row, int64_t numRows) {
  LoopEmitter &e = k.e;
  auto ifOp = scf::IfOp::create(k.b, k.ult(k.tid, e.index(numRows)), false);
  OpBuilder::InsertionGuard guard(k.b);
  k.b.setInsertionPointToStart(ifOp.thenBlock());
  memref::StoreOp::create(k.b, readRowScalar(k, rows, row), dst,
                          ValueRange{k.tid});
}

Value readRowScalar(KernelEmitter &k, ChunkRows rows,
                    function_ref<Value(Value)> row) {
  return k.loadRowOrZero(k.tid, rows.valid, k.b.getF32Type(), [&](Value r) {
    return row(k.e.addIndex(rows.t0, r));
  });
}

void storeRowScalars(KernelEmitter &k,
                     ArrayRef<std::pair<Value, Value>> valuesAndDsts,
                     int64_t numRows) {
  auto ifOp = scf::IfOp::create(k.b, k.ult(k.tid, k.e.index(numRows)), false);
  OpBuilder::InsertionGuard guard(k.b);
  k.b.setInsertionPointToStart(ifOp.thenBlock());
  for (auto [x, dst] : valuesAndDsts)
    memref::StoreOp::create(k.b, x, dst, ValueRange{k.tid});
}

void fillRowGates(KernelEmitter &k, Value dst, Value gates, Value bIdx,
                  ChunkRows rows, Value hv, int64_t numRows) {
  LoopEmitter &e = k.e;
  if (!gates) {
    auto ifOp = scf::IfOp::create(k.b, k.ult(k.tid, e.index(numRows)), false);
    OpBuilder::InsertionGuard guard(k.b);
    k.b.setInsertionPointToStart(ifOp.thenBlock());
    memref::StoreOp::create(k.b, e.f32(0.0f), dst, ValueRange{k.tid});
    return;
  }
  fillRowScalars(k, dst, rows, [&](Value t) {
    return e.loadF32(gates, {bIdx, t, hv});
  }, numRows);
}

SmallVector<Value> warpChunkCumsum(KernelEmitter &k, GateReader &gate, Value bIdx,
                                   ChunkRows rows, Value hv,
                                   int64_t rowsPerChunk) {
  return sumChunkGates(k, readChunkGates(k, gate, bIdx, rows, hv, rowsPerChunk));
}

SmallVector<Value> readChunkGates(KernelEmitter &k, GateReader &gate, Value bIdx,
                                  ChunkRows rows, Value hv,
                                  int64_t rowsPerChunk) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  int64_t perLane = rowsPerChunk / 32;
  Value r0 = e.mulIndex(k.lane, e.index(perLane));
  SmallVector<Value> g;
  for (int64_t j = 0; j < perLane; ++j)
    g.push_back(k.loadRowOrZero(e.addIndex(r0, e.index(j)), rows.valid,
                                b.getF32Type(), [&](Value row) {
      return gate.read(b, {bIdx, e.addIndex(rows.t0, row), hv});
    }));
  return g;
}

SmallVector<Value> sumChunkGates(KernelEmitter &k, ArrayRef<Value> g) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  int64_t perLane = g.size();
  Value laneI32 = arith::IndexCastOp::create(b, b.getI32Type(), k.lane);
  // x from lane - offset, 0 for the first `offset` lanes.
  auto up = [&](Value x, int32_t offset) {
    Value y = gpu::ShuffleOp::create(b, x, offset, 32, gpu::ShuffleMode::UP)
                  .getShuffleResult();
    Value inRange = arith::CmpIOp::create(
        b, arith::CmpIPredicate::sge, laneI32,
        arith::ConstantIntOp::create(b, offset, 32));
    return k.select(inRange, y, e.f32(0.0f));
  };
  Value laneSum = g[0];
  for (int64_t j = 1; j < perLane; ++j)
    laneSum = e.add(laneSum, g[j]);
  for (int32_t offset = 1; offset < 32; offset *= 2)
    laneSum = e.add(laneSum, up(laneSum, offset));
  SmallVector<Value> sums{e.add(up(laneSum, 1), g[0])};
  for (int64_t j = 1; j < perLane; ++j)
    sums.push_back(e.add(sums.back(), g[j]));
  return sums;
}

void storeChunkCumsum(KernelEmitter &k, ArrayRef<Value> sums, Value dst,
                      Value rowShared, Value bIdx, ChunkRows rows, Value hv) {
  LoopEmitter &e = k.e;
  Value r0 = e.mulIndex(k.lane, e.index(sums.size()));
  for (auto [j, sum] : llvm::enumerate(sums)) {
    Value r = e.addIndex(r0, e.index(j));
    Value valid = k.ult(r, rows.valid);
    if (rowShared)
      memref::StoreOp::create(k.b, k.select(valid, sum, e.f32(0.0f)), rowShared,
                              ValueRange{r});
    auto ifOp = scf::IfOp::create(k.b, valid, false);
    OpBuilder::InsertionGuard guard(k.b);
    k.b.setInsertionPointToStart(ifOp.thenBlock());
    memref::StoreOp::create(k.b, sum, dst,
                            ValueRange{bIdx, e.addIndex(rows.t0, r), hv});
  }
}

void decayRows(KernelEmitter &k, Value src, Value dst, Value g, Value valid,
               function_ref<Value(Value)> ref, int64_t cols, Value srcLo,
               Value dstLo, bool sinceRef) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  constexpr int64_t kWidth = 8;
  Type elem = cast<MemRefType>(dst.getType()).getElementType();
  int64_t perRow = cols / kWidth;
  k.forEachOfBlock(kChunk * perRow, [&](Value idx) {
    Value r = arith::DivUIOp::create(b, idx, e.index(perRow));
    Value c = e.mulIndex(arith::RemUIOp::create(b, idx, e.index(perRow)),
                         e.index(kWidth));
    Value xs = k.loadWidenedJoined(src, srcLo, {r, c}, kWidth);
    Value gs = k.loadWidened(g, {r, c}, kWidth);
    Value gRef = ref ? k.loadWidened(g, {ref(r), c}, kWidth) : Value();
    Value keep = k.ult(r, valid);
    SmallVector<Value> ys;
    for (int64_t i = 0; i < kWidth; ++i) {
      Value gi = vector::ExtractOp::create(b, gs, i);
      Value decay = gi;
      if (gRef) {
        Value gr = vector::ExtractOp::create(b, gRef, i);
        decay = sinceRef ? e.sub(gi, gr) : e.sub(gr, gi);
      }
      decay = k.exp(decay);
      ys.push_back(k.select(
          keep, e.mul(vector::ExtractOp::create(b, xs, i), decay), e.f32(0.0f)));
    }
    Value y = vector::FromElementsOp::create(
        b, VectorType::get({kWidth}, b.getF32Type()), ys);
    if (elem.isF32()) {
      vector::StoreOp::create(b, y, dst, ValueRange{r, c},
                              /*nontemporal=*/false, llvm::Align(16));
      return;
    }
    auto narrow = VectorType::get({kWidth}, elem);
    auto [hi, lo] = dstLo ? k.split(y, narrow)
                          : std::pair<Value, Value>(
                                arith::TruncFOp::create(b, narrow, y), Value());
    for (auto [part, buf] : {std::pair{hi, dst}, std::pair{lo, dstLo}})
      if (buf)
        vector::StoreOp::create(b, part, buf, ValueRange{r, c},
                                /*nontemporal=*/false, llvm::Align(16));
  });
}

Value sumChunkTotals(KernelEmitter &k, Value gates, Value bIdx, Value hv,
                     Value m0, Value m1, int64_t maxChunks, int64_t chunk,
                     Value seqLen) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  Type f32 = b.getF32Type();
  Value sum = e.f32(0.0f);
  if (!gates)
    return sum;
  for (int64_t j = 0; j * 32 < maxChunks; ++j) {
    Value m = e.addIndex(m0, e.addIndex(k.lane, e.index(32 * j)));
    auto ifOp = scf::IfOp::create(b, TypeRange{f32}, k.ult(m, m1), true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value t = e.subIndex(
          e.minIndex(e.mulIndex(e.addIndex(m, e.index(1)), e.index(chunk)), seqLen),
          e.index(1));
      scf::YieldOp::create(b, e.loadF32(gates, {bIdx, t, hv}));
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, e.f32(0.0f));
    }
    sum = e.add(sum, ifOp.getResult(0));
  }
  return k.warpSum(sum);
}

} // namespace mlir::linattn::kernel
