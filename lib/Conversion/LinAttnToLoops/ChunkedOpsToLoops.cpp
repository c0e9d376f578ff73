//===- ChunkedOpsToLoops.cpp - Chunked-state algorithm ops to loops -------===//
//
// CPU semantics of the chunkwise two-pass algorithm, one op at a time, as
// scalar fp32 loops over memrefs. Chunks are [n C, min((n + 1) C, T)): the
// last one may be short, so no padding is needed. The formulas are those of
// the op descriptions (LinAttnOps.td).
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"
#include "LoopLowerings.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "llvm/ADT/TypeSwitch.h"

namespace mlir::linattn {
namespace {


// y = x / sqrt(sum(x^2) + eps) over the last dimension.
void lowerL2Norm(L2NormOp op) {
  ChunkLowering l(op, 1);
  LoopEmitter &e = l.e;
  Value in = e.toBuffer(op.getInput());
  auto type = cast<MemRefType>(in.getType());
  int64_t rank = type.getRank(), n = type.getDimSize(rank - 1);
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < rank; ++d)
    sizes.push_back(e.dim(in, d));
  Value out = e.allocFor(op.getResult().getType(), sizes);

  std::function<void(SmallVector<Value>)> nest = [&](SmallVector<Value> ivs) {
    if ((int64_t)ivs.size() < rank - 1) {
      e.forEach(sizes[ivs.size()], [&](Value iv) {
        SmallVector<Value> next = ivs;
        next.push_back(iv);
        nest(next);
      });
      return;
    }
    auto at = [&](Value i) {
      SmallVector<Value> idx = ivs;
      idx.push_back(i);
      return idx;
    };
    Value sum = l.dot(
        n, [&](Value i) { return e.loadF32(in, at(i)); },
        [&](Value i) { return e.loadF32(in, at(i)); });
    Value inv = e.inverseNormOfSquares(sum, L2NormOp::kEpsilon);
    e.forEach(e.index(n), [&](Value i) {
      e.storeFromF32(e.mul(e.loadF32(in, at(i)), inv), out, at(i));
    });
  };
  nest({});
  e.replaceWithBuffers(op, {out});
}

// r[b, t, h] = (sum_d x[b, t, h, d]^2 + eps)^-1/2.
void lowerRNorm(RNormOp op) {
  ChunkLowering l(op, 1);
  LoopEmitter &e = l.e;
  Value in = e.toBuffer(op.getInput());
  int64_t n = dimOf(in, 3);
  SmallVector<Value> sizes = {e.dim(in, 0), e.dim(in, 1), e.dim(in, 2)};
  Value out = e.allocFor(op.getResult().getType(), sizes);
  e.forEach(sizes[0], [&](Value bIdx) {
    e.forEach(sizes[1], [&](Value t) {
      e.forEach(sizes[2], [&](Value h) {
        memref::StoreOp::create(e.b, e.inverseL2Norm(in, {bIdx, t, h}, n,
                                                     L2NormOp::kEpsilon),
                                out, ValueRange{bIdx, t, h});
      });
    });
  });
  e.replaceWithBuffers(op, {out});
}

// G_t = sum of g_s over s in [start of t's chunk, t], into `out` (the
// gates g [B, T, HV] or [B, T, HV, K] in the buffer `g`). With `keys`
// (per-key gates), also, per chunk n with last token C,
//   decayed[b, t, hv, :] = k[b, t, h, :] * exp(G_C - G_t),
//   totals[b, n, hv, :] = G_C.
void emitChunkCumsum(ChunkLowering &l, Value g, Value out, Value keys = Value(),
                     Value decayed = Value(), Value totals = Value()) {
  LoopEmitter &e = l.e;
  auto type = cast<MemRefType>(g.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(e.dim(g, d));
  bool perKey = type.getRank() == 4;
  Value numKeys = perKey ? sizes[3] : e.index(1);

  e.forEach(sizes[0], [&](Value bIdx) {
    e.forEach(sizes[2], [&](Value hv) {
      e.forEach(numKeys, [&](Value key) {
        l.forEachChunk(sizes[1], [&](Value n, Value t0, Value t1) {
          auto index = [&](Value t) {
            SmallVector<Value> idx = {bIdx, t, hv};
            if (perKey)
              idx.push_back(key);
            return idx;
          };
          {
            auto loop = scf::ForOp::create(e.b, t0, t1, e.index(1),
                                           ValueRange{e.f32(0.0f)});
            OpBuilder::InsertionGuard guard(e.b);
            e.b.setInsertionPointToEnd(loop.getBody());
            Value t = loop.getInductionVar();
            Value acc = e.add(loop.getRegionIterArgs()[0], e.loadF32(g, index(t)));
            memref::StoreOp::create(e.b, acc, out, index(t));
            scf::YieldOp::create(e.b, acc);
          }
          if (!keys)
            return;
          Value total =
              memref::LoadOp::create(e.b, out, index(e.subIndex(t1, e.index(1))));
          memref::StoreOp::create(e.b, total, totals, ValueRange{bIdx, n, hv, key});
          Value h = e.qkHead(hv, dimOf(decayed, 2), dimOf(keys, 2));
          e.forRange(t0, t1, [&](Value t) {
            Value decay = e.exp(e.sub(total, memref::LoadOp::create(e.b, out, index(t))));
            e.storeFromF32(e.mul(e.loadF32(keys, {bIdx, t, h, key}), decay),
                           decayed, index(t));
          });
        });
      });
    });
  });
}

void lowerChunkCumsum(ChunkCumsumOp op) {
  ChunkLowering l(op, op.getChunkSize());
  LoopEmitter &e = l.e;
  Value g = e.toBuffer(op.getGate());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < cast<MemRefType>(g.getType()).getRank(); ++d)
    sizes.push_back(e.dim(g, d));
  Value out = e.allocFor(op.getResult().getType(), sizes);
  if (!op.getKeys()) {
    emitChunkCumsum(l, g, out);
    return e.replaceWithBuffers(op, {out});
  }
  Value keys = e.toBuffer(op.getKeys());
  Value decayed = e.allocFor(op.getDecayedKeys().getType(), sizes);
  Value totals = e.allocFor(op.getChunkTotals().getType(),
                            {sizes[0], l.numChunks(sizes[1]), sizes[2], sizes[3]});
  emitChunkCumsum(l, g, out, keys, decayed, totals);
  e.replaceWithBuffers(op, {out, decayed, totals});
}

// Forward substitution for (I + L) [W U] = [diag(c) (K * exp(G)), diag(b) V],
// L_ij = c_i sum_d k_id k_jd exp(G_id - G_jd) for j < i in the same chunk
// (G_id = G_i for gates per row), c = rank1_scale beta and b = beta, or
// with k_rnorm r (qk_l2norm factored; with k_l2norm r = rnorm(k) formed
// here) c = rank1_scale beta r^2, b = beta r:
//   W_i = c_i (k_i * exp(G_i)) - sum_{j<i} L_ij W_j
//   U_i = b_i v_i              - sum_{j<i} L_ij U_j
void lowerUTTransform(UTTransformOp op) {
  ChunkLowering l(op, op.getChunkSize());
  LoopEmitter &e = l.e;
  Value k = e.toBuffer(op.getK()), v = e.toBuffer(op.getV());
  Value beta = e.toBuffer(op.getBeta());
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  Value kRNorm = op.getKRnorm() ? e.toBuffer(op.getKRnorm()) : Value();
  int64_t numQKHeads = dimOf(k, 2), K = dimOf(k, 3);
  int64_t numVHeads = dimOf(v, 2), V = dimOf(v, 3);
  Value batch = e.dim(k, 0), seqLen = e.dim(k, 1);
  // Raw gates: G = chunk_cumsum(g) first, returned as the third result.
  if (op.getRawGates()) {
    gates = e.allocFor(op.getCumulativeGates().getType(),
                       {batch, seqLen, e.index(numVHeads)});
    emitChunkCumsum(l, e.toBuffer(op.getRawGates()), gates);
  }
  SmallVector<Value> wSizes = {batch, seqLen, e.index(numVHeads), e.index(K)};
  // The substitution updates W's rows in place, so a 16-bit W is solved in
  // an fp32 buffer and rounded once at the end (or split: hi = W rounded,
  // lo = (W - hi) rounded).
  auto wType = cast<RankedTensorType>(op.getW().getType());
  bool splitW = isSplitW(wType);
  bool narrowW = !wType.getElementType().isF32();
  Value w = splitW ? e.allocFor(wType, {batch, seqLen, e.index(numVHeads),
                                        e.index(2), e.index(K)})
                   : e.allocFor(wType, wSizes);
  auto wWorkType = RankedTensorType::get(
      {wType.getDimSize(0), wType.getDimSize(1), numVHeads, K},
      e.b.getF32Type());
  Value wWork = narrowW ? e.allocFor(wWorkType, wSizes) : w;
  Value u = e.allocFor(op.getU().getType(),
                       {batch, seqLen, e.index(numVHeads), e.index(V)});
  Value rank1Scale = e.f32(op.getRank1Scale().convertToFloat());
  bool perKey = gates && cast<MemRefType>(gates.getType()).getRank() == 4;

  e.forEach(batch, [&](Value bIdx) {
    e.forEach(e.index(numVHeads), [&](Value hv) {
      Value h = e.qkHead(hv, numVHeads, numQKHeads);
      l.forEachChunk(seqLen, [&](Value, Value t0, Value t1) {
        e.forRange(t0, t1, [&](Value i) {
          // The write coefficient b_i and the rank-1 one c_i.
          Value bI = e.loadF32(beta, {bIdx, i, hv});
          Value rI = kRNorm            ? e.loadF32(kRNorm, {bIdx, i, h})
                     : op.getKL2norm() ? e.inverseL2Norm(k, {bIdx, i, h}, K,
                                                         L2NormOp::kEpsilon)
                                       : Value();
          Value cI = e.mul(rank1Scale, bI);
          if (rI) {
            bI = e.mul(bI, rI);
            cI = e.mul(e.mul(cI, rI), rI);
          }
          Value gI = perKey ? Value() : l.gateAt(gates, bIdx, i, hv, Value());
          Value wScale = perKey ? cI : e.mul(cI, e.exp(gI));
          e.forEach(e.index(K), [&](Value d) {
            Value kd = e.loadF32(k, {bIdx, i, h, d});
            if (perKey)
              kd = e.mul(kd, e.exp(l.gateAt(gates, bIdx, i, hv, d)));
            memref::StoreOp::create(e.b, e.mul(wScale, kd), wWork,
                                    ValueRange{bIdx, i, hv, d});
          });
          e.forEach(e.index(V), [&](Value d) {
            memref::StoreOp::create(
                e.b, e.mul(bI, e.loadF32(v, {bIdx, i, hv, d})), u,
                ValueRange{bIdx, i, hv, d});
          });
          e.forRange(t0, i, [&](Value j) {
            // Per key, the decay exp(G_id - G_jd) <= 1 goes into each term.
            Value kk = l.dot(
                K,
                [&](Value d) {
                  Value ki = e.loadF32(k, {bIdx, i, h, d});
                  if (!perKey)
                    return ki;
                  return e.mul(ki, e.exp(e.sub(l.gateAt(gates, bIdx, i, hv, d),
                                               l.gateAt(gates, bIdx, j, hv, d))));
                },
                [&](Value d) { return e.loadF32(k, {bIdx, j, h, d}); });
            Value lij;
            if (perKey) {
              lij = e.mul(cI, kk);
            } else {
              Value gJ = l.gateAt(gates, bIdx, j, hv, Value());
              lij = e.mul(e.mul(cI, kk), e.exp(e.sub(gI, gJ)));
            }
            for (auto [buf, n] : {std::make_pair(wWork, K), std::make_pair(u, V)}) {
              Value target = buf;
              e.forEach(e.index(n), [&](Value d) {
                Value xi = memref::LoadOp::create(
                    e.b, target, ValueRange{bIdx, i, hv, d});
                Value xj = memref::LoadOp::create(
                    e.b, target, ValueRange{bIdx, j, hv, d});
                memref::StoreOp::create(e.b, e.sub(xi, e.mul(lij, xj)), target,
                                        ValueRange{bIdx, i, hv, d});
              });
            }
          });
        });
      });
    });
  });
  if (splitW)
    l.storeSplit(wWork, w, wSizes);
  else if (narrowW)
    l.storeRounded(wWork, w, wSizes);
  if (op.getRawGates())
    return e.replaceWithBuffers(op, {w, u, gates});
  e.replaceWithBuffers(op, {w, u});
}

// Per chunk n, entering state S_n (saved to chunk_states[n]):
//   D = u                         (no rank-1 term)
//   D = u - W S_n                 (WY form)
//   then S_{n+1} = diag(exp(G_C)) S_n + (K * exp(G_C - G))^T D;
// or, in rank-1 product form, token by token with a_t = exp(G_t - G_{t-1})
// (per row or per key) and the decayed state S' = diag(a_t) S:
//   D_t = beta_t u_t - rank1_scale beta_t S'^T k_t,  S = S' + k_t D_t^T.
void lowerChunkStatePass(ChunkStatePassOp op) {
  ChunkLowering l(op, op.getChunkSize());
  LoopEmitter &e = l.e;
  Value k = e.toBuffer(op.getK()), u = e.toBuffer(op.getU());
  Value w = op.getW() ? e.toBuffer(op.getW()) : Value();
  Value beta = op.getBeta() ? e.toBuffer(op.getBeta()) : Value();
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  Value kRNorm = op.getKRnorm() ? e.toBuffer(op.getKRnorm()) : Value();
  Value init = e.toBuffer(op.getInitialState());
  int64_t numQKHeads = dimOf(k, 2), K = dimOf(k, 3);
  int64_t numVHeads = dimOf(u, 2), V = dimOf(u, 3);
  Value batch = e.dim(k, 0), seqLen = e.dim(k, 1);
  Value hvDim = e.index(numVHeads), kDim = e.index(K), vDim = e.index(V);
  SmallVector<Value> deltaSizes = {batch, seqLen, hvDim, vDim};
  Value delta = e.allocFor(op.getNewValues().getType(), deltaSizes);
  // The state update reads D back, so 16-bit new values (they only feed
  // the output) are computed in an fp32 buffer and rounded once at the
  // end: the carried state never sees their rounding.
  auto deltaType = cast<RankedTensorType>(op.getNewValues().getType());
  bool narrowDelta = !deltaType.getElementType().isF32();
  Value deltaWork =
      narrowDelta ? e.allocFor(deltaType.clone(e.b.getF32Type()), deltaSizes)
                  : delta;
  Value states = e.allocFor(op.getChunkStates().getType(),
                            {batch, l.numChunks(seqLen), hvDim, kDim, vDim});
  // Segmented: the state restarts from zero every segmentChunks chunks,
  // and each segment's last state goes to `ends` [B, NS, HV, K, V].
  std::optional<uint64_t> segmentChunks = op.getSegmentChunks();
  Value state = segmentChunks
                    ? e.allocFor(MemRefType::get({ShapedType::kDynamic, numVHeads,
                                                  K, V},
                                                 e.b.getF32Type()),
                                 {batch, hvDim, kDim, vDim})
                    : e.allocFor(op.getFinalState().getType(),
                                 {batch, hvDim, kDim, vDim});
  Value ends = segmentChunks
                   ? e.allocFor(op.getFinalState().getType(),
                                {batch, e.segmentCount(l.numChunks(seqLen), *segmentChunks),
                                 hvDim, kDim, vDim})
                   : Value();
  // Segments entered from their own states: init is [B, NS, HV, K, V],
  // segment s starts from init[b, s, hv].
  bool entered = cast<MemRefType>(init.getType()).getRank() == 5;
  if (!entered)
    memref::CopyOp::create(e.b, init, state);
  // A row of V floats: on the stack, freed with the function's frame.
  Value scratch = memref::AllocaOp::create(
      e.b, MemRefType::get({V}, e.b.getF32Type()));
  bool perKey = gates && cast<MemRefType>(gates.getType()).getRank() == 4;
  bool decayedKeys = op.getDecayedKeys();

  e.forEach(batch, [&](Value bIdx) {
    e.forEach(hvDim, [&](Value hv) {
      Value h = e.qkHead(hv, numVHeads, numQKHeads);
      auto S = [&](Value r, Value c) { return SmallVector<Value>{bIdx, hv, r, c}; };
      // S = the state entering `segment` (entered: init[b, segment, hv]).
      auto enterSegment = [&](Value segment) {
        e.forEach(kDim, [&](Value r) {
          e.forEach(vDim, [&](Value c) {
            Value s = entered ? e.loadF32(init, {bIdx, segment, hv, r, c})
                              : e.f32(0.0f);
            memref::StoreOp::create(e.b, s, state, S(r, c));
          });
        });
      };
      if (entered)
        enterSegment(e.index(0));
      // ends[b, segment, hv] = S, then the next segment is entered if
      // `next`.
      auto endSegment = [&](Value segment, bool next) {
        e.forEach(kDim, [&](Value r) {
          e.forEach(vDim, [&](Value c) {
            Value s = memref::LoadOp::create(e.b, state, S(r, c));
            memref::StoreOp::create(e.b, s, ends, ValueRange{bIdx, segment, hv, r, c});
          });
        });
        if (next)
          enterSegment(e.addIndex(segment, e.index(1)));
      };
      l.forEachChunk(seqLen, [&](Value n, Value t0, Value t1) {
        if (segmentChunks) {
          // Chunk n starts segment n / M > 0: the previous one ends.
          Value m = e.index(*segmentChunks);
          Value starts = arith::AndIOp::create(
              e.b,
              arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq,
                                    arith::RemUIOp::create(e.b, n, m), e.index(0)),
              arith::CmpIOp::create(e.b, arith::CmpIPredicate::ugt, n, e.index(0)));
          OpBuilder::InsertionGuard guard(e.b);
          e.b.setInsertionPointToStart(scf::IfOp::create(e.b, starts, false).thenBlock());
          endSegment(e.subIndex(arith::DivUIOp::create(e.b, n, m), e.index(1)),
                     /*next=*/true);
        }
        e.forEach(kDim, [&](Value r) {
          e.forEach(vDim, [&](Value c) {
            Value s = memref::LoadOp::create(e.b, state, S(r, c));
            e.storeFromF32(s, states, {bIdx, n, hv, r, c});
          });
        });

        if (beta) {
          // Rank-1 product form: the chunk's transitions one token at a time.
          Value rank1Scale = e.f32(op.getRank1Scale()->convertToFloat());
          e.forRange(t0, t1, [&](Value t) {
            Value isFirst = arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq,
                                                  t, t0);
            Value tPrev = arith::SelectOp::create(
                e.b, isFirst, t, e.subIndex(t, e.index(1)));
            // a_t = exp(G_t - G_{t-1}) (G_{t0-1} = 0), per row or per key.
            auto stepDecay = [&](Value key) {
              Value gT = l.gateAt(gates, bIdx, t, hv, key);
              Value gPrev = arith::SelectOp::create(
                  e.b, isFirst, e.f32(0.0f),
                  l.gateAt(gates, bIdx, tPrev, hv, key));
              return e.exp(e.sub(gT, gPrev));
            };
            // Per key the state decays first, S = diag(a_t) S, and the
            // rank-1 term meets the decayed state (a = 1 below).
            if (perKey)
              e.forEach(kDim, [&](Value r) {
                Value a = stepDecay(r);
                e.forEach(vDim, [&](Value c) {
                  Value s = memref::LoadOp::create(e.b, state, S(r, c));
                  memref::StoreOp::create(e.b, e.mul(a, s), state, S(r, c));
                });
              });
            Value decay = perKey ? e.f32(1.0f) : stepDecay(Value());
            // The write coefficient b_t = beta_t (r_t beta_t with k_rnorm)
            // and the rank-1 one, rank1_scale beta_t (r_t^2) times a_t.
            Value betaT = e.loadF32(beta, {bIdx, t, hv});
            Value coeff = e.mul(e.mul(rank1Scale, betaT), decay);
            if (kRNorm) {
              Value rT = e.loadF32(kRNorm, {bIdx, t, h});
              betaT = e.mul(betaT, rT);
              coeff = e.mul(e.mul(coeff, rT), rT);
            }
            // D_t = b_t u_t - coeff S^T k_t
            e.forEach(vDim, [&](Value c) {
              Value sk = l.dot(
                  K, [&](Value r) { return e.loadF32(k, {bIdx, t, h, r}); },
                  [&](Value r) {
                    return memref::LoadOp::create(e.b, state, S(r, c));
                  });
              Value d = e.sub(e.mul(betaT, e.loadF32(u, {bIdx, t, hv, c})),
                              e.mul(coeff, sk));
              memref::StoreOp::create(e.b, d, deltaWork, ValueRange{bIdx, t, hv, c});
            });
            // S = a_t S + k_t D_t^T
            e.forEach(kDim, [&](Value r) {
              Value kr = e.loadF32(k, {bIdx, t, h, r});
              e.forEach(vDim, [&](Value c) {
                Value s = memref::LoadOp::create(e.b, state, S(r, c));
                Value d = memref::LoadOp::create(e.b, deltaWork,
                                                 ValueRange{bIdx, t, hv, c});
                memref::StoreOp::create(e.b,
                                        e.add(e.mul(decay, s), e.mul(kr, d)),
                                        state, S(r, c));
              });
            });
          });
          return;
        }

        // D = u (- W S_n in WY form).
        e.forRange(t0, t1, [&](Value t) {
          e.forEach(vDim, [&](Value c) {
            Value d = e.loadF32(u, {bIdx, t, hv, c});
            if (w) {
              Value ws = l.dot(
                  K, [&](Value r) { return l.loadW(w, bIdx, t, hv, r); },
                  [&](Value r) {
                    return memref::LoadOp::create(e.b, state, S(r, c));
                  });
              d = e.sub(d, ws);
            }
            memref::StoreOp::create(e.b, d, deltaWork, ValueRange{bIdx, t, hv, c});
          });
        });
        // S_{n+1} = exp(G_C) S_n + sum_t (k_t * exp(G_C - G_t)) D_t^T;
        // decayed keys are k_t * exp(G_C - G_t) already, and the gates
        // the chunk totals G_C.
        Value tLast = e.subIndex(t1, e.index(1));
        e.forEach(kDim, [&](Value r) {
          Value gLast = decayedKeys
                            ? e.loadF32(gates, {bIdx, n, hv, r})
                            : l.gateAt(gates, bIdx, tLast, hv, perKey ? r : Value());
          Value decay = e.exp(gLast);
          e.forEach(vDim, [&](Value c) {
            memref::StoreOp::create(e.b, e.f32(0.0f), scratch, c);
          });
          e.forRange(t0, t1, [&](Value t) {
            Value kScaled =
                decayedKeys
                    ? e.loadF32(k, {bIdx, t, hv, r})
                    : e.mul(e.loadF32(k, {bIdx, t, h, r}),
                            e.exp(e.sub(gLast, l.gateAt(gates, bIdx, t, hv,
                                                        perKey ? r : Value()))));
            e.forEach(vDim, [&](Value c) {
              Value acc = memref::LoadOp::create(e.b, scratch, c);
              Value d = memref::LoadOp::create(e.b, deltaWork,
                                               ValueRange{bIdx, t, hv, c});
              memref::StoreOp::create(e.b, e.add(acc, e.mul(kScaled, d)),
                                      scratch, c);
            });
          });
          e.forEach(vDim, [&](Value c) {
            Value s = memref::LoadOp::create(e.b, state, S(r, c));
            Value acc = memref::LoadOp::create(e.b, scratch, c);
            memref::StoreOp::create(e.b, e.add(e.mul(decay, s), acc), state,
                                    S(r, c));
          });
        });
      });
      if (segmentChunks)
        endSegment(e.subIndex(e.segmentCount(l.numChunks(seqLen), *segmentChunks),
                              e.index(1)),
                   /*next=*/false);
    });
  });
  if (narrowDelta)
    l.storeRounded(deltaWork, delta, deltaSizes);
  e.replaceWithBuffers(op, {delta, states, segmentChunks ? ends : state});
}

