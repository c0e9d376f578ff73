//===- ChunkStatePassGradToLoops.cpp - The reverse chunk pass to loops ----===//
//
// linattn.chunk_state_pass_grad as three parallel nests (blocks and threads
// on a GPU, plain loops on the CPU): first, per chunk, what does not depend
// on the state gradient (per token: the intra-chunk scores, the decayed keys
// and queries; per value column: the output's share of dD and of the state
// gradient); then the pass itself, one thread per (b, hv, value column) since
// every column of the state gradient evolves on its own, sequential over the
// chunks from the last.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"
#include "LoopLowerings.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

namespace mlir::linattn {

// With H the running dL/dS (grad_initial_state's buffer, starting as
// grad_final_state), chunk n from the last (tokens [t0, t1), last token C):
//   grad_chunk_states[n] = H
//   dD_i = scale sum_{j >= i} A_ji dO_j + Kd_i H,   A_ji = q_j . (k_i * exp(G_j - G_i))
//   H <- exp(G_C) * H + scale sum_i Qg_i dO_i^T - sum_i w_i dD_i^T
// with Kd_i = k_i * exp(G_C - G_i) and Qg_i = q_i * exp(G_i) (per key);
// with q_rnorm s every q_j is s_j q_j.
void lowerChunkStatePassGrad(ChunkStatePassGradOp op) {
  ChunkLowering l(op, op.getChunkSize());
  LoopEmitter &e = l.e;
  ImplicitLocOpBuilder &b = l.b;
  Value q = e.toBuffer(op.getQ()), k = e.toBuffer(op.getK());
  Value qRNorm = op.getQRnorm() ? e.toBuffer(op.getQRnorm()) : Value();
  Value w = op.getW() ? e.toBuffer(op.getW()) : Value();
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  Value gradOut = e.toBuffer(op.getGradOutput());
  Value gradFinal = e.toBuffer(op.getGradFinalState());
  int64_t H = dimOf(q, 2), K = dimOf(q, 3), C = op.getChunkSize();
  int64_t HV = dimOf(gradOut, 2), V = dimOf(gradOut, 3);
  Value batch = e.dim(q, 0), seqLen = e.dim(q, 1);
  Value hvDim = e.index(HV), kDim = e.index(K), vDim = e.index(V);
  Value numChunks = l.numChunks(seqLen);
  Value dD = e.allocFor(op.getGradNewValues().getType(),
                        {batch, seqLen, hvDim, vDim});
  Value dStates = e.allocFor(op.getGradChunkStates().getType(),
                             {batch, numChunks, hvDim, kDim, vDim});
  Value dInit = e.allocFor(op.getGradInitialState().getType(),
                           {batch, hvDim, kDim, vDim});
  auto f32Scratch = [&](int64_t last) {
    return e.allocFor(MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic,
                                       HV, last},
                                      b.getF32Type()),
                      {batch, seqLen, hvDim, e.index(last)});
  };
  Value scores = f32Scratch(C), decayedKeys = f32Scratch(K),
        gatedQueries = f32Scratch(K);
  bool perKey = gates && cast<MemRefType>(gates.getType()).getRank() == 4;
  Value scale = e.f32(op.getScale().convertToFloat());

  Value bIdx, hv, h, t0, t1, tLast;
  auto gate = [&](Value t, Value r) {
    return l.gateAt(gates, bIdx, t, hv, perKey ? r : Value());
  };
  auto enterChunk = [&](Value n) {
    std::tie(t0, t1) = l.chunkBounds(n, seqLen);
    tLast = e.subIndex(t1, e.index(1));
  };
  auto at = [&](Value t, Value x) { return SmallVector<Value>{bIdx, t, hv, x}; };
  // q_t's element r as the pass reads it: s_t q_t with q_rnorm.
  auto queryAt = [&](Value t, Value r) {
    Value x = e.loadF32(q, {bIdx, t, h, r});
    return qRNorm ? e.mul(x, e.loadF32(qRNorm, {bIdx, t, h})) : x;
  };

  // Per chunk, a thread per token i: A_ji for j >= i (scores[i][j - t0]),
  // Kd_i and Qg_i.
  l.parallelNest({batch, hvDim, numChunks}, e.index(C), [&](ValueRange ivs, Value lane) {
    bIdx = ivs[0];
    hv = ivs[1];
    h = e.qkHead(hv, HV, H);
    enterChunk(ivs[2]);
    Value i = e.addIndex(t0, lane);
    Value inChunk = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i, t1);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(scf::IfOp::create(b, inChunk, false).thenBlock());
    e.forRange(i, t1, [&](Value j) {
      Value score = l.dot(
          K,
          [&](Value r) {
            return e.mul(queryAt(j, r), e.exp(e.sub(gate(j, r), gate(i, r))));
          },
          [&](Value r) { return e.loadF32(k, {bIdx, i, h, r}); });
      memref::StoreOp::create(b, score, scores, at(i, e.subIndex(j, t0)));
    });
    e.forEach(kDim, [&](Value r) {
      memref::StoreOp::create(b,
                              e.mul(e.loadF32(k, {bIdx, i, h, r}),
                                    e.exp(e.sub(gate(tLast, r), gate(i, r)))),
                              decayedKeys, at(i, r));
      memref::StoreOp::create(
          b, e.mul(queryAt(i, r), e.exp(gate(i, r))), gatedQueries, at(i, r));
    });
  });

  // What does not depend on H, a thread per value column c of every chunk:
  // dD_i = scale sum_{j >= i} A_ji dO_j, and scale Qg^T dO into
  // grad_chunk_states[n] (the pass reads it there before it writes H).
  l.parallelNest({batch, hvDim, numChunks}, vDim, [&](ValueRange ivs, Value c) {
    bIdx = ivs[0];
    hv = ivs[1];
    Value n = ivs[2];
    enterChunk(n);
    e.forRange(t0, t1, [&](Value i) {
      Value throughOutput = l.sumRange(i, t1, [&](Value j) {
        return e.mul(e.loadF32(scores, at(i, e.subIndex(j, t0))),
                     e.loadF32(gradOut, {bIdx, j, hv, c}));
      });
      memref::StoreOp::create(b, e.mul(scale, throughOutput), dD, at(i, c));
    });
    e.forEach(kDim, [&](Value r) {
      Value fromOutput = l.sumRange(t0, t1, [&](Value i) {
        return e.mul(e.loadF32(gatedQueries, at(i, r)),
                     e.loadF32(gradOut, {bIdx, i, hv, c}));
      });
      memref::StoreOp::create(b, e.mul(scale, fromOutput), dStates,
                              ValueRange{bIdx, n, hv, r, c});
    });
  });

  // The pass: a thread per value column c, 2 C K multiply-adds a chunk.
  // The column of H is carried as K values through the chunk loop (loops
  // over it unrolled here), so that on a GPU it stays in registers.
  l.parallelNest({batch, hvDim}, vDim, [&](ValueRange ivs, Value c) {
    bIdx = ivs[0];
    hv = ivs[1];
    auto running = [&](int64_t r) {
      return SmallVector<Value>{bIdx, hv, e.index(r), c};
    };
    SmallVector<Value> initial;
    for (int64_t r = 0; r < K; ++r)
      initial.push_back(memref::LoadOp::create(b, gradFinal, running(r)));
    ValueRange last = e.forEachReduce(
        numChunks, initial,
        [&](Value fromLast, ValueRange column) -> SmallVector<Value> {
          Value n = e.subIndex(e.subIndex(numChunks, e.index(1)), fromLast);
          enterChunk(n);
          // dD_i += Kd_i . H
          e.forRange(t0, t1, [&](Value i) {
            Value acc = e.loadF32(dD, at(i, c));
            for (int64_t r = 0; r < K; ++r)
              acc = e.add(acc, e.mul(e.loadF32(decayedKeys, at(i, e.index(r))),
                                     column[r]));
            memref::StoreOp::create(b, acc, dD, at(i, c));
          });
          // grad_chunk_states[n] = H, and H <- exp(G_C) H + scale Qg^T dO
          // (what the nest above left there) - W^T dD.
          Value rowDecay = perKey ? Value() : e.exp(gate(tLast, Value()));
          SmallVector<Value> next;
          for (int64_t r = 0; r < K; ++r) {
            SmallVector<Value> leaving = {bIdx, n, hv, e.index(r), c};
            Value fromOutput = memref::LoadOp::create(b, dStates, leaving);
            memref::StoreOp::create(b, column[r], dStates, leaving);
            Value decay = perKey ? e.exp(gate(tLast, e.index(r))) : rowDecay;
            next.push_back(e.add(e.mul(decay, column[r]), fromOutput));
          }
          if (!w)
            return next;
          ValueRange updated = e.forRangeReduce(
              t0, t1, next, [&](Value i, ValueRange acc) -> SmallVector<Value> {
                Value d = e.loadF32(dD, at(i, c));
                SmallVector<Value> out;
                for (int64_t r = 0; r < K; ++r)
                  out.push_back(e.sub(acc[r], e.mul(l.loadW(w, bIdx, i, hv, e.index(r)), d)));
                return out;
              });
          return SmallVector<Value>(updated.begin(), updated.end());
        });
    for (int64_t r = 0; r < K; ++r)
      memref::StoreOp::create(b, last[r], dInit, running(r));
  });
  e.replaceWithBuffers(op, {dD, dStates, dInit});
}

} // namespace mlir::linattn
