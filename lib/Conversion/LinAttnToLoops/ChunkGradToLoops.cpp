//===- ChunkGradToLoops.cpp - The chunk-local gradients to loops ----------===//
//
// linattn.chunk_grad as loops: one parallel iteration per (b, hv, chunk),
// each computing its chunk's gradients sequentially in fp32, in the order
// of the op's description. Also the dispatcher of the backward ops' loop
// lowerings.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"
#include "LoopLowerings.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "llvm/ADT/TypeSwitch.h"

namespace mlir::linattn {
namespace {

class ChunkGradLowering {
public:
  explicit ChunkGradLowering(ChunkGradOp op)
      : op(op), l(op, op.getChunkSize()), e(l.e), b(l.b) {}

  void run();

private:
  /// G at token t (key r for per-key gates); 0 without gates.
  Value gate(Value t, Value r) {
    return l.gateAt(gates, bIdx, t, hv, perKey ? r : Value());
  }
  /// exp(G_i - G_j) (key r).
  Value decayBetween(Value i, Value j, Value r) {
    return gates ? e.exp(e.sub(gate(i, r), gate(j, r))) : e.f32(1.0f);
  }
  Value at(Value buf, Value t, Value x) { return e.loadF32(buf, {bIdx, t, hv, x}); }
  Value qAt(Value t, Value r) { return e.loadF32(q, {bIdx, t, h, r}); }
  Value kAt(Value t, Value r) { return e.loadF32(k, {bIdx, t, h, r}); }
  Value stateAt(Value states, Value r, Value c) {
    return e.loadF32(states, {bIdx, n, hv, r, c});
  }
  /// buf[b, t, hv, x] += value (f32 buffers).
  void addTo(Value buf, Value t, Value x, Value value) {
    SmallVector<Value> idx = {bIdx, t, hv, x};
    memref::StoreOp::create(
        b, e.add(memref::LoadOp::create(b, buf, idx), value), buf, idx);
  }
  /// dL/dG[t, r] += x, accumulated in f64: see gateGrad.
  void addGateTerm(Value t, Value r, Value x) {
    SmallVector<Value> idx = {bIdx, t, hv, r};
    Value wide = arith::ExtFOp::create(b, b.getF64Type(), x);
    memref::StoreOp::create(
        b, arith::AddFOp::create(b, memref::LoadOp::create(b, gateGrad, idx), wide),
        gateGrad, idx);
  }
  /// The gate's share of a term x * exp(G_i - G_j) at key r: dG_i += x,
  /// dG_j -= x.
  void addGateShare(Value i, Value j, Value r, Value x) {
    if (!gateGrad)
      return;
    addGateTerm(i, r, x);
    addGateTerm(j, r, arith::NegFOp::create(b, x));
  }
  /// P_ij = sum_r k_ir k_jr exp(G_ir - G_jr), i >= j.
  Value keyScore(Value i, Value j) {
    return l.dot(
        K, [&](Value r) { return e.mul(kAt(i, r), decayBetween(i, j, r)); },
        [&](Value r) { return kAt(j, r); });
  }

  void emitOutputTerms();
  void emitStateUpdateTerms();
  void emitWYTerms();
  void emitGateResult();

