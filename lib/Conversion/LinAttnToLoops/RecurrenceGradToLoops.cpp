//===- RecurrenceGradToLoops.cpp - The adjoint's sequential loops ---------===//
//
// The semantic oracle of linattn.recurrence_grad: the reverse loop over t
// that its documentation states, on memrefs, in fp32, one (b, hv) pair at a
// time. Every other algorithm of the backward must agree with it.
//
// A reverse step needs S_{t-1} and S_t. Rather than keeping all T states
// (T K V floats per head), a forward pass stores a checkpoint every
// C = ceil(sqrt(T)) tokens; each segment of C tokens is then recomputed
// from its checkpoint into C + 1 state slots before its reverse steps. The
// memory beyond inputs and outputs is (ceil(T / C) + C + 1) K V floats per
// (b, hv), about 2 sqrt(T) K V, for one extra forward pass of work.
//
//===----------------------------------------------------------------------===//

#include "LoopLowerings.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Utils/LoopEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::linattn {
namespace {

/// Lowers one linattn.recurrence_grad in place. With A the decay (scalar a
/// or diag(a_i)), c = rank1Scale beta and w = beta for the delta kinds
/// (c = 0, w = 1 otherwise), X = S_{t-1} and G = dL/dS_t (in the result
/// buffer of d initial_state, updated in place from grad_final_state):
///   forward  S_t = A (X - c k u^T) + w k v^T,  u = X^T k
///            kda: P = diag(a) X, u = P^T k, S_t = P - c k u^T + w k v^T
///   reverse  G += scale q do^T;  dq = scale S_t do;  z = G^T k;  dv = w z
///            dk = w G v - c a (G u + X z)      kda: w G v - c (G u + P z)
///            da_i = (G X^T)_ii - c k_i (G u)_i kda: (G X^T)_ii - c k_i (X z)_i
///            dc = -a (z . u) (kda: -(z . u)),  dw = v . z
///            G <- diag(a) (G - c k z^T)
/// then dgate = a da, dbeta = rank1Scale dc + dw; dq, dk summed over the
/// value heads of a query/key head and taken back through qk_l2norm.
class RecurrenceGradLowering {
public:
  RecurrenceGradLowering(RecurrenceGradOp op, ImplicitLocOpBuilder &b)
      : op(op), b(b), e(b), kind(op.getKindInfo()) {}

  void run();

private:
  /// What one token contributes, read once per step into per-(b, hv)
  /// scratch: the (normalised) key and query in keyRow / queryRow, the
  /// per-key decays in decayRow, and its scalars.
  struct Token {
    /// The scalar decay a (exp(g), gamma), or null for none or per-key.
    Value decay;
    /// c = rank1Scale beta and w = beta (null without a rank-1 term).
    Value c, w;
  };
  Token loadToken(Value t);

  /// a_i of the token loaded last: the per-key decay, the scalar one, or
  /// null for none.
  Value decayAt(const Token &tok, Value i) {
    if (kind.decay == DecayForm::PerKey)
      return memref::LoadOp::create(b, decayRow, ValueRange{bIdx, hv, i});
    return tok.decay;
  }
  Value keyAt(Value i) {
    return memref::LoadOp::create(b, keyRow, ValueRange{bIdx, hv, i});
  }
  Value slot(Value s, Value i, Value j) {
    return memref::LoadOp::create(b, states, ValueRange{bIdx, hv, s, i, j});
  }
  Value mulIf(Value scale, Value x) { return scale ? e.mul(scale, x) : x; }

  /// State slot `dst` = the step of token t applied to slot `src` (the
  /// same slot is fine: each column is read before it is written).
  void emitForwardStep(Value src, Value dst, Value t);
  /// The reverse step of token t, with S_{t-1} in slot `prev` and S_t in
  /// slot `prev + 1`.
  void emitReverseStep(Value prev, Value t);

  RecurrenceGradOp op;
  ImplicitLocOpBuilder &b;
  LoopEmitter e;
  const TransitionKindInfo &kind;
  int64_t K = 0, V = 0, H = 0, HV = 0;

