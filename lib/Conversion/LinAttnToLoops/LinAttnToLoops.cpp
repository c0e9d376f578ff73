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

#include "LoopLowerings.h"
#include "LinAttn/Utils/LoopEmitter.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_CONVERTLINATTNTOLOOPS
#include "LinAttn/Conversion/Passes.h.inc"

namespace {

/// State columns per tile of the recurrent loop nest (threads per block on
/// a GPU): one warp.
constexpr int64_t kColumnTile = 32;

/// Lowers one linattn.recurrence in place.
///
/// Column j of the state only ever meets column j: with u_j = sum_i k_i S_ij,
///   S_ij <- a_i (S_ij - c k_i u_j) + b_t k_i v_j,   o_j = scale sum_i S_ij q_i.
/// So the loop nest is `scf.parallel (b, hv, j)` over independent columns,
/// each kept in a private K-vector across a sequential loop over t: nested
/// loops on the CPU, blocks x threads on a GPU.
class RecurrenceLowering {
public:
  RecurrenceLowering(RecurrenceOp op, ImplicitLocOpBuilder &b)
      : op(op), b(b), e(b) {}

  void run();

private:
  /// 1 / sqrt(sum_i x[b, t, h, i]^2 + eps), the in-op L2 norm's factor.
  Value inverseNorm(Value x, Value bIdx, Value t, Value h) {
    return e.inverseL2Norm(x, {bIdx, t, h}, K, L2NormOp::kEpsilon);
  }

  /// The whole sequence of one column j of one (b, hv) state.
  void emitColumn(Value bIdx, Value hv, Value j);

  RecurrenceOp op;
  ImplicitLocOpBuilder &b;
  LoopEmitter e;