// C_0 = 0, C_{s+1} = exp(L_s) C_s + E_s, final = C_NS; L_s the sum of the
// chunk totals of segment s, once per (b, hv, s). The running carry is the
// final state's buffer.
void lowerSegmentCarries(SegmentCarriesOp op) {
  ChunkLowering l(op, op.getChunkSize());
  LoopEmitter &e = l.e;
  Value ends = e.toBuffer(op.getEnds());
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  int64_t numVHeads = dimOf(ends, 2), K = dimOf(ends, 3), V = dimOf(ends, 4);
  int64_t segmentChunks = op.getSegmentChunks();
  Value batch = e.dim(ends, 0), numSegs = e.dim(ends, 1);
  Value hvDim = e.index(numVHeads), kDim = e.index(K), vDim = e.index(V);
  Value carries = e.allocFor(op.getCarries().getType(),
                             {batch, numSegs, hvDim, kDim, vDim});
  Value finalState = e.allocFor(op.getFinalState().getType(),
                                {batch, hvDim, kDim, vDim});
  Value seqLen = gates ? e.dim(gates, 1) : Value();
  e.forEach(batch, [&](Value bIdx) {
    e.forEach(hvDim, [&](Value hv) {
      auto forEachElement = [&](function_ref<void(Value, Value)> body) {
        e.forEach(kDim, [&](Value r) { e.forEach(vDim, [&](Value c) { body(r, c); }); });
      };
      forEachElement([&](Value r, Value c) {
        memref::StoreOp::create(e.b, e.f32(0.0f), finalState, ValueRange{bIdx, hv, r, c});
      });
      e.forEach(numSegs, [&](Value s) {
        Value decay = e.f32(1.0f);
        if (gates) {
          Value m0 = e.mulIndex(s, e.index(segmentChunks));
          Value m1 = e.minIndex(e.addIndex(m0, e.index(segmentChunks)),
                                l.numChunks(seqLen));
          decay = e.exp(l.sumChunkTotals(gates, bIdx, hv, m0, m1, seqLen));
        }
        forEachElement([&](Value r, Value c) {
          SmallVector<Value> at = {bIdx, hv, r, c};
          Value carry = memref::LoadOp::create(e.b, finalState, at);
          e.storeFromF32(carry, carries, {bIdx, s, hv, r, c});
          Value end = memref::LoadOp::create(e.b, ends, ValueRange{bIdx, s, hv, r, c});
          memref::StoreOp::create(e.b, e.add(e.mul(decay, carry), end), finalState, at);
        });
      });
    });
  });
  e.replaceWithBuffers(op, {carries, finalState});
}