  // Operands.
  Value q, k, v, gate, beta, initialState, gradOutput, gradState;
  // Results.
  Value dq, dk, dv, dgate, dbeta, dstate;
  // Scratch: checkpoints [B, HV, NC, K, V], segment states [B, HV, C+1, K,
  // V], per-token rows [B, HV, K], column vectors u, z [B, HV, V], dq and
  // dk per value head [B, T, HV, K].
  Value checkpoints, states, keyRow, queryRow, decayRow, uCol, zCol;
  Value dqPerValueHead, dkPerValueHead;
  // The (b, hv) pair being emitted and its query/key head.
  Value bIdx, hv, h, gamma;
};

RecurrenceGradLowering::Token RecurrenceGradLowering::loadToken(Value t) {
  Token tok;
  Value kScale, qScale = e.f32(op.getEffectiveScale());
  if (op.getQkL2norm()) {
    kScale = e.inverseL2Norm(k, {bIdx, t, h}, K, L2NormOp::kEpsilon);
    qScale =
        e.mul(qScale, e.inverseL2Norm(q, {bIdx, t, h}, K, L2NormOp::kEpsilon));
  }
  // queryRow holds scale * q (normalised): what o_t and G's update take.
  e.forEach(e.index(K), [&](Value i) {
    memref::StoreOp::create(b, mulIf(kScale, e.loadF32(k, {bIdx, t, h, i})),
                            keyRow, ValueRange{bIdx, hv, i});
    memref::StoreOp::create(b, e.mul(qScale, e.loadF32(q, {bIdx, t, h, i})),
                            queryRow, ValueRange{bIdx, hv, i});
    if (kind.decay == DecayForm::PerKey)
      memref::StoreOp::create(b, e.exp(e.loadF32(gate, {bIdx, t, hv, i})),
                              decayRow, ValueRange{bIdx, hv, i});
  });
  if (kind.decay == DecayForm::Scalar)
    tok.decay = e.exp(e.loadF32(gate, {bIdx, t, hv}));
  else if (kind.decay == DecayForm::Constant)
    tok.decay = gamma;
  if (kind.hasRank1()) {
    tok.w = e.loadF32(beta, {bIdx, t, hv});
    tok.c = e.scaleExactly(kind.rank1Scale, tok.w);
  }
  return tok;
}

void RecurrenceGradLowering::emitForwardStep(Value src, Value dst, Value t) {
  Token tok = loadToken(t);
  bool decayFirst = kind.hasRank1() && kind.decay == DecayForm::PerKey;
  e.forEach(e.index(V), [&](Value j) {
    Value vj = e.loadF32(v, {bIdx, t, hv, j});
    Value write = mulIf(tok.w, vj);
    Value u;
    if (kind.hasRank1())
      u = e.forEachReduce(e.index(K), {e.f32(0.0f)},
                          [&](Value i, ValueRange acc) -> SmallVector<Value> {
                            Value x = slot(src, i, j);
                            if (decayFirst)
                              x = e.mul(decayAt(tok, i), x);
                            return {e.add(acc[0], e.mul(keyAt(i), x))};
                          })[0];
    e.forEach(e.index(K), [&](Value i) {
      Value ki = keyAt(i), s = slot(src, i, j);
      if (decayFirst)
        s = e.mul(decayAt(tok, i), s);
      if (u)
        s = e.sub(s, e.mul(tok.c, e.mul(ki, u)));
      if (!decayFirst)
        s = mulIf(decayAt(tok, i), s);
      s = e.add(s, e.mul(ki, write));
      memref::StoreOp::create(b, s, states, ValueRange{bIdx, hv, dst, i, j});
    });
  });
}

void RecurrenceGradLowering::emitReverseStep(Value prev, Value t) {
  Token tok = loadToken(t);
  bool rank1 = kind.hasRank1();
  bool decayFirst = rank1 && kind.decay == DecayForm::PerKey;
  Value next = e.addIndex(prev, e.index(1));
  Value kDim = e.index(K), vDim = e.index(V), zero = e.f32(0.0f);
  auto gradAt = [&](Value i, Value j) {
    return memref::LoadOp::create(b, dstate, ValueRange{bIdx, hv, i, j});
  };

  // The output: dq = scale S_t do (of the normalised q), then
  // G += scale q do^T (queryRow holds scale q).
  e.forEach(kDim, [&](Value i) {
    Value qi = memref::LoadOp::create(b, queryRow, ValueRange{bIdx, hv, i});
    Value sDo = e.forEachReduce(
        vDim, {zero}, [&](Value j, ValueRange acc) -> SmallVector<Value> {
          Value doj = e.loadF32(gradOutput, {bIdx, t, hv, j});
          memref::StoreOp::create(b, e.add(gradAt(i, j), e.mul(qi, doj)),
                                  dstate, ValueRange{bIdx, hv, i, j});
          return {e.add(acc[0], e.mul(slot(next, i, j), doj))};
        })[0];
    memref::StoreOp::create(b, e.mul(e.f32(op.getEffectiveScale()), sDo),
                            dqPerValueHead, ValueRange{bIdx, t, hv, i});
  });

  // Columns: z = G^T k, u = X^T k (kda: P^T k); dv = w z, dw = v . z and
  // z . u.
  ValueRange columnSums = e.forEachReduce(
      vDim, {zero, zero}, [&](Value j, ValueRange acc) -> SmallVector<Value> {
        Value z = e.forEachReduce(
            kDim, {zero}, [&](Value i, ValueRange a) -> SmallVector<Value> {
              return {e.add(a[0], e.mul(keyAt(i), gradAt(i, j)))};
            })[0];
        memref::StoreOp::create(b, z, zCol, ValueRange{bIdx, hv, j});
        e.storeFromF32(mulIf(tok.w, z), dv, {bIdx, t, hv, j});
        Value dw = e.add(acc[0], e.mul(e.loadF32(v, {bIdx, t, hv, j}), z));
        Value zu = acc[1];
        if (rank1) {
          Value u = e.forEachReduce(
              kDim, {zero}, [&](Value i, ValueRange a) -> SmallVector<Value> {
                Value x = slot(prev, i, j);
                if (decayFirst)
                  x = e.mul(decayAt(tok, i), x);
                return {e.add(a[0], e.mul(keyAt(i), x))};
              })[0];
          memref::StoreOp::create(b, u, uCol, ValueRange{bIdx, hv, j});
          zu = e.add(zu, e.mul(z, u));
        }
        return {dw, zu};
      });
  Value dw = columnSums[0], zu = columnSums[1];

  // Rows: dk, da, and G <- diag(a) (G - c k z^T).
  Value daSum = e.forEachReduce(
      kDim, {zero}, [&](Value i, ValueRange daAcc) -> SmallVector<Value> {
        Value ki = keyAt(i), ai = decayAt(tok, i);
        // (G v)_i, (G u)_i, (X z)_i, (G X^T)_ii over the row, reading G
        // before its update.
        ValueRange rows = e.forEachReduce(
            vDim, {zero, zero, zero, zero},
            [&](Value j, ValueRange acc) -> SmallVector<Value> {
              Value g = gradAt(i, j), x = slot(prev, i, j);
              Value z =
                  memref::LoadOp::create(b, zCol, ValueRange{bIdx, hv, j});
              SmallVector<Value> sums = {
                  e.add(acc[0], e.mul(g, e.loadF32(v, {bIdx, t, hv, j}))),
                  acc[1], acc[2], e.add(acc[3], e.mul(g, x))};
              Value updated = g;
              if (rank1) {
                Value u =
                    memref::LoadOp::create(b, uCol, ValueRange{bIdx, hv, j});
                sums[1] = e.add(acc[1], e.mul(g, u));
                sums[2] = e.add(acc[2], e.mul(x, z));
                updated = e.sub(g, e.mul(tok.c, e.mul(ki, z)));
              }
              memref::StoreOp::create(b, mulIf(ai, updated), dstate,
                                      ValueRange{bIdx, hv, i, j});
              return sums;
            });
        Value gv = rows[0], gu = rows[1], xz = rows[2], gx = rows[3];
        Value dki = mulIf(tok.w, gv), dai = gx;
        if (rank1) {
          Value rank1Term =
              decayFirst ? e.add(gu, e.mul(ai, xz)) : mulIf(ai, e.add(gu, xz));
          dki = e.sub(dki, e.mul(tok.c, rank1Term));
          dai = e.sub(gx, e.mul(tok.c, e.mul(ki, decayFirst ? xz : gu)));
        }
        memref::StoreOp::create(b, dki, dkPerValueHead,
                                ValueRange{bIdx, t, hv, i});
        if (kind.decay == DecayForm::PerKey)
          memref::StoreOp::create(b, e.mul(ai, dai), dgate,
                                  ValueRange{bIdx, t, hv, i});
        return {e.add(daAcc[0], dai)};
      })[0];
  if (kind.decay == DecayForm::Scalar)
    memref::StoreOp::create(b, e.mul(tok.decay, daSum), dgate,
                            ValueRange{bIdx, t, hv});
  if (rank1) {
    // dc = -a (z . u) (kda: -(z . u)); dbeta = rank1Scale dc + dw.
    Value dc = arith::NegFOp::create(b, decayFirst ? zu : mulIf(tok.decay, zu));
    memref::StoreOp::create(b, e.add(e.scaleExactly(kind.rank1Scale, dc), dw),
                            dbeta, ValueRange{bIdx, t, hv});
  }
}

void RecurrenceGradLowering::run() {
  K = op.getKeyDim();
  V = op.getValueDim();
  H = op.getNumQKHeads();
  HV = op.getNumVHeads();
  SmallVector<Value> buffers;
  for (Value operand : op.getOperands())
    buffers.push_back(e.toBuffer(operand));
  q = buffers[0];
  k = buffers[1];
  v = buffers[2];
  unsigned stateIndex = op.getInitialStateIndex();
  if (op.getGate())
    gate = buffers[3];
  if (op.getBeta())
    beta = buffers[stateIndex - 1];
  initialState = buffers[stateIndex];
  gradOutput = buffers[stateIndex + 1];
  gradState = buffers[stateIndex + 2];

  Value batch = e.dim(q, 0), seqLen = e.dim(q, 1);
  Value hDim = e.index(H), hvDim = e.index(HV), kDim = e.index(K),
        vDim = e.index(V);
  auto sizesOf = [&](Value buffer) {
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < cast<MemRefType>(buffer.getType()).getRank(); ++d)
      sizes.push_back(e.dim(buffer, d));
    return sizes;
  };
  SmallVector<Value> results;
  for (unsigned i = 0; i <= stateIndex; ++i)
    results.push_back(
        e.allocFor(op.getGradientOf(i).getType(), sizesOf(buffers[i])));
  dq = results[0];
  dk = results[1];
  dv = results[2];
  if (op.getGate())
    dgate = results[3];
  if (op.getBeta())
    dbeta = results[stateIndex - 1];
  dstate = results[stateIndex];