  ChunkGradOp op;
  ChunkLowering l;
  LoopEmitter &e;
  ImplicitLocOpBuilder &b;
  int64_t H = 0, K = 0, HV = 0, V = 0;
  bool perKey = false;
  Value q, k, v, beta, gates, w, u, newValues, states, gradOut, gradNewValues,
      gradStates;
  Value dq, dk, dv, dgates, dbeta;
  // Scratch [B, T, HV, K] / [B, T, HV, V]: dL/dG per key (with a gates
  // result), Y = A^T dW and Z = A^T dU (WY form). dL/dG is f64: a term
  // x exp(G_i - G_j) adds x at i and -x at j, and dL/dg_t, the suffix sum
  // of dL/dG, keeps only the terms that straddle t; under a strong gate
  // g_t those are tiny beside the pairs that cancel, whose f32 rounding
  // would dominate (1e-3 relative error in dgate at log gates of -20). In
  // f64 the pairs cancel exactly.
  Value gateGrad, yW, zU;
  Value kDim, vDim, scale;
  // Loop variables in scope: (b, hv, chunk n), its tokens [t0, t1) and
  // last token tLast, and hv's query/key head h.
  Value bIdx, hv, n, t0, t1, tLast, h;
};

// Through o_i = scale (S_n^T (q_i * exp(G_i)) + sum_{j <= i} P_ij D_j):
//   dq_i += scale (S_n dO_i) * exp(G_i)
//   dP_ij = scale dO_i . D_j:  dq_i += dP_ij k_j E_ij,  dk_j += dP_ij q_i E_ij
void ChunkGradLowering::emitOutputTerms() {
  e.forRange(t0, t1, [&](Value i) {
    e.forEach(kDim, [&](Value r) {
      Value dqg = e.mul(scale, l.dot(
                                   V, [&](Value c) { return stateAt(states, r, c); },
                                   [&](Value c) { return at(gradOut, i, c); }));
      Value term = e.mul(dqg, e.exp(gate(i, r)));
      addTo(dq, i, r, term);
      if (gateGrad)
        addGateTerm(i, r, e.mul(qAt(i, r), term));
    });
    e.forRange(t0, e.addIndex(i, e.index(1)), [&](Value j) {
      Value dP = e.mul(scale, l.dot(
                                  V, [&](Value c) { return at(gradOut, i, c); },
                                  [&](Value c) { return at(newValues, j, c); }));
      e.forEach(kDim, [&](Value r) {
        Value scaled = e.mul(dP, decayBetween(i, j, r));
        addTo(dq, i, r, e.mul(scaled, kAt(j, r)));
        addTo(dk, j, r, e.mul(scaled, qAt(i, r)));
        addGateShare(i, j, r, e.mul(e.mul(scaled, qAt(i, r)), kAt(j, r)));
      });
    });
  });
}

// Through S_{n+1} = exp(G_C) S_n + (K * exp(G_C - G))^T D:
//   dk_j += (H_n D_j) * exp(G_C - G_j);  dG_C += exp(G_C) sum_c S_n H_n.
void ChunkGradLowering::emitStateUpdateTerms() {
  e.forRange(t0, t1, [&](Value j) {
    e.forEach(kDim, [&](Value r) {
      Value dKd = l.dot(
          V, [&](Value c) { return stateAt(gradStates, r, c); },
          [&](Value c) { return at(newValues, j, c); });
      Value scaled = e.mul(dKd, decayBetween(tLast, j, r));
      addTo(dk, j, r, scaled);
      addGateShare(tLast, j, r, e.mul(scaled, kAt(j, r)));
    });
  });
  if (!gateGrad)
    return;
  e.forEach(kDim, [&](Value r) {
    Value sh = l.dot(
        V, [&](Value c) { return stateAt(states, r, c); },
        [&](Value c) { return stateAt(gradStates, r, c); });
    addGateTerm(tLast, r, e.mul(e.exp(gate(tLast, r)), sh));
  });
}

// Through D = U - W S_n with W = A diag(c) (K * exp(G)), U = A diag(beta) V,
// A = (I + L)^-1, L_ij = c_i P_ij (i > j):
//   Y = A^T (-dD S_n^T), Z = A^T dD   (back substitution through (I + L)^T)
//   dk_i += c_i Y_i * exp(G_i);  dv_i = beta_i Z_i
//   dL_ij = -(Y_i . W_j + Z_i . U_j);  dP_ij = c_i dL_ij back to k_i, k_j
//   dbeta_i = rank1_scale (Y_i . (k_i * exp(G_i)) + sum_j dL_ij P_ij) + Z_i . v_i
void ChunkGradLowering::emitWYTerms() {
  Value rank1Scale = e.f32(op.getRank1Scale()->convertToFloat());
  auto coeff = [&](Value t) {
    return e.mul(rank1Scale, e.loadF32(beta, {bIdx, t, hv}));
  };
  e.forRange(t0, t1, [&](Value i) {
    e.forEach(kDim, [&](Value r) {
      Value y = l.dot(
          V, [&](Value c) { return at(gradNewValues, i, c); },
          [&](Value c) { return stateAt(states, r, c); });
      memref::StoreOp::create(b, arith::NegFOp::create(b, y), yW,
                              ValueRange{bIdx, i, hv, r});
    });
    e.forEach(vDim, [&](Value c) {
      memref::StoreOp::create(b, at(gradNewValues, i, c), zU,
                              ValueRange{bIdx, i, hv, c});
    });
  });
  // Y_i -= sum_{j > i} L_ji Y_j, rows from the last.
  Value len = e.subIndex(t1, t0);
  e.forEach(len, [&](Value fromLast) {
    Value i = e.subIndex(tLast, fromLast);
    e.forRange(e.addIndex(i, e.index(1)), t1, [&](Value j) {
      Value lji = e.mul(coeff(j), keyScore(j, i));
      e.forEach(kDim, [&](Value r) {
        addTo(yW, i, r, arith::NegFOp::create(b, e.mul(lji, at(yW, j, r))));
      });
      e.forEach(vDim, [&](Value c) {
        addTo(zU, i, c, arith::NegFOp::create(b, e.mul(lji, at(zU, j, c))));
      });
    });
  });
  e.forRange(t0, t1, [&](Value i) {
    Value ci = coeff(i);
    Value throughW = e.forEachReduce(
        kDim, {e.f32(0.0f)}, [&](Value r, ValueRange acc) -> SmallVector<Value> {
          Value keyGated = e.mul(kAt(i, r), e.exp(gate(i, r)));
          Value y = at(yW, i, r);
          addTo(dk, i, r, e.mul(e.mul(ci, y), e.exp(gate(i, r))));
          if (gateGrad)
            addGateTerm(i, r, e.mul(e.mul(ci, y), keyGated));
          return {e.add(acc[0], e.mul(y, keyGated))};
        })[0];
    Value throughL = l.sumRange(t0, i, [&](Value j) {
      Value dL = arith::NegFOp::create(
          b, e.add(l.dot(
                       K, [&](Value r) { return at(yW, i, r); },
                       [&](Value r) { return at(w, j, r); }),
                   l.dot(
                       V, [&](Value c) { return at(zU, i, c); },
                       [&](Value c) { return at(u, j, c); })));
      Value dP = e.mul(ci, dL);
      e.forEach(kDim, [&](Value r) {
        Value scaled = e.mul(dP, decayBetween(i, j, r));
        addTo(dk, i, r, e.mul(scaled, kAt(j, r)));
        addTo(dk, j, r, e.mul(scaled, kAt(i, r)));
        addGateShare(i, j, r, e.mul(e.mul(scaled, kAt(i, r)), kAt(j, r)));
      });
      return e.mul(dL, keyScore(i, j));
    });
    Value betaI = e.loadF32(beta, {bIdx, i, hv});
    Value throughU = l.dot(
        V, [&](Value c) { return at(zU, i, c); },
        [&](Value c) { return at(v, i, c); });
    e.forEach(vDim, [&](Value c) {
      e.storeFromF32(e.mul(betaI, at(zU, i, c)), dv, {bIdx, i, hv, c});
    });
    memref::StoreOp::create(
        b, e.add(e.mul(rank1Scale, e.add(throughW, throughL)), throughU), dbeta,
        ValueRange{bIdx, i, hv});
  });
}

// dL/dg_t = sum of dL/dG_i over i >= t in t's chunk (per key, or summed
// over keys for gates per row).
void ChunkGradLowering::emitGateResult() {
  Value len = e.subIndex(t1, t0);
  Value zero = arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
  auto gradAt = [&](Value i, Value r) {
    return memref::LoadOp::create(b, gateGrad, ValueRange{bIdx, i, hv, r})
        .getResult();
  };
  auto reverseCumsum = [&](function_ref<Value(Value)> term,
                           function_ref<SmallVector<Value>(Value)> where) {
    e.forEachReduce(len, {zero},
                    [&](Value fromLast, ValueRange acc) -> SmallVector<Value> {
                      Value i = e.subIndex(tLast, fromLast);
                      Value sum = arith::AddFOp::create(b, acc[0], term(i));
                      memref::StoreOp::create(
                          b, arith::TruncFOp::create(b, b.getF32Type(), sum),
                          dgates, where(i));
                      return {sum};
                    });
  };
  if (perKey) {
    e.forEach(kDim, [&](Value r) {
      reverseCumsum([&](Value i) { return gradAt(i, r); },
                    [&](Value i) { return SmallVector<Value>{bIdx, i, hv, r}; });
    });
    return;
  }
  reverseCumsum(
      [&](Value i) {
        return e.forEachReduce(
            kDim, {zero}, [&](Value r, ValueRange acc) -> SmallVector<Value> {
              return {arith::AddFOp::create(b, acc[0], gradAt(i, r))};
            })[0];
      },
      [&](Value i) { return SmallVector<Value>{bIdx, i, hv}; });
}

void ChunkGradLowering::run() {
  auto buffer = [&](Value t) { return t ? e.toBuffer(t) : Value(); };
  q = buffer(op.getQ());
  k = buffer(op.getK());
  v = buffer(op.getV());
  beta = buffer(op.getBeta());
  gates = buffer(op.getGates());
  w = buffer(op.getW());
  u = buffer(op.getU());
  newValues = buffer(op.getNewValues());
  states = buffer(op.getChunkStates());
  gradOut = buffer(op.getGradOutput());
  gradNewValues = buffer(op.getGradNewValues());
  gradStates = buffer(op.getGradChunkStates());
  H = dimOf(q, 2);
  K = dimOf(q, 3);
  HV = dimOf(v, 2);
  V = dimOf(v, 3);
  perKey = gates && cast<MemRefType>(gates.getType()).getRank() == 4;
  Value batch = e.dim(q, 0), seqLen = e.dim(q, 1), hvDim = e.index(HV);
  kDim = e.index(K);
  vDim = e.index(V);
  scale = e.f32(op.getScale().convertToFloat());
  SmallVector<Value> keySizes = {batch, seqLen, hvDim, kDim},
                     valueSizes = {batch, seqLen, hvDim, vDim};
  dq = e.allocFor(op.getGradQ().getType(), keySizes);
  dk = e.allocFor(op.getGradK().getType(), keySizes);
  dv = e.allocFor(op.getGradV().getType(), valueSizes);
  SmallVector<Value> results = {dq, dk, dv};
  auto f32Buffer = [&](ArrayRef<Value> sizes) {
    SmallVector<int64_t> shape(sizes.size(), ShapedType::kDynamic);
    return e.allocFor(MemRefType::get(shape, b.getF32Type()), sizes);
  };
  if (op.getGradGates()) {
    SmallVector<Value> gateSizes = {batch, seqLen, hvDim};
    if (perKey)
      gateSizes.push_back(kDim);
    dgates = e.allocFor(op.getGradGates().getType(), gateSizes);
    results.push_back(dgates);
    gateGrad = e.allocFor(MemRefType::get(SmallVector<int64_t>(4, ShapedType::kDynamic),
                                          b.getF64Type()),
                          keySizes);
  }
  if (beta) {
    dbeta = e.allocFor(op.getGradBeta().getType(), {batch, seqLen, hvDim});
    results.push_back(dbeta);
    yW = f32Buffer(keySizes);
    zU = f32Buffer(valueSizes);
  }

  auto loop = scf::ParallelOp::create(
      b, ValueRange{e.index(0), e.index(0), e.index(0)},
      ValueRange{batch, hvDim, l.numChunks(seqLen)},
      ValueRange{e.index(1), e.index(1), e.index(1)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    bIdx = loop.getInductionVars()[0];
    hv = loop.getInductionVars()[1];
    n = loop.getInductionVars()[2];
    h = e.qkHead(hv, HV, H);
    std::tie(t0, t1) = l.chunkBounds(n, seqLen);
    tLast = e.subIndex(t1, e.index(1));
    e.forRange(t0, t1, [&](Value t) {
      e.forEach(kDim, [&](Value r) {
        for (Value acc : {dq, dk})
          memref::StoreOp::create(b, e.f32(0.0f), acc, ValueRange{bIdx, t, hv, r});
        if (gateGrad)
          memref::StoreOp::create(
              b, arith::ConstantOp::create(b, b.getF64FloatAttr(0.0)), gateGrad,
              ValueRange{bIdx, t, hv, r});
      });
    });
    emitOutputTerms();
    emitStateUpdateTerms();
    if (beta) {
      emitWYTerms();
    } else {
      // D = V: dv = dD.
      e.forRange(t0, t1, [&](Value i) {
        e.forEach(vDim, [&](Value c) {
          e.storeFromF32(at(gradNewValues, i, c), dv, {bIdx, i, hv, c});
        });
      });
    }
    if (dgates)
      emitGateResult();
  }
  e.replaceWithBuffers(op, results);
}

} // namespace

void lowerChunkGrad(ChunkGradOp op) { ChunkGradLowering(op).run(); }

void lowerChunkGradOpsToLoops(Operation *root) {
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isa<ChunkStatePassGradOp, ChunkGradOp, QKGradOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops)
    llvm::TypeSwitch<Operation *>(op)
        .Case([](ChunkStatePassGradOp op) { lowerChunkStatePassGrad(op); })
        .Case([](ChunkGradOp op) { lowerChunkGrad(op); })
        .Case([](QKGradOp op) { lowerQKGrad(op); });
}

} // namespace mlir::linattn
