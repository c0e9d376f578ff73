//===- LinAttnToLoops.cpp - linattn.recurrence to its sequential loop -----===//
//
// The semantic oracle: lowers linattn.recurrence to the loop that defines it,
//
//     S = M_t S + b_t k_t v_t^T,        o_t = scale * S^T q_t,
//
// on memrefs, in fp32, one (b, hv) pair at a time. Every other algorithm
// LinAttn generates is proved equal to this loop.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Conversion/Passes.h"

#include "LoopEmitter.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_CONVERTLINATTNTOLOOPS
#include "LinAttn/Conversion/Passes.h.inc"

namespace {

/// Lowers one linattn.recurrence in place.
class RecurrenceLowering {
public:
  RecurrenceLowering(RecurrenceOp op, ImplicitLocOpBuilder &b)
      : op(op), b(b), e(b) {}

  void run();

private:
  Value toBuffer(Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
    return bufferization::ToBufferOp::create(b, memrefType, tensor,
                                             /*read_only=*/true);
  }

  /// A fresh buffer of the result's type, sized from `sizes` where dynamic.
  Value allocResult(Value result, ArrayRef<Value> sizes) {
    auto type = cast<RankedTensorType>(result.getType());
    SmallVector<Value> dynamic;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamic.push_back(sizes[d]);
    return memref::AllocOp::create(
        b, MemRefType::get(type.getShape(), type.getElementType()), dynamic);
  }

  Value allocScratch(int64_t n) {
    return memref::AllocOp::create(b,
                                   MemRefType::get({n}, b.getF32Type()));
  }

  /// Emits cf.assert for every dimension equality that is not known
  /// statically (e.g. T of v against T of q), so a bad call fails loudly
  /// instead of reading out of bounds.
  void emitDynamicShapeChecks(ArrayRef<Value> buffers);

  /// One token t of sequence b and value head hv: the state update and o_t.
  void emitToken(Value bIdx, Value hv, Value h, Value t, Value gamma);

  RecurrenceOp op;
  ImplicitLocOpBuilder &b;
  LoopEmitter e;

  // Buffers of the operands and results, and fp32 scratch vectors.
  Value q, k, v, gate, beta, outBuf, stateBuf;
  Value qVec, kVec, vVec, uVec, oVec;
  int64_t K = 0, V = 0;
};

void RecurrenceLowering::emitDynamicShapeChecks(ArrayRef<Value> buffers) {
  for (const RecurrenceOp::DimEquality &eq : op.getDimEqualities()) {
    auto lhsType = cast<MemRefType>(buffers[eq.lhsOperand].getType());
    auto rhsType = cast<MemRefType>(buffers[eq.rhsOperand].getType());
    if (!lhsType.isDynamicDim(eq.lhsDim) && !rhsType.isDynamicDim(eq.rhsDim))
      continue; // Proved by the verifier.
    Value lhs = e.dim(buffers[eq.lhsOperand], eq.lhsDim);
    Value rhs = e.dim(buffers[eq.rhsOperand], eq.rhsDim);
    Value same = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lhs, rhs);
    std::string msg = (Twine("linattn.recurrence: dimension ") + eq.what +
                       " of '" + op.getOperandName(eq.rhsOperand) +
                       "' does not match '" +
                       op.getOperandName(eq.lhsOperand) + "'")
                          .str();
    cf::AssertOp::create(b, same, b.getStringAttr(msg));
  }
}