  // C = max(1, ceil(sqrt(T))) tokens between checkpoints, NC = ceil(T / C).
  Value seqLenF = arith::UIToFPOp::create(
      b, b.getF64Type(),
      arith::IndexCastUIOp::create(b, b.getI64Type(), seqLen));
  Value sqrtT = math::CeilOp::create(b, math::SqrtOp::create(b, seqLenF));
  Value segLen = arith::MaxUIOp::create(
      b, e.index(1),
      arith::IndexCastUIOp::create(
          b, b.getIndexType(),
          arith::FPToUIOp::create(b, b.getI64Type(), sqrtT)));
  Value numSegs = arith::CeilDivUIOp::create(b, seqLen, segLen);

  Type f32 = b.getF32Type();
  int64_t dyn = ShapedType::kDynamic;
  auto alloc = [&](ArrayRef<int64_t> shape, ValueRange dynamicSizes) {
    return memref::AllocOp::create(b, MemRefType::get(shape, f32), dynamicSizes)
        .getResult();
  };
  checkpoints = alloc({dyn, HV, dyn, K, V}, {batch, numSegs});
  states = alloc({dyn, HV, dyn, K, V}, {batch, e.addIndex(segLen, e.index(1))});
  keyRow = alloc({dyn, HV, K}, {batch});
  queryRow = alloc({dyn, HV, K}, {batch});
  if (kind.decay == DecayForm::PerKey)
    decayRow = alloc({dyn, HV, K}, {batch});
  uCol = alloc({dyn, HV, V}, {batch});
  zCol = alloc({dyn, HV, V}, {batch});
  dqPerValueHead = alloc({dyn, dyn, HV, K}, {batch, seqLen});
  dkPerValueHead = alloc({dyn, dyn, HV, K}, {batch, seqLen});

