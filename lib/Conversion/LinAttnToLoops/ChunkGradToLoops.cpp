//===- ChunkGradToLoops.cpp - The chunk-local gradients to loops ----------===//
//
// linattn.chunk_grad as parallel nests over (b, hv, chunk) (blocks on a
// GPU), each with a thread per token (and group of columns), state column
// or key (and group of rows): the pairwise products of a chunk first, then
// the WY factors' back substitution, then the per-token scalars, then dq,
// dk and the gates' gradient per key. Also the dispatcher of the backward
// ops' loop lowerings.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"
#include "LoopLowerings.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace mlir::linattn {
namespace {

/// Column groups of the pairs' nest: a thread per (token, group).
constexpr int64_t kPairColumnGroups = 4;
/// Threads a chunk of the key gradients' nest: K keys times row groups.
constexpr int64_t kKeyGradThreads = 512;

class ChunkGradLowering {
public:
  ChunkGradLowering(ChunkGradOp op, ChunkGradKeyKernel keyKernel)
      : op(op), keyKernel(keyKernel), l(op, op.getChunkSize()), e(l.e), b(l.b) {}

  void run();

private:
  /// A nest over (b, hv, chunk) with `lanes` threads; sets the loop
  /// variables, then body(lane).
  void forEachChunk(int64_t lanes, function_ref<void(Value)> body);
  /// body() where `t` is a token of the current chunk.
  void ifInChunk(Value t, function_ref<void()> body);

  /// G at token t (key r for per-key gates); 0 without gates.
  Value gate(Value t, Value r) {
    return l.gateAt(gates, bIdx, t, hv, perKey ? r : Value());
  }
  /// exp(G_i - G_j) (key r).
  Value decayBetween(Value i, Value j, Value r) {
    return gates ? e.exp(e.sub(gate(i, r), gate(j, r))) : e.f32(1.0f);
  }
  SmallVector<Value> idx(Value t, Value x) { return {bIdx, t, hv, x}; }
  Value at(Value buf, Value t, Value x) { return e.loadF32(buf, idx(t, x)); }
  /// A chunk matrix's entry (i, j): row i, column j - t0.
  Value pairAt(Value buf, Value i, Value j) {
    return at(buf, i, e.subIndex(j, t0));
  }
  void storePair(Value x, Value buf, Value i, Value j) {
    memref::StoreOp::create(b, x, buf, idx(i, e.subIndex(j, t0)));
  }
  Value qAt(Value t, Value r) { return e.loadF32(q, {bIdx, t, h, r}); }
  Value kAt(Value t, Value r) { return e.loadF32(k, {bIdx, t, h, r}); }
  Value stateAt(Value states, Value r, Value c) {
    return e.loadF32(states, {bIdx, n, hv, r, c});
  }
  /// k_rnorm's r_t (qk_l2norm factored), or null.
  Value keyRNorm(Value t) {
    return kRNorm ? e.loadF32(kRNorm, {bIdx, t, h}) : Value();
  }
  /// The rank-1 coefficient c_t = rank1_scale beta_t (r_t^2 with k_rnorm).
  Value coeff(Value t) {
    Value c = e.mul(rank1Scale, e.loadF32(beta, {bIdx, t, hv}));
    if (Value r = keyRNorm(t))
      c = e.mul(e.mul(c, r), r);
    return c;
  }
  /// What dO_t's products take beside it: scale, times s_t with q_rnorm
  /// (dO_t enters as s_t dO_t).
  Value outputScale(Value t) {
    return qRNorm ? e.mul(scale, e.loadF32(qRNorm, {bIdx, t, h})) : scale;
  }
  Value wide(Value x) { return arith::ExtFOp::create(b, b.getF64Type(), x); }

  void emitPairs();
  void emitBackSubstitution();
  void emitRowScalars();
  void emitKeyGradients();
  void emitRowGateSums();