// The maps [A_s | E_s] by their definition: a state pass entered from
// [I | 0] in every segment over u' = [0 | u], its segments' ends.
void lowerSegmentMaps(SegmentMapsOp op) {
  ChunkLowering l(op, op.getChunkSize());
  LoopEmitter &e = l.e;
  Value u = e.toBuffer(op.getU());
  auto uType = cast<MemRefType>(u.getType());
  int64_t numVHeads = uType.getDimSize(2), V = uType.getDimSize(3);
  int64_t K = dimOf(op.getK(), 3);
  Value batch = e.dim(u, 0), seqLen = e.dim(u, 1);
  Value hvDim = e.index(numVHeads), kDim = e.index(K);
  Value numSegs = e.segmentCount(l.numChunks(seqLen), op.getSegmentChunks());
  Type f32 = e.b.getF32Type();
  auto wideU = MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic,
                                numVHeads, K + V},
                               f32);
  Value uMaps = e.allocFor(wideU, {batch, seqLen, hvDim, e.index(K + V)});
  e.forEach(batch, [&](Value bIdx) {
    e.forEach(seqLen, [&](Value t) {
      e.forEach(hvDim, [&](Value hv) {
        e.forEach(kDim, [&](Value c) {
          memref::StoreOp::create(e.b, e.f32(0.0f), uMaps,
                                  ValueRange{bIdx, t, hv, c});
        });
        e.forEach(e.index(V), [&](Value c) {
          memref::StoreOp::create(e.b, e.loadF32(u, {bIdx, t, hv, c}), uMaps,
                                  ValueRange{bIdx, t, hv, e.addIndex(c, kDim)});
        });
      });
    });
  });
  auto mapsType = cast<RankedTensorType>(op.getMaps().getType());
  auto entryType = MemRefType::get(mapsType.getShape(), f32);
  Value entries = e.allocFor(entryType, {batch, numSegs, hvDim, kDim,
                                         e.index(K + V)});
  e.forEach(batch, [&](Value bIdx) {
    e.forEach(numSegs, [&](Value seg) {
      e.forEach(hvDim, [&](Value hv) {
        e.forEach(kDim, [&](Value r) {
          e.forEach(e.index(K + V), [&](Value c) {
            Value one = arith::SelectOp::create(
                e.b,
                arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq, r, c),
                e.f32(1.0f), e.f32(0.0f));
            memref::StoreOp::create(e.b, one, entries,
                                    ValueRange{bIdx, seg, hv, r, c});
          });
        });
      });
    });
  });
  auto uMapsType = RankedTensorType::get(wideU.getShape(), f32);
  auto statesType = RankedTensorType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic, numVHeads, K, K + V}, f32);
  auto pass = ChunkStatePassOp::create(
      e.b, op.getLoc(), TypeRange{uMapsType, statesType, mapsType}, op.getK(),
      /*k_rnorm=*/Value(), e.toTensor(uMaps, uMapsType), op.getW(),
      /*beta=*/Value(), op.getGates(),
      e.toTensor(entries, mapsType), op.getChunkSizeAttr(),
      /*rank1_scale=*/FloatAttr(), op.getSegmentChunksAttr(),
      op.getDecayedKeysAttr());
  op.getMaps().replaceAllUsesWith(pass.getFinalState());
  op.erase();
  lowerChunkStatePass(pass);
}