  auto heads = scf::ParallelOp::create(b, ValueRange{e.index(0), e.index(0)},
                                       ValueRange{batch, hvDim},
                                       ValueRange{e.index(1), e.index(1)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(heads.getBody()->getTerminator());
    bIdx = heads.getInductionVars()[0];
    hv = heads.getInductionVars()[1];
    h = e.qkHead(hv, HV, H);
    if (kind.decay == DecayForm::Constant)
      gamma = e.selectF32(hv, op.getDecayPerHead());
    Value zeroSlot = e.index(0);
    auto copyState = [&](Value from, ValueRange fromAt, Value to,
                         ValueRange toAt) {
      e.forEach(kDim, [&](Value i) {
        e.forEach(vDim, [&](Value j) {
          SmallVector<Value> src(fromAt), dst(toAt);
          src.append({i, j});
          dst.append({i, j});
          memref::StoreOp::create(b, memref::LoadOp::create(b, from, src), to,
                                  dst);
        });
      });
    };
    // G = dL/dS_T.
    copyState(gradState, {bIdx, hv}, dstate, {bIdx, hv});
    // Forward, storing S at the start of every segment.
    copyState(initialState, {bIdx, hv}, states, {bIdx, hv, zeroSlot});
    e.forEach(seqLen, [&](Value t) {
      Value seg = arith::DivUIOp::create(b, t, segLen);
      Value atStart = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                            e.mulIndex(seg, segLen), t);
      auto ifStart = scf::IfOp::create(b, atStart, /*withElse=*/false);
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPoint(ifStart.thenBlock()->getTerminator());
        copyState(states, {bIdx, hv, zeroSlot}, checkpoints, {bIdx, hv, seg});
      }
      emitForwardStep(zeroSlot, zeroSlot, t);
    });
    // Segments from the last: recompute its states, then step back.
    e.forEach(numSegs, [&](Value fromLast) {
      Value seg = e.subIndex(e.subIndex(numSegs, e.index(1)), fromLast);
      Value first = e.mulIndex(seg, segLen);
      Value len = e.minIndex(segLen, e.subIndex(seqLen, first));
      copyState(checkpoints, {bIdx, hv, seg}, states, {bIdx, hv, zeroSlot});
      e.forEach(len, [&](Value s) {
        emitForwardStep(s, e.addIndex(s, e.index(1)), e.addIndex(first, s));
      });
      e.forEach(len, [&](Value sFromLast) {
        Value s = e.subIndex(e.subIndex(len, e.index(1)), sFromLast);
        emitReverseStep(s, e.addIndex(first, s));
      });
    });
  }

  emitQKGradient(e, q, dqPerValueHead, dq, op.getQkL2norm());
  emitQKGradient(e, k, dkPerValueHead, dk, op.getQkL2norm());
  e.replaceWithBuffers(op, results);
}

} // namespace

void lowerRecurrenceGradsToLoops(Operation *root) {
  SmallVector<RecurrenceGradOp> ops;
  root->walk([&](RecurrenceGradOp op) { ops.push_back(op); });
  for (RecurrenceGradOp op : ops) {
    ImplicitLocOpBuilder b(op.getLoc(), op);
    RecurrenceGradLowering(op, b).run();
  }
}

} // namespace mlir::linattn