  ChunkGradOp op;
  ChunkGradKeyKernel keyKernel;
  ChunkLowering l;
  LoopEmitter &e;
  ImplicitLocOpBuilder &b;
  int64_t H = 0, K = 0, HV = 0, V = 0, C = 0;
  bool perKey = false;
  Value q, k, v, beta, gates, w, u, newValues, states, gradOut, gradNewValues,
      gradStates, qRNorm, kRNorm;
  Value dq, dk, dv, dgates, dbeta;
  // Scratch, per chunk rows [B, T, HV, *] f32: dP_ij = scale dO_i . D_j (j
  // <= i); with the WY form P_ij = sum_r k_ir k_jr E_ij and c_i dL_ij (j <
  // i), Y = A^T dW and Z = A^T dU. dL/dG per key in f64 (with a gates
  // result): a factor exp(G_i - G_j) adds x at i and -x at j, and dL/dg_t,
  // the suffix sum of dL/dG, keeps only the terms that straddle t; under a
  // strong gate those are tiny beside the pairs that cancel, whose f32
  // rounding would dominate (1e-3 relative error in dgate at log gates of
  // -20). In f64 the pairs, computed by one expression, cancel exactly.
  // k_i . dkState_i per key (f64): each row's share of dL/dG at the
  // chunk's last token, summed once every row is done.
  Value outputPairs, keyPairs, factorPairs, yW, zU, gateGrad, stateShares;
  Value batch, seqLen, kDim, vDim, scale, rank1Scale;
  // Loop variables in scope: (b, hv, chunk n), its tokens [t0, t1) and
  // last token tLast, and hv's query/key head h.
  Value bIdx, hv, n, t0, t1, tLast, h;
};

void ChunkGradLowering::forEachChunk(int64_t lanes,
                                     function_ref<void(Value)> body) {
  l.parallelNest({batch, e.index(HV), l.numChunks(seqLen)}, e.index(lanes),
                 [&](ValueRange ivs, Value lane) {
                   bIdx = ivs[0];
                   hv = ivs[1];
                   n = ivs[2];
                   h = e.qkHead(hv, HV, H);
                   std::tie(t0, t1) = l.chunkBounds(n, seqLen);
                   tLast = e.subIndex(t1, e.index(1));
                   body(lane);
                 });
}

void ChunkGradLowering::ifInChunk(Value t, function_ref<void()> body) {
  Value inChunk = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t, t1);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(scf::IfOp::create(b, inChunk, false).thenBlock());
  body();
}

// A thread per token i and group of kPairColumnGroups columns j: dP_ij =
// scale dO_i . D_j for j <= i; with the WY form P_ij = sum_r k_ir k_jr E_ij
// for j < i. (A thread per token alone left a GPU block 64 threads.)
void ChunkGradLowering::emitPairs() {
  int64_t span = llvm::divideCeil(C, kPairColumnGroups);
  forEachChunk(C * kPairColumnGroups, [&](Value lane) {
    Value i = e.addIndex(t0, arith::RemUIOp::create(b, lane, e.index(C)));
    Value j0 = e.addIndex(
        t0, e.mulIndex(arith::DivUIOp::create(b, lane, e.index(C)), e.index(span)));
    Value j1 = e.addIndex(j0, e.index(span));
    ifInChunk(i, [&] {
      if (outputPairs)
        e.forRange(j0, e.minIndex(j1, e.addIndex(i, e.index(1))), [&](Value j) {
          Value dP = e.mul(outputScale(i),
                           l.dot(
                               V, [&](Value c) { return at(gradOut, i, c); },
                               [&](Value c) { return at(newValues, j, c); }));
          storePair(dP, outputPairs, i, j);
        });
      if (!beta)
        return;
      e.forRange(j0, e.minIndex(j1, i), [&](Value j) {
        Value p = l.dot(
            K, [&](Value r) { return e.mul(kAt(i, r), decayBetween(i, j, r)); },
            [&](Value r) { return kAt(j, r); });
        storePair(p, keyPairs, i, j);
      });
    });
  });
}

