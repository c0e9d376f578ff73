//===- ChunkStatePassGradToLoops.cpp - The reverse chunk pass to loops ----===//
//
// linattn.chunk_state_pass_grad as loops: one parallel iteration per
// (b, hv, value column), since every column of the state gradient evolves
// on its own; sequential over the chunks, from the last.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"
#include "LoopLowerings.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

namespace mlir::linattn {

// For column c, with H the running dL/dS (grad_initial_state's buffer,
// starting as grad_final_state), chunk n from the last (tokens [t0, t1),
// last token C):
//   grad_chunk_states[n][:, c] = H
//   dD_ic = scale sum_{j >= i} (q_j . (k_i * exp(G_j - G_i))) dO_jc
//           + (k_i * exp(G_C - G_i)) . H
//   H <- exp(G_C) * H + scale sum_i (q_i * exp(G_i)) dO_ic - sum_i w_i dD_ic
void lowerChunkStatePassGrad(ChunkStatePassGradOp op) {
  ChunkLowering l(op, op.getChunkSize());
  LoopEmitter &e = l.e;
  ImplicitLocOpBuilder &b = l.b;
  Value q = e.toBuffer(op.getQ()), k = e.toBuffer(op.getK());
  Value w = op.getW() ? e.toBuffer(op.getW()) : Value();
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  Value gradOut = e.toBuffer(op.getGradOutput());
  Value gradFinal = e.toBuffer(op.getGradFinalState());
  int64_t H = dimOf(q, 2), K = dimOf(q, 3);
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
  bool perKey = gates && cast<MemRefType>(gates.getType()).getRank() == 4;
  Value scale = e.f32(op.getScale().convertToFloat());

  auto loop = scf::ParallelOp::create(
      b, ValueRange{e.index(0), e.index(0), e.index(0)},
      ValueRange{batch, hvDim, vDim},
      ValueRange{e.index(1), e.index(1), e.index(1)});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value bIdx = loop.getInductionVars()[0], hv = loop.getInductionVars()[1],
        c = loop.getInductionVars()[2];
  Value h = e.qkHead(hv, HV, H);
  auto gate = [&](Value t, Value r) {
    return l.gateAt(gates, bIdx, t, hv, perKey ? r : Value());
  };
  auto running = [&](Value r) { return SmallVector<Value>{bIdx, hv, r, c}; };
  e.forEach(kDim, [&](Value r) {
    memref::StoreOp::create(
        b, memref::LoadOp::create(b, gradFinal, running(r)), dInit, running(r));
  });
  e.forEach(numChunks, [&](Value fromLast) {
    Value n = e.subIndex(e.subIndex(numChunks, e.index(1)), fromLast);
    Value t0, t1;
    std::tie(t0, t1) = l.chunkBounds(n, seqLen);
    Value tLast = e.subIndex(t1, e.index(1));
    e.forEach(kDim, [&](Value r) {
      memref::StoreOp::create(b, memref::LoadOp::create(b, dInit, running(r)),
                              dStates, ValueRange{bIdx, n, hv, r, c});
    });
    e.forRange(t0, t1, [&](Value i) {
      Value throughState = l.dot(
          K,
          [&](Value r) {
            return e.mul(e.loadF32(k, {bIdx, i, h, r}),
                         e.exp(e.sub(gate(tLast, r), gate(i, r))));
          },
          [&](Value r) { return memref::LoadOp::create(b, dInit, running(r)); });
      Value throughOutput = l.sumRange(i, t1, [&](Value j) {
        Value score = l.dot(
            K,
            [&](Value r) {
              return e.mul(e.loadF32(q, {bIdx, j, h, r}),
                           e.exp(e.sub(gate(j, r), gate(i, r))));
            },
            [&](Value r) { return e.loadF32(k, {bIdx, i, h, r}); });
        return e.mul(score, e.loadF32(gradOut, {bIdx, j, hv, c}));
      });
      memref::StoreOp::create(b, e.add(e.mul(scale, throughOutput), throughState),
                              dD, ValueRange{bIdx, i, hv, c});
    });
    e.forEach(kDim, [&](Value r) {
      Value fromOutput = l.sumRange(t0, t1, [&](Value i) {
        return e.mul(e.mul(e.loadF32(q, {bIdx, i, h, r}), e.exp(gate(i, r))),
                     e.loadF32(gradOut, {bIdx, i, hv, c}));
      });
      Value next = e.add(
          e.mul(e.exp(gate(tLast, r)),
                memref::LoadOp::create(b, dInit, running(r))),
          e.mul(scale, fromOutput));
      if (w)
        next = e.sub(next, l.sumRange(t0, t1, [&](Value i) {
          return e.mul(e.loadF32(w, {bIdx, i, hv, r}),
                       memref::LoadOp::create(b, dD, ValueRange{bIdx, i, hv, c}));
        }));
      memref::StoreOp::create(b, next, dInit, running(r));
    });
  });
  b.setInsertionPointAfter(loop);
  e.replaceWithBuffers(op, {dD, dStates, dInit});
}

} // namespace mlir::linattn