// For one token, with a_i the diagonal of the decay (1, gamma, exp(g_t) or
// exp(g_t,i)), c = beta (2 beta for negeig_delta), b_t = beta or 1, and
// u = k^T S (delta kinds only):
//   S_ij <- a_i (S_ij - c k_i u_j) + b_t k_i v_j
//   o_j   = scale * sum_i S_ij q_i
void RecurrenceLowering::emitToken(Value bIdx, Value hv, Value h, Value t,
                                   Value gamma) {
  Value kDim = e.index(K), vDim = e.index(V);
  Value zero = e.f32(0.0f);

  // q_t, k_t and v_t in fp32 scratch.
  e.forEach(kDim, [&](Value i) {
    memref::StoreOp::create(b, e.loadF32(q, {bIdx, t, h, i}), qVec, i);
    memref::StoreOp::create(b, e.loadF32(k, {bIdx, t, h, i}), kVec, i);
  });
  e.forEach(vDim, [&](Value j) {
    memref::StoreOp::create(b, e.loadF32(v, {bIdx, t, hv, j}), vVec, j);
  });

  if (op.getQkL2norm()) {
    // x <- x / sqrt(sum(x^2) + eps) for q and k.
    ValueRange sums = e.forEachReduce(
        kDim, {zero, zero}, [&](Value i, ValueRange acc) -> SmallVector<Value> {
          Value qi = memref::LoadOp::create(b, qVec, i);
          Value ki = memref::LoadOp::create(b, kVec, i);
          return {e.add(acc[0], e.mul(qi, qi)), e.add(acc[1], e.mul(ki, ki))};
        });
    Value eps = e.f32(kL2NormEps), one = e.f32(1.0f);
    Value qInv = arith::DivFOp::create(
        b, one, math::SqrtOp::create(b, e.add(sums[0], eps)));
    Value kInv = arith::DivFOp::create(
        b, one, math::SqrtOp::create(b, e.add(sums[1], eps)));
    e.forEach(kDim, [&](Value i) {
      Value qi = memref::LoadOp::create(b, qVec, i);
      Value ki = memref::LoadOp::create(b, kVec, i);
      memref::StoreOp::create(b, e.mul(qi, qInv), qVec, i);
      memref::StoreOp::create(b, e.mul(ki, kInv), kVec, i);
    });
  }

  // The scalar decay of this token, if the kind has one.
  Value scalarDecay;
  TransitionKind kind = op.getKind();
  if (kind == TransitionKind::ConstantDecay)
    scalarDecay = gamma;
  else if (kind == TransitionKind::ScalarGate ||
           kind == TransitionKind::GatedDelta)
    scalarDecay = math::ExpOp::create(b, e.loadF32(gate, {bIdx, t, hv}));

  // Delta kinds: c = beta (or 2 beta), b_t = beta, u = k^T S.
  Value rank1Coeff, writeCoeff;
  bool delta = op.isDeltaRule();
  if (delta) {
    Value betaT = e.loadF32(beta, {bIdx, t, hv});
    writeCoeff = betaT;
    rank1Coeff = kind == TransitionKind::NegEigDelta
                     ? e.add(betaT, betaT)
                     : betaT;
    e.forEach(vDim, [&](Value j) { memref::StoreOp::create(b, zero, uVec, j); });
    e.forEach(kDim, [&](Value i) {
      Value ki = memref::LoadOp::create(b, kVec, i);
      e.forEach(vDim, [&](Value j) {
        Value s = memref::LoadOp::create(b, stateBuf, ValueRange{bIdx, hv, i, j});
        Value u = memref::LoadOp::create(b, uVec, j);
        memref::StoreOp::create(b, e.add(u, e.mul(ki, s)), uVec, j);
      });
    });
  }

  // State update fused with the output accumulation, row by row.
  e.forEach(vDim, [&](Value j) { memref::StoreOp::create(b, zero, oVec, j); });
  e.forEach(kDim, [&](Value i) {
    Value ki = memref::LoadOp::create(b, kVec, i);
    Value qi = memref::LoadOp::create(b, qVec, i);
    Value rowDecay = scalarDecay;
    if (kind == TransitionKind::KeyGate)
      rowDecay = math::ExpOp::create(b, e.loadF32(gate, {bIdx, t, hv, i}));
    Value kWrite = writeCoeff ? e.mul(writeCoeff, ki) : ki;
    Value kRank1 = delta ? e.mul(rank1Coeff, ki) : Value();
    e.forEach(vDim, [&](Value j) {
      Value s = memref::LoadOp::create(b, stateBuf, ValueRange{bIdx, hv, i, j});
      if (delta)
        s = e.sub(s, e.mul(kRank1, memref::LoadOp::create(b, uVec, j)));
      if (rowDecay)
        s = e.mul(rowDecay, s);
      s = e.add(s, e.mul(kWrite, memref::LoadOp::create(b, vVec, j)));
      memref::StoreOp::create(b, s, stateBuf, ValueRange{bIdx, hv, i, j});
      Value o = memref::LoadOp::create(b, oVec, j);
      memref::StoreOp::create(b, e.add(o, e.mul(s, qi)), oVec, j);
    });
  });

  Value scale = e.f32(op.getEffectiveScale());
  e.forEach(vDim, [&](Value j) {
    Value o = memref::LoadOp::create(b, oVec, j);
    e.storeFromF32(e.mul(scale, o), outBuf, {bIdx, t, hv, j});
  });
}