// A thread per column of Y (r < K) or Z (K + c): Y_i = -dD_i S_n^T and
// Z_i = dD_i, then, rows from the last, Y_i -= sum_{j > i} c_j P_ji Y_j
// (the same for Z): Y = A^T dW, Z = A^T dU through (I + L)^T.
void ChunkGradLowering::emitBackSubstitution() {
  forEachChunk(K + V, [&](Value lane) {
    Value isKey = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, lane, kDim);
    auto ifOp = scf::IfOp::create(b, isKey, /*withElse=*/true);
    auto substitute = [&](Value buf, Value col) {
      Value len = e.subIndex(t1, t0);
      e.forEach(len, [&](Value fromLast) {
        Value i = e.subIndex(tLast, fromLast);
        Value sum = l.sumRange(e.addIndex(i, e.index(1)), t1, [&](Value j) {
          return e.mul(e.mul(coeff(j), pairAt(keyPairs, j, i)), at(buf, j, col));
        });
        memref::StoreOp::create(b, e.sub(at(buf, i, col), sum), buf, idx(i, col));
      });
    };
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value r = lane;
      e.forRange(t0, t1, [&](Value i) {
        Value y = l.dot(
            V, [&](Value c) { return at(gradNewValues, i, c); },
            [&](Value c) { return stateAt(states, r, c); });
        memref::StoreOp::create(b, arith::NegFOp::create(b, y), yW, idx(i, r));
      });
      substitute(yW, r);
    }
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.elseBlock());
    Value c = e.subIndex(lane, kDim);
    e.forRange(t0, t1, [&](Value i) {
      memref::StoreOp::create(b, at(gradNewValues, i, c), zU, idx(i, c));
    });
    substitute(zU, c);
  });
}

// Without the WY form dv = dD. With it, a thread per token i: dv_i =
// beta_i Z_i, c_i dL_ij = -c_i (Y_i . W_j + Z_i . U_j) for j < i and
// dbeta_i = rank1_scale (Y_i . (k_i * exp(G_i)) + sum_j dL_ij P_ij) + Z_i . v_i;
// with k_rnorm r the write coefficient is b_i = beta_i r_i (dv_i = b_i Z_i)
// and dbeta_i takes r_i^2 and r_i on its two parts.
void ChunkGradLowering::emitRowScalars() {
  if (!beta) {
    // dv = dD: a thread per value column over the chunk's tokens, so that
    // a GPU warp's accesses are 32 adjacent columns of one row (a thread
    // per token strode a row apart: 0.33 ms of simple GLA's 1.01 ms
    // backward at B 4, T 4096, bench/NOTES.md b11).
    forEachChunk(V, [&](Value c) {
      e.forRange(t0, t1, [&](Value i) {
        e.storeFromF32(at(gradNewValues, i, c), dv, idx(i, c));
      });
    });
    return;
  }
  forEachChunk(C, [&](Value lane) {
    Value i = e.addIndex(t0, lane);
    ifInChunk(i, [&] {
      Value ci = coeff(i);
      Value throughL = l.sumRange(t0, i, [&](Value j) {
        Value dL = arith::NegFOp::create(
            b, e.add(l.dot(
                         K, [&](Value r) { return at(yW, i, r); },
                         [&](Value r) { return l.loadW(w, bIdx, j, hv, r); }),
                     l.dot(
                         V, [&](Value c) { return at(zU, i, c); },
                         [&](Value c) { return at(u, j, c); })));
        storePair(e.mul(ci, dL), factorPairs, i, j);
        return e.mul(dL, pairAt(keyPairs, i, j));
      });
      Value throughW = l.dot(
          K, [&](Value r) { return at(yW, i, r); },
          [&](Value r) { return e.mul(kAt(i, r), e.exp(gate(i, r))); });
      Value throughU = l.dot(
          V, [&](Value c) { return at(zU, i, c); },
          [&](Value c) { return at(v, i, c); });
      Value bI = e.loadF32(beta, {bIdx, i, hv});
      Value throughC = e.mul(rank1Scale, e.add(throughW, throughL));
      if (Value r = keyRNorm(i)) {
        bI = e.mul(bI, r);
        throughC = e.mul(e.mul(throughC, r), r);
        throughU = e.mul(throughU, r);
      }
      e.forEach(vDim, [&](Value c) {
        e.storeFromF32(e.mul(bI, at(zU, i, c)), dv, idx(i, c));
      });
      memref::StoreOp::create(b, e.add(throughC, throughU), dbeta,
                              ValueRange{bIdx, i, hv});
    });
  });
}

