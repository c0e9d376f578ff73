//===- RecurrenceToGPU.cpp - linattn.recurrence to a split-key kernel -----===//
//
// The recurrent strategy on a GPU (decode, and the shapes the tensor-core
// kernels do not take): the defining loop,
//
//   u_j = sum_i k_i S_ij,  S_ij <- a_i (S_ij - c k_i u_j) + b_t k_i v_j,
//   o_j = scale sum_i S_ij q_i,
//
// with each state column split over kLanesPerColumn lanes of one warp, so
// that a lane holds K / kLanesPerColumn elements of it in registers (the
// loop lowering's one thread per column holds all K and spills at K = 128)
// and the sums over i (u, o, and the in-op L2 norms) finish with two
// shuffles. The state is read once and written once per call; q, k, the
// gates and beta are read per token by every lane that needs them.
//
//===----------------------------------------------------------------------===//

#include "Kernel/KernelEmitter.h"
#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Conversion/Passes.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Dialect/LinAttn/IR/TransitionKinds.h"
#include "LinAttn/Utils/LoopEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_CONVERTLINATTNRECURRENCETOGPU
#include "LinAttn/Conversion/Passes.h.inc"

namespace {
using namespace kernel;

using recurrent_kernel::kLanesPerColumn;
/// Columns of one block of kThreads threads.
constexpr int64_t kColumnsPerBlock = kThreads / kLanesPerColumn;

class RecurrenceKernel {
public:
  RecurrenceKernel(RecurrenceOp op, ImplicitLocOpBuilder &b)
      : op(op), b(b), e(b), kind(op.getKindInfo()) {}

  void run(RewriterBase &rewriter);

private:
  /// The sum of `x` over the kLanesPerColumn lanes of a column.
  Value sumOverColumnLanes(Value x) {
    for (int32_t offset = 1; offset < kLanesPerColumn; offset *= 2)
      x = e.add(x, gpu::ShuffleOp::create(b, x, offset, 32,
                                          gpu::ShuffleMode::XOR)
                       .getShuffleResult());
    return x;
  }

  /// 1 / sqrt(sum_i x_i^2 + eps) over the whole row, from this lane's keys.
  Value inverseNorm(ArrayRef<Value> xs) {
    Value sum = e.f32(0.0f);
    for (Value x : xs)
      sum = math::FmaOp::create(b, x, x, sum);
    sum = sumOverColumnLanes(sum);
    return arith::DivFOp::create(
        b, e.f32(1.0f),
        math::SqrtOp::create(b, e.add(sum, e.f32(L2NormOp::kEpsilon))));
  }

  /// One token: the lane's slots of the column after it, and the output.
  SmallVector<Value> step(Value bIdx, Value t, Value h, Value hv, Value column,
                          Value gamma, ArrayRef<Value> keys, ValueRange slots);