// C_0 = S_0, C_{s+1} = A_s C_s + E_s, final = C_NS; the running state is
// the final state's buffer.
void lowerSegmentEntries(SegmentEntriesOp op) {
  ChunkLowering l(op, 1);
  LoopEmitter &e = l.e;
  Value maps = e.toBuffer(op.getMaps());
  Value init = e.toBuffer(op.getInitialState());
  int64_t numVHeads = dimOf(init, 1), K = dimOf(init, 2), V = dimOf(init, 3);
  Value batch = e.dim(maps, 0), numSegs = e.dim(maps, 1);
  Value hvDim = e.index(numVHeads), kDim = e.index(K), vDim = e.index(V);
  Value entries = e.allocFor(op.getEntries().getType(),
                             {batch, numSegs, hvDim, kDim, vDim});
  Value finalState = e.allocFor(op.getFinalState().getType(),
                                {batch, hvDim, kDim, vDim});
  memref::CopyOp::create(e.b, init, finalState);
  e.forEach(batch, [&](Value bIdx) {
    e.forEach(hvDim, [&](Value hv) {
      e.forEach(numSegs, [&](Value s) {
        e.forEach(kDim, [&](Value r) {
          e.forEach(vDim, [&](Value c) {
            Value x = memref::LoadOp::create(e.b, finalState,
                                             ValueRange{bIdx, hv, r, c});
            memref::StoreOp::create(e.b, x, entries,
                                    ValueRange{bIdx, s, hv, r, c});
          });
        });
        e.forEach(kDim, [&](Value r) {
          e.forEach(vDim, [&](Value c) {
            Value acc = l.dot(
                K,
                [&](Value j) { return e.loadF32(maps, {bIdx, s, hv, r, j}); },
                [&](Value j) {
                  return e.loadF32(entries, {bIdx, s, hv, j, c});
                });
            Value offset =
                e.loadF32(maps, {bIdx, s, hv, r, e.addIndex(c, kDim)});
            memref::StoreOp::create(e.b, e.add(acc, offset), finalState,
                                    ValueRange{bIdx, hv, r, c});
          });
        });
      });
    });
  });
  e.replaceWithBuffers(op, {entries, finalState});
}