// A thread per key r and group of the chunk's tokens i:
//   dq_i = scale (S_n dO_i) * exp(G_i) + sum_{j <= i} dP_ij k_j E_ij
//   dk_i = sum_{m >= i} dP_mi q_m E_mi + (H_n D_i) * exp(G_C - G_i)
//          [+ c_i Y_i * exp(G_i) + sum_{j < i} c_i dL_ij k_j E_ij
//             + sum_{m > i} c_m dL_mi k_m E_mi]                      (WY)
// (at key r) and dL/dG_i: each term's share, +x where its factor has
// exp(G_i), -x where it has exp(-G_i), the chunk's decays exp(G_C) at its
// last token; per-key gates then take the reverse cumulative sum here.
void ChunkGradLowering::emitKeyGradients() {
  // A thread per key r and group of rows (the rows of a key are
  // independent but for dL/dG's chunk-end share, summed by the second nest
  // below): up to kKeyGradThreads threads a GPU block rather than K.
  int64_t groups = std::clamp<int64_t>(kKeyGradThreads / K, 1, C);
  int64_t span = llvm::divideCeil(C, groups);
  forEachChunk(K * groups, [&](Value lane) {
    Value r = arith::RemUIOp::create(b, lane, kDim);
    Value i0 = e.addIndex(
        t0, e.mulIndex(arith::DivUIOp::create(b, lane, kDim), e.index(span)));
    Value i1 = e.minIndex(e.addIndex(i0, e.index(span)), t1);
    // x(a, b) = m_ab s_a t_b E_ab: one expression for both of its shares.
    auto pairTerm = [&](Value matrix, Value a, Value bb, function_ref<Value(Value)> s,
                        function_ref<Value(Value)> t) {
      return e.mul(e.mul(e.mul(pairAt(matrix, a, bb), s(a)), t(bb)),
                   decayBetween(a, bb, r));
    };
    auto query = [&](Value t) { return qAt(t, r); };
    auto key = [&](Value t) { return kAt(t, r); };
    Value zero64 = arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
    e.forRange(i0, i1, [&](Value i) {
      Value dqg = e.mul(outputScale(i),
                        l.dot(
                            V, [&](Value c) { return stateAt(states, r, c); },
                            [&](Value c) { return at(gradOut, i, c); }));
      Value throughState = e.mul(dqg, e.exp(gate(i, r)));
      Value dqIntra = l.sumRange(t0, e.addIndex(i, e.index(1)), [&](Value j) {
        return e.mul(e.mul(pairAt(outputPairs, i, j), key(j)),
                     decayBetween(i, j, r));
      });
      e.storeFromF32(e.add(throughState, dqIntra), dq, idx(i, r));

      Value dkOutput = l.sumRange(i, t1, [&](Value m) {
        return e.mul(e.mul(pairAt(outputPairs, m, i), query(m)),
                     decayBetween(m, i, r));
      });
      Value hd = l.dot(
          V, [&](Value c) { return stateAt(gradStates, r, c); },
          [&](Value c) { return at(newValues, i, c); });
      Value dkState = e.mul(hd, decayBetween(tLast, i, r));
      Value dki = e.add(dkOutput, dkState);
      Value fromW, dkLower, dkUpper;
      if (beta) {
        fromW = e.mul(e.mul(coeff(i), at(yW, i, r)), e.exp(gate(i, r)));
        dkLower = l.sumRange(t0, i, [&](Value j) {
          return e.mul(e.mul(pairAt(factorPairs, i, j), key(j)),
                       decayBetween(i, j, r));
        });
        dkUpper = l.sumRange(e.addIndex(i, e.index(1)), t1, [&](Value m) {
          return e.mul(e.mul(pairAt(factorPairs, m, i), key(m)),
                       decayBetween(m, i, r));
        });
        dki = e.add(dki, e.add(fromW, e.add(dkLower, dkUpper)));
      }
      e.storeFromF32(dki, dk, idx(i, r));
      if (!gateGrad)
        return;

      // dL/dG_i in f64.
      auto sum64 = [&](Value lb, Value ub, function_ref<Value(Value)> term) {
        return e.forRangeReduce(
            lb, ub, {zero64},
            [&](Value j, ValueRange s) -> SmallVector<Value> {
              return {arith::AddFOp::create(b, s[0], wide(term(j)))};
            })[0];
      };
      Value g = wide(e.mul(query(i), throughState));
      g = arith::AddFOp::create(
          b, g, sum64(t0, e.addIndex(i, e.index(1)), [&](Value j) {
            return pairTerm(outputPairs, i, j, query, key);
          }));
      g = arith::SubFOp::create(b, g, sum64(i, t1, [&](Value m) {
            return pairTerm(outputPairs, m, i, query, key);
          }));
      Value stateShare = wide(e.mul(key(i), dkState));
      g = arith::SubFOp::create(b, g, stateShare);
      if (beta) {
        g = arith::AddFOp::create(b, g, wide(e.mul(fromW, key(i))));
        g = arith::AddFOp::create(b, g, sum64(t0, i, [&](Value j) {
              return pairTerm(factorPairs, i, j, key, key);
            }));
        g = arith::SubFOp::create(
            b, g, sum64(e.addIndex(i, e.index(1)), t1, [&](Value m) {
              return pairTerm(factorPairs, m, i, key, key);
            }));
      }
      memref::StoreOp::create(b, g, gateGrad, idx(i, r));
      memref::StoreOp::create(b, stateShare, stateShares, idx(i, r));
    });
  });
  if (!gateGrad)
    return;
  forEachChunk(K, [&](Value r) {
    Value zero64 = arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
    // The rows' state shares summed in their order (as one thread summed
    // them when it took every row).
    Value finalShare = e.forRangeReduce(
        t0, t1, {zero64}, [&](Value i, ValueRange acc) -> SmallVector<Value> {
          return {arith::AddFOp::create(
              b, acc[0], memref::LoadOp::create(b, stateShares, idx(i, r)))};
        })[0];
    // The chunk's decays exp(G_C) at its last token: the state update's
    // keys and exp(G_C) S_n.
    Value sh = l.dot(
        V, [&](Value c) { return stateAt(states, r, c); },
        [&](Value c) { return stateAt(gradStates, r, c); });
    Value last = memref::LoadOp::create(b, gateGrad, idx(tLast, r));
    last = arith::AddFOp::create(b, last, finalShare);
    last = arith::AddFOp::create(b, last, wide(e.mul(e.exp(gate(tLast, r)), sh)));
    memref::StoreOp::create(b, last, gateGrad, idx(tLast, r));
    if (!perKey)
      return;
    Value len = e.subIndex(t1, t0);
    e.forEachReduce(len, {zero64},
                    [&](Value fromLast, ValueRange acc) -> SmallVector<Value> {
                      Value i = e.subIndex(tLast, fromLast);
                      Value sum = arith::AddFOp::create(
                          b, acc[0], memref::LoadOp::create(b, gateGrad, idx(i, r)));
                      memref::StoreOp::create(
                          b, arith::TruncFOp::create(b, b.getF32Type(), sum),
                          dgates, idx(i, r));
                      return {sum};
                    });
  });
}

