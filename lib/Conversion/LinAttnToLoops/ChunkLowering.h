//===- ChunkLowering.h - Loops over the chunks of a [B, T, ...] op -*- C++ -*-===//
//
// What the loop lowerings of the chunked ops (forward and backward) share:
// the builder, chunk bounds, gate loads, small reductions and stores.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOLOOPS_CHUNKLOWERING_H
#define LIB_CONVERSION_LINATTNTOLOOPS_CHUNKLOWERING_H

#include "LinAttn/Utils/LoopEmitter.h"

namespace mlir::linattn {

/// State shared by the lowerings of one op: the builder and the chunk
/// geometry of a [B, T, ...] operand.
class ChunkLowering {
public:
  ChunkLowering(Operation *op, int64_t chunkSize)
      : b(op->getLoc(), op), e(b), chunkSize(chunkSize) {}

  /// Number of chunks ceil(T / C) for a T given as an index value.
  Value numChunks(Value seqLen) {
    return arith::CeilDivUIOp::create(b, seqLen, e.index(chunkSize));
  }

  /// Calls body(t0, t1) for every chunk [t0, t1) of [0, T) of sequence/
  /// head loop variables already in scope.
  void forEachChunk(Value seqLen, function_ref<void(Value, Value, Value)> body) {
    e.forEach(numChunks(seqLen), [&](Value n) {
      auto [t0, t1] = chunkBounds(n, seqLen);
      body(n, t0, t1);
    });
  }

  /// scf.parallel over `outer` around an scf.parallel over [0, inner):
  /// blocks and threads on a GPU (gpu-map-parallel-loops), plain loops on
  /// the CPU. body(outer indices, inner index).
  void parallelNest(ArrayRef<Value> outer, Value inner,
                    function_ref<void(ValueRange, Value)> body) {
    SmallVector<Value> zeros(outer.size(), e.index(0)),
        ones(outer.size(), e.index(1));
    auto blocks = scf::ParallelOp::create(b, zeros, outer, ones);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(blocks.getBody()->getTerminator());
    auto threads = scf::ParallelOp::create(b, ValueRange{e.index(0)},
                                           ValueRange{inner},
                                           ValueRange{e.index(1)});
    b.setInsertionPoint(threads.getBody()->getTerminator());
    body(blocks.getInductionVars(), threads.getInductionVars()[0]);
  }

  /// The bounds [t0, t1) of chunk n.
  std::pair<Value, Value> chunkBounds(Value n, Value seqLen) {
    Value t0 = e.mulIndex(n, e.index(chunkSize));
    return {t0, e.minIndex(e.addIndex(t0, e.index(chunkSize)), seqLen)};
  }

  /// The cumulative log gate at (b, t, hv[, key]), or 0 without gates.
  Value gateAt(Value gates, Value bIdx, Value t, Value hv, Value key) {
    if (!gates)
      return e.f32(0.0f);
    if (cast<MemRefType>(gates.getType()).getRank() == 4)
      return e.loadF32(gates, {bIdx, t, hv, key});
    return e.loadF32(gates, {bIdx, t, hv});
  }

  /// sum of the chunk totals G_C(m) = G[b, min(C (m + 1), T) - 1, hv] for
  /// m in [m0, m1); 0 without gates.
  Value sumChunkTotals(Value gates, Value bIdx, Value hv, Value m0, Value m1,
                       Value seqLen) {
    if (!gates)
      return e.f32(0.0f);
    return sumRange(m0, m1, [&](Value m) {
      Value t1 = e.minIndex(e.mulIndex(e.addIndex(m, e.index(1)), e.index(chunkSize)),
                            seqLen);
      return gateAt(gates, bIdx, e.subIndex(t1, e.index(1)), hv, Value());
    });
  }

  /// sum_i x[.., i] * y[.., i] over i < n, both indexed by `index(i)`.
  Value dot(int64_t n, function_ref<Value(Value)> lhs,
            function_ref<Value(Value)> rhs) {
    return e.forEachReduce(e.index(n), {e.f32(0.0f)},
                           [&](Value i, ValueRange acc) -> SmallVector<Value> {
                             return {e.add(acc[0], e.mul(lhs(i), rhs(i)))};
                           })[0];
  }

  /// sum of term(t) for t in [lb, ub).
  Value sumRange(Value lb, Value ub, function_ref<Value(Value)> term) {
    return e.forRangeReduce(
        lb, ub, {e.f32(0.0f)},
        [&](Value t, ValueRange acc) -> SmallVector<Value> {
          return {e.add(acc[0], term(t))};
        })[0];
  }

  /// dst[i, j, k, l] = round(src[i, j, k, l]) over `sizes`: a 16-bit
  /// result from the fp32 working copy it was computed in.
  void storeRounded(Value src, Value dst, ArrayRef<Value> sizes) {
    e.forEach(sizes[0], [&](Value i) {
      e.forEach(sizes[1], [&](Value j) {
        e.forEach(sizes[2], [&](Value k) {
          e.forEach(sizes[3], [&](Value l) {
            e.storeFromF32(
                memref::LoadOp::create(b, src, ValueRange{i, j, k, l}), dst,
                {i, j, k, l});
          });
        });
      });
    });
  }

  /// dst[i, j, k, 0, l] = hi = round(src[i, j, k, l]) and dst[i, j, k, 1,
  /// l] = round(src[i, j, k, l] - hi), for a 16-bit dst: two parts whose sum
  /// holds about 16 significant bits of the fp32 src.
  void storeSplit(Value src, Value dst, ArrayRef<Value> sizes) {
    Type elem = cast<MemRefType>(dst.getType()).getElementType();
    e.forEach(sizes[0], [&](Value i) {
      e.forEach(sizes[1], [&](Value j) {
        e.forEach(sizes[2], [&](Value k) {
          e.forEach(sizes[3], [&](Value l) {
            Value x = memref::LoadOp::create(b, src, ValueRange{i, j, k, l});
            e.storeFromF32(x, dst, {i, j, k, e.index(0), l});
            e.storeFromF32(e.roundingRest(x, elem), dst, {i, j, k, e.index(1), l});
          });
        });
      });
    });
  }

  /// W[b, t, hv, r] in f32, from a plain or a split (hi + lo) W.
  Value loadW(Value w, Value bIdx, Value t, Value hv, Value r) {
    if (cast<MemRefType>(w.getType()).getRank() == 4)
      return e.loadF32(w, {bIdx, t, hv, r});
    return e.add(e.loadF32(w, {bIdx, t, hv, e.index(0), r}),
                 e.loadF32(w, {bIdx, t, hv, e.index(1), r}));
  }

  ImplicitLocOpBuilder b;
  LoopEmitter e;
  int64_t chunkSize;
};

} // namespace mlir::linattn

#endif // LIB_CONVERSION_LINATTNTOLOOPS_CHUNKLOWERING_H