// o_i = scale (S_n^T (q_i * exp(G_i))
//              + sum_{j <= i in chunk} (sum_k q_ik k_jk exp(G_ik - G_jk)) D_j),
// times s_i with q_rnorm s (with q_l2norm s = rnorm(q), formed here).
void lowerChunkOutput(ChunkOutputOp op) {
  ChunkLowering l(op, op.getChunkSize());
  LoopEmitter &e = l.e;
  Value q = e.toBuffer(op.getQ()), k = e.toBuffer(op.getK());
  Value qRNorm = op.getQRnorm() ? e.toBuffer(op.getQRnorm()) : Value();
  Value delta = e.toBuffer(op.getNewValues());
  Value states = e.toBuffer(op.getChunkStates());
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  // Segment-local states: S_n = states[n] + exp(sum of G_C(m), m from the
  // segment's first chunk to n - 1) C_s.
  Value carries = op.getCarries() ? e.toBuffer(op.getCarries()) : Value();
  int64_t segmentChunks = op.getSegmentChunks().value_or(0);
  int64_t numQKHeads = dimOf(q, 2), K = dimOf(q, 3);
  int64_t numVHeads = dimOf(delta, 2), V = dimOf(delta, 3);
  Value batch = e.dim(q, 0), seqLen = e.dim(q, 1);
  Value kDim = e.index(K), vDim = e.index(V);
  Value out = e.allocFor(op.getOutput().getType(),
                         {batch, seqLen, e.index(numVHeads), vDim});
  Value acc =
      memref::AllocaOp::create(e.b, MemRefType::get({V}, e.b.getF32Type()));
  bool perKey = gates && cast<MemRefType>(gates.getType()).getRank() == 4;
  Value scale = e.f32(op.getScale().convertToFloat());

  e.forEach(batch, [&](Value bIdx) {
    e.forEach(e.index(numVHeads), [&](Value hv) {
      Value h = e.qkHead(hv, numVHeads, numQKHeads);
      l.forEachChunk(seqLen, [&](Value n, Value t0, Value t1) {
        Value segment, carryDecay;
        if (carries) {
          segment = arith::DivUIOp::create(e.b, n, e.index(segmentChunks));
          carryDecay = e.exp(l.sumChunkTotals(
              gates, bIdx, hv, e.mulIndex(segment, e.index(segmentChunks)), n, seqLen));
        }
        e.forRange(t0, t1, [&](Value i) {
          e.forEach(vDim, [&](Value c) {
            memref::StoreOp::create(e.b, e.f32(0.0f), acc, c);
          });
          // Inter-chunk term: S_n^T (q_i * exp(G_i)).
          e.forEach(kDim, [&](Value r) {
            Value qr = e.mul(e.loadF32(q, {bIdx, i, h, r}),
                             e.exp(l.gateAt(gates, bIdx, i, hv,
                                            perKey ? r : Value())));
            e.forEach(vDim, [&](Value c) {
              Value s = e.loadF32(states, {bIdx, n, hv, r, c});
              if (carries)
                s = e.add(s, e.mul(carryDecay,
                                   e.loadF32(carries, {bIdx, segment, hv, r, c})));
              Value a = memref::LoadOp::create(e.b, acc, c);
              memref::StoreOp::create(e.b, e.add(a, e.mul(qr, s)), acc, c);
            });
          });
          // Intra-chunk term over j in [t0, i].
          e.forRange(t0, e.addIndex(i, e.index(1)), [&](Value j) {
            Value score;
            if (perKey) {
              score = l.dot(
                  K,
                  [&](Value r) {
                    Value decay = e.exp(e.sub(l.gateAt(gates, bIdx, i, hv, r),
                                              l.gateAt(gates, bIdx, j, hv, r)));
                    return e.mul(e.loadF32(q, {bIdx, i, h, r}), decay);
                  },
                  [&](Value r) { return e.loadF32(k, {bIdx, j, h, r}); });
            } else {
              score = l.dot(
                  K, [&](Value r) { return e.loadF32(q, {bIdx, i, h, r}); },
                  [&](Value r) { return e.loadF32(k, {bIdx, j, h, r}); });
              if (gates)
                score = e.mul(score,
                              e.exp(e.sub(l.gateAt(gates, bIdx, i, hv, Value()),
                                          l.gateAt(gates, bIdx, j, hv, Value()))));
            }
            e.forEach(vDim, [&](Value c) {
              Value d = e.loadF32(delta, {bIdx, j, hv, c});
              Value a = memref::LoadOp::create(e.b, acc, c);
              memref::StoreOp::create(e.b, e.add(a, e.mul(score, d)), acc, c);
            });
          });
          Value rowScale = scale;
          if (qRNorm)
            rowScale = e.mul(scale, e.loadF32(qRNorm, {bIdx, i, h}));
          else if (op.getQL2norm())
            rowScale = e.mul(
                scale, e.inverseL2Norm(q, {bIdx, i, h}, K, L2NormOp::kEpsilon));
          e.forEach(vDim, [&](Value c) {
            Value a = memref::LoadOp::create(e.b, acc, c);
            e.storeFromF32(e.mul(rowScale, a), out, {bIdx, i, hv, c});
          });
        });
      });
    });
  });
  e.replaceWithBuffers(op, {out});
}