// Row gates: dL/dg_t = the reverse cumulative sum of sum_r dL/dG_t,r inside
// the chunk (one thread per chunk).
void ChunkGradLowering::emitRowGateSums() {
  forEachChunk(1, [&](Value) {
    Value zero64 = arith::ConstantOp::create(b, b.getF64FloatAttr(0.0));
    Value len = e.subIndex(t1, t0);
    e.forEachReduce(len, {zero64},
                    [&](Value fromLast, ValueRange acc) -> SmallVector<Value> {
                      Value i = e.subIndex(tLast, fromLast);
                      Value row = e.forEachReduce(
                          kDim, {acc[0]},
                          [&](Value r, ValueRange s) -> SmallVector<Value> {
                            return {arith::AddFOp::create(
                                b, s[0],
                                memref::LoadOp::create(b, gateGrad, idx(i, r)))};
                          })[0];
                      memref::StoreOp::create(
                          b, arith::TruncFOp::create(b, b.getF32Type(), row),
                          dgates, ValueRange{bIdx, i, hv});
                      return {row};
                    });
  });
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
  qRNorm = buffer(op.getQRnorm());
  kRNorm = buffer(op.getKRnorm());
  H = dimOf(q, 2);
  K = dimOf(q, 3);
  HV = dimOf(v, 2);
  V = dimOf(v, 3);
  C = op.getChunkSize();
  perKey = gates && cast<MemRefType>(gates.getType()).getRank() == 4;
  batch = e.dim(q, 0);
  seqLen = e.dim(q, 1);
  Value hvDim = e.index(HV);
  kDim = e.index(K);
  vDim = e.index(V);
  scale = e.f32(op.getScale().convertToFloat());
  if (beta)
    rank1Scale = e.f32(op.getRank1Scale()->convertToFloat());
  SmallVector<Value> keySizes = {batch, seqLen, hvDim, kDim},
                     valueSizes = {batch, seqLen, hvDim, vDim};
  dq = e.allocFor(op.getGradQ().getType(), keySizes);
  dk = e.allocFor(op.getGradK().getType(), keySizes);
  dv = e.allocFor(op.getGradV().getType(), valueSizes);
  SmallVector<Value> results = {dq, dk, dv};
  auto scratch = [&](Type elem, int64_t last) {
    return e.allocFor(MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic,
                                       HV, last},
                                      elem),
                      {batch, seqLen, hvDim, e.index(last)});
  };
  Type f32 = b.getF32Type();
  if (op.getGradGates()) {
    SmallVector<Value> gateSizes = {batch, seqLen, hvDim};
    if (perKey)
      gateSizes.push_back(kDim);
    dgates = e.allocFor(op.getGradGates().getType(), gateSizes);
    results.push_back(dgates);
    if (!keyKernel) {
      gateGrad = scratch(b.getF64Type(), K);
      stateShares = scratch(b.getF64Type(), K);
    }
  }
  if (!keyKernel)
    outputPairs = scratch(f32, C);
  if (beta) {
    dbeta = e.allocFor(op.getGradBeta().getType(), {batch, seqLen, hvDim});
    results.push_back(dbeta);
    keyPairs = scratch(f32, C);
    factorPairs = scratch(f32, C);
    yW = scratch(f32, K);
    zU = scratch(f32, V);
  }

  if (outputPairs || beta)
    emitPairs();
  if (beta)
    emitBackSubstitution();
  emitRowScalars();
  if (keyKernel) {
    keyKernel(b, ChunkGradKeyInputs{q, k, beta, gates, newValues, states,
                                    gradOut, gradStates, keyPairs, factorPairs,
                                    yW, dq, dk, dgates, batch, seqLen,
                                    /*wyGateShare=*/Value(), qRNorm, kRNorm});
  } else {
    emitKeyGradients();
    if (dgates && !perKey)
      emitRowGateSums();
  }
  e.replaceWithBuffers(op, results);
}

} // namespace

void lowerChunkGrad(ChunkGradOp op, ChunkGradKeyKernel keyKernel) {
  ChunkGradLowering(op, keyKernel).run();
}

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