  Value q, k, v, gate, beta, initialState, outBuf, stateBuf;
  int64_t K = 0, V = 0;
};

// One column j, token by token, with a_i the decay (1, gamma, exp(g_t) or
// exp(g_t,i)), c = beta (2 beta for negeig_delta), b_t = beta (1 without a
// rank-1 term), and q, k scaled by their inverse norms under qk_l2norm:
//   u   = sum_i k_i S_ij                         (delta kinds)
//   S_ij <- a_i (S_ij - c k_i u) + b_t k_i v_j
//   o_j  = scale * sum_i S_ij q_i
// With per-key a_i and a rank-1 term (kda) the state decays first, and u
// is taken of the decayed column (M_t = (I - c k k^T) diag(a)):
//   S_ij <- a_i S_ij,  u = sum_i k_i S_ij,  S_ij <- S_ij - c k_i u + b_t k_i v_j
void RecurrenceLowering::emitColumn(Value bIdx, Value hv, Value j) {
  const TransitionKindInfo &kind = op.getKindInfo();
  bool delta = kind.hasRank1();
  Value kDim = e.index(K);
  Value h = arith::DivUIOp::create(
      b, hv, e.index(op.getNumVHeads() / op.getNumQKHeads()));
  Value gamma = kind.decay == DecayForm::Constant
                    ? e.selectF32(hv, op.getDecayPerHead())
                    : Value();

  // The column is an SSA vector carried across the loop over t: once the
  // loops over K are unrolled (on a GPU), its elements are registers.
  auto columnType = VectorType::get({K}, b.getF32Type());
  Value zeros = arith::ConstantOp::create(
      b, columnType, DenseElementsAttr::get(columnType, 0.0f));
  Value column0 = e.forEachReduce(
      kDim, {zeros}, [&](Value i, ValueRange acc) -> SmallVector<Value> {
        Value s = memref::LoadOp::create(b, initialState,
                                         ValueRange{bIdx, hv, i, j});
        return {vector::InsertOp::create(b, s, acc[0], i)};
      })[0];

  Value scale = e.f32(op.getEffectiveScale());
  Value columnT = e.forEachReduce(
      e.dim(q, 1), {column0},
      [&](Value t, ValueRange carried) -> SmallVector<Value> {
        Value column = carried[0];
        Value qScale = scale, kScale;
        if (op.getQkL2norm()) {
          qScale = e.mul(scale, inverseNorm(q, bIdx, t, h));
          kScale = inverseNorm(k, bIdx, t, h);
        }
        auto keyAt = [&](Value i) {
          Value ki = e.loadF32(k, {bIdx, t, h, i});
          return kScale ? e.mul(ki, kScale) : ki;
        };

        Value scalarDecay = gamma;
        if (kind.decay == DecayForm::Scalar)
          scalarDecay = e.exp(e.loadF32(gate, {bIdx, t, hv}));
        auto keyDecay = [&](Value i) {
          return e.exp(e.loadF32(gate, {bIdx, t, hv, i}));
        };
        bool decayFirst = delta && kind.decay == DecayForm::PerKey;
        if (decayFirst)
          column = e.forEachReduce(
              kDim, {column}, [&](Value i, ValueRange acc) -> SmallVector<Value> {
                Value s = vector::ExtractOp::create(b, acc[0], i);
                return {vector::InsertOp::create(b, e.mul(keyDecay(i), s),
                                                  acc[0], i)};
              })[0];

        Value vj = e.loadF32(v, {bIdx, t, hv, j});
        Value write = vj, rank1;
        if (delta) {
          Value betaT = e.loadF32(beta, {bIdx, t, hv});
          write = e.mul(betaT, vj);
          // c = rank1Scale beta (beta + beta for 2: exact, as the oracle).
          Value c = e.scaleExactly(kind.rank1Scale, betaT);
          Value u = e.forEachReduce(
              kDim, {e.f32(0.0f)},
              [&](Value i, ValueRange acc) -> SmallVector<Value> {
                Value s = vector::ExtractOp::create(b, column, i);
                return {e.add(acc[0], e.mul(keyAt(i), s))};
              })[0];
          rank1 = e.mul(c, u);
        }

        ValueRange updated = e.forEachReduce(
            kDim, {column, e.f32(0.0f)},
            [&](Value i, ValueRange acc) -> SmallVector<Value> {
              Value ki = keyAt(i);
              Value s = vector::ExtractOp::create(b, acc[0], i);
              if (rank1)
                s = e.sub(s, e.mul(ki, rank1));
              Value decay = scalarDecay;
              if (kind.decay == DecayForm::PerKey && !decayFirst)
                decay = keyDecay(i);
              if (decay)
                s = e.mul(decay, s);
              s = e.add(s, e.mul(ki, write));
              Value next = vector::InsertOp::create(b, s, acc[0], i);
              Value o = e.add(acc[1], e.mul(s, e.loadF32(q, {bIdx, t, h, i})));
              return {next, o};
            });
        e.storeFromF32(e.mul(qScale, updated[1]), outBuf, {bIdx, t, hv, j});
        return {updated[0]};
      })[0];

  e.forEach(kDim, [&](Value i) {
    memref::StoreOp::create(b, vector::ExtractOp::create(b, columnT, i),
                            stateBuf, ValueRange{bIdx, hv, i, j});
  });
}

void RecurrenceLowering::run() {
  K = op.getKeyDim();
  V = op.getValueDim();
  SmallVector<Value> operandBuffers;
  for (Value operand : op.getOperands())
    operandBuffers.push_back(e.toBuffer(operand));
  q = operandBuffers[0];
  k = operandBuffers[1];
  v = operandBuffers[2];
  unsigned next = 3;
  if (op.getGate())
    gate = operandBuffers[next++];
  if (op.getBeta())
    beta = operandBuffers[next++];
  initialState = operandBuffers[next];

  Value batch = e.dim(q, 0), seqLen = e.dim(q, 1);
  Value hvDim = e.index(op.getNumVHeads()), vDim = e.index(V);
  outBuf = e.allocFor(op.getOutput().getType(), {batch, seqLen, hvDim, vDim});
  stateBuf = e.allocFor(op.getFinalState().getType(),
                        {batch, hvDim, e.index(K), vDim});

  // (b, hv, column tile) outside, the columns of a tile inside: a GPU maps
  // the outer loop to blocks and the inner one to threads. Tiles of
  // kColumnTile columns keep B * HV * V / kColumnTile blocks in flight.
  int64_t tile = V % kColumnTile == 0 ? kColumnTile : V;
  auto heads = scf::ParallelOp::create(
      b, ValueRange{e.index(0), e.index(0), e.index(0)},
      ValueRange{batch, hvDim, e.index(V / tile)},
      ValueRange{e.index(1), e.index(1), e.index(1)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(heads.getBody()->getTerminator());
    auto columns = scf::ParallelOp::create(b, ValueRange{e.index(0)},
                                           ValueRange{e.index(tile)},
                                           ValueRange{e.index(1)});
    b.setInsertionPoint(columns.getBody()->getTerminator());
    Value j = e.addIndex(e.mulIndex(heads.getInductionVars()[2], e.index(tile)),
                         columns.getInductionVars()[0]);
    emitColumn(heads.getInductionVars()[0], heads.getInductionVars()[1], j);
  }

  Value out = e.toTensor(outBuf, op.getOutput().getType());
  Value state = e.toTensor(stateBuf, op.getFinalState().getType());
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
    lowerRecurrenceGradsToLoops(getOperation());
    lowerChunkedOpsToLoops(getOperation());
    lowerChunkGradOpsToLoops(getOperation());
    lowerScansToLoops(getOperation());
  }
};

} // namespace
} // namespace mlir::linattn