// With Kd_t = k_t exp(G_C - G_t) over the tokens t of chunk n:
//   WY form:  M_n = diag(exp(G_C)) - Kd^T W,   B_n = Kd^T U
//   else:     log M_n = G_C,                B_n = Kd^T u
// Every element is independent: parallel over (b, n, hv x row) and the
// columns.
void lowerChunkTransitions(ChunkTransitionsOp op) {
  ChunkLowering l(op, op.getChunkSize());
  LoopEmitter &e = l.e;
  Value k = e.toBuffer(op.getK()), u = e.toBuffer(op.getU());
  Value w = op.getW() ? e.toBuffer(op.getW()) : Value();
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  int64_t numQKHeads = dimOf(k, 2), K = dimOf(k, 3);
  int64_t numVHeads = dimOf(u, 2), V = dimOf(u, 3);
  Value batch = e.dim(k, 0), seqLen = e.dim(k, 1);
  Value numChunks = l.numChunks(seqLen);
  Value hvDim = e.index(numVHeads), kDim = e.index(K), vDim = e.index(V);
  bool perKey = gates && cast<MemRefType>(gates.getType()).getRank() == 4;
  SmallVector<Value> transitionSizes = {batch, numChunks, hvDim, kDim, kDim};
  Value transitions = e.allocFor(op.getTransitions().getType(),
                                 transitionSizes);
  Value offsets = e.allocFor(op.getOffsets().getType(),
                             {batch, numChunks, hvDim, kDim, vDim});

  // The sum over chunk n of Kd[t, r] x[t, c], Kd[t, r] = k[t, r]
  // exp(G[tLast, r] - G[t, r]).
  auto kdTimes = [&](Value x, Value bIdx, Value n, Value hv, Value r,
                     Value c) {
    Value h = e.qkHead(hv, numVHeads, numQKHeads);
    Value key = perKey ? r : Value();
    auto [t0, t1] = l.chunkBounds(n, seqLen);
    Value gLast = l.gateAt(gates, bIdx, e.subIndex(t1, e.index(1)), hv, key);
    return l.sumRange(t0, t1, [&](Value t) {
      Value gT = l.gateAt(gates, bIdx, t, hv, key);
      Value kd =
          e.mul(e.loadF32(k, {bIdx, t, h, r}), e.exp(e.sub(gLast, gT)));
      return e.mul(kd, e.loadF32(x, {bIdx, t, hv, c}));
    });
  };
  // (b, n, hv x row) blocks, one thread per column.
  auto forEachRow = [&](Value columns,
                        function_ref<void(Value, Value, Value, Value, Value)>
                            body) {
    l.parallelNest({batch, numChunks, e.mulIndex(hvDim, kDim)}, columns,
                   [&](ValueRange block, Value c) {
                     Value hv = arith::DivUIOp::create(e.b, block[2], kDim);
                     Value r = arith::RemUIOp::create(e.b, block[2], kDim);
                     body(block[0], block[1], hv, r, c);
                   });
  };

  forEachRow(vDim, [&](Value bIdx, Value n, Value hv, Value r, Value c) {
    memref::StoreOp::create(e.b, kdTimes(u, bIdx, n, hv, r, c), offsets,
                            ValueRange{bIdx, n, hv, r, c});
  });
  if (w) {
    forEachRow(kDim, [&](Value bIdx, Value n, Value hv, Value r, Value c) {
      Value tLast = e.subIndex(l.chunkBounds(n, seqLen).second, e.index(1));
      Value decay =
          e.exp(l.gateAt(gates, bIdx, tLast, hv, perKey ? r : Value()));
      Value diagonal =
          arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq, r, c);
      Value identity =
          arith::SelectOp::create(e.b, diagonal, decay, e.f32(0.0f));
      memref::StoreOp::create(e.b,
                              e.sub(identity, kdTimes(w, bIdx, n, hv, r, c)),
                              transitions, ValueRange{bIdx, n, hv, r, c});
    });
  } else {
    // The log transition: G_C per head, or per key.
    l.parallelNest({batch, numChunks, hvDim}, perKey ? kDim : e.index(1),
                   [&](ValueRange block, Value r) {
                     Value bIdx = block[0], n = block[1], hv = block[2];
                     Value tLast = e.subIndex(
                         l.chunkBounds(n, seqLen).second, e.index(1));
                     Value g = l.gateAt(gates, bIdx, tLast, hv,
                                        perKey ? r : Value());
                     SmallVector<Value> at = {bIdx, n, hv};
                     if (perKey)
                       at.push_back(r);
                     memref::StoreOp::create(e.b, g, transitions, at);
                   });
  }
  e.replaceWithBuffers(op, {transitions, offsets});
}