void RecurrenceLowering::run() {
  K = op.getKeyDim();
  V = op.getValueDim();
  int64_t numQKHeads = op.getNumQKHeads(), numVHeads = op.getNumVHeads();

  SmallVector<Value> operandBuffers;
  for (Value operand : op.getOperands())
    operandBuffers.push_back(toBuffer(operand));
  q = operandBuffers[0];
  k = operandBuffers[1];
  v = operandBuffers[2];
  unsigned next = 3;
  if (op.getGate())
    gate = operandBuffers[next++];
  if (op.getBeta())
    beta = operandBuffers[next++];
  Value initialState = operandBuffers[next];

  emitDynamicShapeChecks(operandBuffers);

  Value batch = e.dim(q, 0), seqLen = e.dim(q, 1);
  Value hvDim = e.index(numVHeads);
  outBuf = allocResult(op.getOutput(), {batch, seqLen, hvDim, e.index(V)});
  stateBuf = allocResult(op.getFinalState(),
                         {batch, hvDim, e.index(K), e.index(V)});
  memref::CopyOp::create(b, initialState, stateBuf);

  qVec = allocScratch(K);
  kVec = allocScratch(K);
  vVec = allocScratch(V);
  oVec = allocScratch(V);
  uVec = op.isDeltaRule() ? allocScratch(V) : Value();

  // gamma per value head for constant_decay, as a small constant table.
  Value gammaTable;
  if (op.getKind() == TransitionKind::ConstantDecay) {
    gammaTable = allocScratch(numVHeads);
    for (int64_t hv = 0; hv < numVHeads; ++hv)
      memref::StoreOp::create(b, e.f32(op.getDecayForHead(hv)), gammaTable,
                              e.index(hv));
  }

  Value group = e.index(numVHeads / numQKHeads);
  e.forEach(batch, [&](Value bIdx) {
    e.forEach(hvDim, [&](Value hv) {
      // Value head hv reads query/key head hv / (HV / H).
      Value h = arith::DivUIOp::create(b, hv, group);
      Value gamma = gammaTable ? memref::LoadOp::create(b, gammaTable, hv)
                               : Value();
      e.forEach(seqLen,
                [&](Value t) { emitToken(bIdx, hv, h, t, gamma); });
    });
  });

  for (Value scratch : {qVec, kVec, vVec, oVec, uVec, gammaTable})
    if (scratch)
      memref::DeallocOp::create(b, scratch);

  Value out = bufferization::ToTensorOp::create(
      b, op.getOutput().getType(), outBuf, /*restrict=*/true,
      /*writable=*/true);
  Value state = bufferization::ToTensorOp::create(
      b, op.getFinalState().getType(), stateBuf, /*restrict=*/true,
      /*writable=*/true);
  op.replaceAllUsesWith(ValueRange{out, state});
  op.erase();
}

struct ConvertLinAttnToLoops
    : impl::ConvertLinAttnToLoopsBase<ConvertLinAttnToLoops> {
  void runOnOperation() override {
    SmallVector<RecurrenceOp> ops;
    getOperation()->walk([&](RecurrenceOp op) { ops.push_back(op); });
    for (RecurrenceOp op : ops) {
      ImplicitLocOpBuilder b(op.getLoc(), op);
      RecurrenceLowering(op, b).run();
      ++numLowered;
    }
    lowerChunkedOpsToLoops(getOperation());
    lowerScansToLoops(getOperation());
  }
};

} // namespace
} // namespace mlir::linattn