  RecurrenceOp op;
  ImplicitLocOpBuilder &b;
  LoopEmitter e;
  const TransitionKindInfo &kind;
  Value q, k, v, gate, beta, initialState, outBuf, stateBuf;
  Value isOutputLane; // slice 0 of a column inside V
};

SmallVector<Value> RecurrenceKernel::step(Value bIdx, Value t, Value h,
                                          Value hv, Value column, Value gamma,
                                          ArrayRef<Value> keys,
                                          ValueRange slots) {
  bool delta = kind.hasRank1();
  bool decayFirst = delta && kind.decay == DecayForm::PerKey;
  SmallVector<Value> ks, qs, s(slots.begin(), slots.end());
  for (Value i : keys) {
    ks.push_back(e.loadF32(k, {bIdx, t, h, i}));
    qs.push_back(e.loadF32(q, {bIdx, t, h, i}));
  }
  Value qScale = e.f32(op.getEffectiveScale());
  if (op.getQkL2norm()) {
    qScale = e.mul(qScale, inverseNorm(qs));
    Value kScale = inverseNorm(ks);
    for (Value &ki : ks)
      ki = e.mul(ki, kScale);
  }
  Value decay = gamma;
  if (kind.decay == DecayForm::Scalar)
    decay = e.exp(e.loadF32(gate, {bIdx, t, hv}));
  SmallVector<Value> keyDecay;
  if (kind.decay == DecayForm::PerKey)
    for (Value i : keys)
      keyDecay.push_back(e.exp(e.loadF32(gate, {bIdx, t, hv, i})));
  if (decayFirst)
    for (size_t m = 0; m < s.size(); ++m)
      s[m] = e.mul(keyDecay[m], s[m]);

  Value vj = e.loadF32(v, {bIdx, t, hv, column});
  Value write = vj, rank1;
  if (delta) {
    Value betaT = e.loadF32(beta, {bIdx, t, hv});
    write = e.mul(betaT, vj);
    Value c = e.scaleExactly(kind.rank1Scale, betaT);
    Value u = e.f32(0.0f);
    for (size_t m = 0; m < s.size(); ++m)
      u = math::FmaOp::create(b, ks[m], s[m], u);
    rank1 = e.mul(c, sumOverColumnLanes(u));
  }
  Value o = e.f32(0.0f);
  for (size_t m = 0; m < s.size(); ++m) {
    Value &si = s[m];
    if (rank1)
      si = e.sub(si, e.mul(ks[m], rank1));
    Value a = decayFirst ? Value()
              : kind.decay == DecayForm::PerKey ? keyDecay[m]
                                                : decay;
    if (a)
      si = e.mul(a, si);
    si = e.add(si, e.mul(ks[m], write));
    o = math::FmaOp::create(b, si, qs[m], o);
  }
  o = e.mul(qScale, sumOverColumnLanes(o));
  auto ifOp = scf::IfOp::create(b, isOutputLane, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  e.storeFromF32(o, outBuf, {bIdx, t, hv, column});
  return s;
}

void RecurrenceKernel::run(RewriterBase &rewriter) {
  int64_t K = op.getKeyDim(), V = op.getValueDim();
  int64_t HV = op.getNumVHeads(), H = op.getNumQKHeads();
  q = e.toBuffer(op.getQ());
  k = e.toBuffer(op.getK());
  v = e.toBuffer(op.getV());
  if (Value g = op.getGate())
    gate = e.toBuffer(g);
  if (Value b = op.getBeta())
    beta = e.toBuffer(b);
  initialState = e.toBuffer(op.getInitialState());
  Value batch = e.dim(q, 0), seqLen = e.dim(q, 1);
  outBuf = e.allocFor(op.getOutput().getType(),
                      {batch, seqLen, e.index(HV), e.index(V)});
  stateBuf = e.allocFor(op.getFinalState().getType(),
                        {batch, e.index(HV), e.index(K), e.index(V)});

  int64_t columnBlocks = (V + kColumnsPerBlock - 1) / kColumnsPerBlock;
  emitLaunch(b, {e.index(columnBlocks), e.index(HV), batch}, /*smemBytes=*/0,
             [&](KernelEmitter &kernel) {
    Block *body = b.getInsertionBlock();
    Value hv = body->getArgument(1), bIdx = body->getArgument(2);
    Value h = arith::DivUIOp::create(b, hv, e.index(HV / H));
    Value slice = arith::RemUIOp::create(b, kernel.tid, e.index(kLanesPerColumn));
    Value column = e.addIndex(
        e.mulIndex(body->getArgument(0), e.index(kColumnsPerBlock)),
        arith::DivUIOp::create(b, kernel.tid, e.index(kLanesPerColumn)));
    // Every lane runs every step (the shuffles need the whole warp); a
    // column past V reads column V - 1 and writes nothing.
    Value inside = kernel.ult(column, e.index(V));
    Value readColumn = arith::SelectOp::create(b, inside, column, e.index(V - 1));
    isOutputLane = arith::AndIOp::create(
        b, inside,
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, slice, e.index(0)));
    SmallVector<Value> keys;
    for (int64_t m = 0; m < K / kLanesPerColumn; ++m)
      keys.push_back(e.addIndex(slice, e.index(kLanesPerColumn * m)));
    Value gamma = kind.decay == DecayForm::Constant
                      ? e.selectF32(hv, op.getDecayPerHead())
                      : Value();

    SmallVector<Value> column0;
    for (Value i : keys)
      column0.push_back(e.loadF32(initialState, {bIdx, hv, i, readColumn}));
    ValueRange columnT = e.forEachReduce(
        seqLen, column0, [&](Value t, ValueRange slots) -> SmallVector<Value> {
          return step(bIdx, t, h, hv, readColumn, gamma, keys, slots);
        });
    auto ifOp = scf::IfOp::create(b, inside, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    for (size_t m = 0; m < keys.size(); ++m)
      e.storeFromF32(columnT[m], stateBuf, {bIdx, hv, keys[m], column});
  });
  e.replaceWithBuffers(rewriter, op, {outBuf, stateBuf});
}

struct ConvertLinAttnRecurrenceToGPU
    : impl::ConvertLinAttnRecurrenceToGPUBase<ConvertLinAttnRecurrenceToGPU> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<RecurrenceOp> ops;
    getOperation()->walk([&](RecurrenceOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (RecurrenceOp op : ops) {
      if (!recurrent_kernel::whyNoSplitKeyKernel(op).empty())
        continue; // the loop lowering's one thread per column takes it
      rewriter.setInsertionPoint(op);
      ImplicitLocOpBuilder b(op.getLoc(), rewriter);
      RecurrenceKernel(op, b).run(rewriter);
      ++numKernels;
    }
  }
};

} // namespace
} // namespace mlir::linattn