// D_t = u_t - W_t^T S_n (WY form) or u_t, for t in chunk n: parallel over
// (b, n, hv) and the columns, the chunk's tokens in order.
void lowerChunkNewValues(ChunkNewValuesOp op) {
  ChunkLowering l(op, op.getChunkSize());
  LoopEmitter &e = l.e;
  Value u = e.toBuffer(op.getU());
  Value w = op.getW() ? e.toBuffer(op.getW()) : Value();
  Value states = e.toBuffer(op.getChunkStates());
  int64_t numVHeads = dimOf(u, 2), V = dimOf(u, 3), K = dimOf(states, 3);
  Value batch = e.dim(u, 0), seqLen = e.dim(u, 1);
  Value delta = e.allocFor(op.getNewValues().getType(),
                           {batch, seqLen, e.index(numVHeads), e.index(V)});
  l.parallelNest(
      {batch, l.numChunks(seqLen), e.index(numVHeads)}, e.index(V),
      [&](ValueRange block, Value c) {
        Value bIdx = block[0], n = block[1], hv = block[2];
        auto [t0, t1] = l.chunkBounds(n, seqLen);
        e.forRange(t0, t1, [&](Value t) {
          Value d = e.loadF32(u, {bIdx, t, hv, c});
          if (w)
            d = e.sub(d, l.dot(
                             K,
                             [&](Value r) {
                               return e.loadF32(w, {bIdx, t, hv, r});
                             },
                             [&](Value r) {
                               return memref::LoadOp::create(
                                   e.b, states, ValueRange{bIdx, n, hv, r, c});
                             }));
          memref::StoreOp::create(e.b, d, delta, ValueRange{bIdx, t, hv, c});
        });
      });
  e.replaceWithBuffers(op, {delta});
}

} // namespace

