//===- RecurrenceToGPU.cpp - linattn.recurrence to a split-key kernel -----===//
//
// The recurrent strategy on a GPU (decode, and the shapes the tensor-core
// kernels do not take): the defining loop,
//
//   u_j = sum_i k_i S_ij,  S_ij <- a_i (S_ij - c k_i u_j) + b_t k_i v_j,
//   o_j = scale sum_i S_ij q_i,
//
// with each state column split over kLanesPerColumn lanes of one warp, so
// that a lane holds K / kLanesPerColumn consecutive elements of it in
// registers (the loop lowering's one thread per column holds all K and
// spills at K = 128) and the sums over i (u, o, and the in-op L2 norms)
// finish with two shuffles. The state is read once and written once per
// call; q, k and per-key gates are read per token by every lane that needs
// them, its consecutive keys in 16-byte loads.
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
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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

  /// sum_m x[m] y[m] over this lane's keys, in kPartialSums interleaved
  /// partial sums: a 32-key lane's dependent chain of FMAs is then 8 long
  /// instead of 32 (each token's three or five such sums are on its
  /// critical path).
  static constexpr int64_t kPartialSums = 4;
  Value laneDot(ArrayRef<Value> x, ArrayRef<Value> y) {
    SmallVector<Value> partial(std::min<int64_t>(kPartialSums, x.size()),
                               e.f32(0.0f));
    for (size_t m = 0; m < x.size(); ++m)
      partial[m % partial.size()] =
          math::FmaOp::create(b, x[m], y[m], partial[m % partial.size()]);
    return sumPartials(partial);
  }
  Value sumPartials(ArrayRef<Value> partial) {
    SmallVector<Value> level(partial.begin(), partial.end());
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2)
        next.push_back(e.add(level[i], level[i + 1]));
      if (level.size() % 2)
        next.push_back(level.back());
      level = next;
    }
    return level.front();
  }

  /// 1 / sqrt(sum_i x_i^2 + eps) over the whole row, from this lane's keys.
  Value inverseNorm(ArrayRef<Value> xs) {
    Value sum = sumOverColumnLanes(laneDot(xs, xs));
    return arith::DivFOp::create(
        b, e.f32(1.0f),
        math::SqrtOp::create(b, e.add(sum, e.f32(L2NormOp::kEpsilon))));
  }

  /// buf[prefix..., i] for the lane's keys i, as f32: its consecutive keys
  /// in loads of up to 16 bytes (as wide as the keys' alignment allows).
  SmallVector<Value> loadLaneKeys(Value buf, SmallVector<Value> prefix,
                                  ArrayRef<Value> keys) {
    auto type = cast<MemRefType>(buf.getType());
    int64_t n = keys.size(), K = n * kLanesPerColumn;
    int64_t width = 16 / (type.getElementTypeBitWidth() / 8);
    while (n % width != 0 || K % width != 0)
      width /= 2;
    SmallVector<Value> values;
    prefix.push_back(Value());
    for (int64_t j = 0; j < n; j += width) {
      prefix.back() = keys[j];
      Value vec = kernel->loadWidened(buf, prefix, width);
      for (int64_t l = 0; l < width; ++l)
        values.push_back(vector::ExtractOp::create(b, vec, l));
    }
    return values;
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
  KernelEmitter *kernel = nullptr;
};

SmallVector<Value> RecurrenceKernel::step(Value bIdx, Value t, Value h,
                                          Value hv, Value column, Value gamma,
                                          ArrayRef<Value> keys,
                                          ValueRange slots) {
  bool delta = kind.hasRank1();
  bool decayFirst = delta && kind.decay == DecayForm::PerKey;
  SmallVector<Value> s(slots.begin(), slots.end());
  SmallVector<Value> ks = loadLaneKeys(k, {bIdx, t, h}, keys);
  SmallVector<Value> qs = loadLaneKeys(q, {bIdx, t, h}, keys);
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
    for (Value g : loadLaneKeys(gate, {bIdx, t, hv}, keys))
      keyDecay.push_back(e.exp(g));
  if (decayFirst)
    for (size_t m = 0; m < s.size(); ++m)
      s[m] = e.mul(keyDecay[m], s[m]);

  Value vj = e.loadF32(v, {bIdx, t, hv, column});
  Value write = vj, rank1;
  if (delta) {
    Value betaT = e.loadF32(beta, {bIdx, t, hv});
    write = e.mul(betaT, vj);
    Value c = e.scaleExactly(kind.rank1Scale, betaT);
    rank1 = e.mul(c, sumOverColumnLanes(laneDot(ks, s)));
  }
  SmallVector<Value> o(std::min<int64_t>(kPartialSums, s.size()), e.f32(0.0f));
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
    o[m % o.size()] = math::FmaOp::create(b, si, qs[m], o[m % o.size()]);
  }
  Value out = e.mul(qScale, sumOverColumnLanes(sumPartials(o)));
  auto ifOp = scf::IfOp::create(b, isOutputLane, false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  e.storeFromF32(out, outBuf, {bIdx, t, hv, column});
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
    this->kernel = &kernel;
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
    // Lane `slice` of a column holds keys [slice n, slice n + n).
    int64_t n = K / kLanesPerColumn;
    Value firstKey = e.mulIndex(slice, e.index(n));
    SmallVector<Value> keys;
    for (int64_t m = 0; m < n; ++m)
      keys.push_back(e.addIndex(firstKey, e.index(m)));
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