void lowerChunkedOpsToLoops(Operation *root) {
  // A state pass with its outputs formed in it is, in loops, the two ops
  // it stands for.
  SmallVector<ChunkStatePassOutputOp> fused;
  root->walk([&](ChunkStatePassOutputOp op) { fused.push_back(op); });
  for (ChunkStatePassOutputOp op : fused) {
    op.unfuse();
  }
  SmallVector<Operation *> ops;
  root->walk([&](Operation *op) {
    if (isa<L2NormOp, RNormOp, ChunkCumsumOp, UTTransformOp, ChunkStatePassOp,
            SegmentCarriesOp, SegmentMapsOp, SegmentEntriesOp,
            ChunkTransitionsOp, ChunkNewValuesOp, ChunkOutputOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    llvm::TypeSwitch<Operation *>(op)
        .Case([](L2NormOp op) { lowerL2Norm(op); })
        .Case([](RNormOp op) { lowerRNorm(op); })
        .Case([](ChunkCumsumOp op) { lowerChunkCumsum(op); })
        .Case([](UTTransformOp op) { lowerUTTransform(op); })
        .Case([](ChunkStatePassOp op) { lowerChunkStatePass(op); })
        .Case([](SegmentCarriesOp op) { lowerSegmentCarries(op); })
        .Case([](SegmentMapsOp op) { lowerSegmentMaps(op); })
        .Case([](SegmentEntriesOp op) { lowerSegmentEntries(op); })
        .Case([](ChunkTransitionsOp op) { lowerChunkTransitions(op); })
        .Case([](ChunkNewValuesOp op) { lowerChunkNewValues(op); })
        .Case([](ChunkOutputOp op) { lowerChunkOutput(op); });
  }
}

} // namespace mlir::linattn
