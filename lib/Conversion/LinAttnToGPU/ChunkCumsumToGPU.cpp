//===- ChunkCumsumToGPU.cpp - linattn.chunk_cumsum to a kernel --------------===//
//
// Scalar gates: a warp per (chunk, head). Per-key gates: four threads per
// (chunk, head, key), 16 rows each, which can also write the keys decayed
// to their chunk's end for the state pass.
//
//===----------------------------------------------------------------------===//

#include "ChunkedToGPUPatterns.h"
#include "KernelSupport.h"
#include "Kernel/Gates.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

namespace {

/// G_t = sum of g_s over s in [start of t's chunk, t]; with keys (per-key
/// gates) also the decayed keys K'_t = k_t exp(G_C - G_t) and the chunk
/// totals G_C.
LogicalResult lowerChunkCumsum(ChunkCumsumOp op, RewriterBase &rewriter) {
  auto type = cast<RankedTensorType>(op.getGate().getType());
  bool perKey = type.getRank() == 4;
  int64_t chunk = op.getChunkSize();
  if (failed(checkChunkGeometry(op, chunk, {},
                                perKey ? "per-key gates" : "")))
    return failure();
  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  LoopEmitter e(b);
  int64_t numKeys = perKey ? type.getDimSize(3) : 1;
  if (numKeys > 256)
    return op.emitOpError() << "GPU cumsum runs four threads per key; at most 256 keys";
  GateReader gate(e, op.getGate());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(gate.size(d));
  Value out = e.allocFor(op.getResult().getType(), sizes);
  Value numChunks = arith::CeilDivUIOp::create(b, sizes[1], e.index(chunk));
  // A constant-gate generator the kernel inlined (GateReader) is left to
  // nothing else once the cumsum is gone: erased, no host loop fills it.
  auto generator = op.getGate().getDefiningOp<tensor::GenerateOp>();
  auto finish = [&](ArrayRef<Value> buffers) {
    e.replaceWithBuffers(rewriter, op, buffers);
    if (generator && generator->use_empty())
      rewriter.eraseOp(generator);
    return success();
  };

  if (!perKey) {
    // Scalar gates [B, T, HV]: a warp per (chunk, head), up to 8 heads per
    // block (their gates share 32-byte sectors), by warpChunkCumsum.
    int64_t headsPerBlock = type.isDynamicDim(2)
                                ? 8
                                : std::clamp<int64_t>(type.getDimSize(2), 1, 8);
    Value headBlocks =
        arith::CeilDivUIOp::create(b, sizes[2], e.index(headsPerBlock));
    emitLaunch(b, {numChunks, headBlocks, sizes[0]}, /*smemBytes=*/0,
               [&](KernelEmitter &k) {
      Block *body = b.getInsertionBlock();
      Value n = body->getArgument(0), bIdx = body->getArgument(2);
      Value hv = e.addIndex(e.mulIndex(body->getArgument(1), e.index(headsPerBlock)),
                            k.warp);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(hv, sizes[2]), false).thenBlock());
      ChunkRows rows = chunkRows(e, n, sizes[1], chunk);
      storeChunkCumsum(k, warpChunkCumsum(k, gate, bIdx, rows, hv, chunk), out,
                       Value(), bIdx, rows, hv);
    }, 32 * headsPerBlock);
    return finish({out});
  }

  // Per-key gates [B, T, HV, K]: kParts threads per (chunk, head, key),
  // keys contiguous in memory; thread part * K + key takes the chunk's
  // rows [16 part, 16 part + 16), so that its gates, keys and sums fit
  // its registers without spills (a thread per key held 192 values;
  // bench/NOTES.md k2).
  Value keys, decayedKeys, chunkTotals;
  int64_t numVHeads = type.getDimSize(2), numQKHeads = 0;
  bool decay = op.getKeys() != nullptr;
  if (decay) {
    keys = e.toBuffer(op.getKeys());
    numQKHeads = dimOf(op.getKeys(), 2);
    decayedKeys = e.allocFor(op.getDecayedKeys().getType(), sizes);
    chunkTotals = e.allocFor(op.getChunkTotals().getType(),
                             {sizes[0], numChunks, sizes[2], sizes[3]});
  }
  constexpr int64_t kParts = 4, kPartRows = kChunk / kParts;
  // Shared: the parts' totals, [kParts][K].
  emitLaunch(b, {numChunks, sizes[2], sizes[0]}, kParts * numKeys * 4,
             [&](KernelEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value n = body->getArgument(0), hv = body->getArgument(1);
    Value bIdx = body->getArgument(2);
    Value key = arith::RemUIOp::create(b, k.tid, e.index(numKeys));
    Value part = arith::DivUIOp::create(b, k.tid, e.index(numKeys));
    Value partTotals = k.tile(0, kParts, numKeys, b.getF32Type());
    ChunkRows rows = chunkRows(e, n, sizes[1]);
    // The thread's rows r0 + i, i < 16; valid below rows.valid.
    Value r0 = e.mulIndex(part, e.index(kPartRows));
    // Straight-line code: the part's 16 gates are loaded first, all in
    // flight at once (rows past T clamped to the last valid row and
    // counted as 0), then summed and stored. A loop of load, add, store
    // waits a full memory latency per row: the stores may alias the gates
    // as far as the compiler knows, so no load moves above them.
    Value lastRow = e.subIndex(e.addIndex(rows.t0, rows.valid), e.index(1));
    auto index = [&](Value t) { return SmallVector<Value>{bIdx, t, hv, key}; };
    SmallVector<Value> gates, inRange, rowKeys, rowIdx;
    Value h = decay ? e.qkHead(hv, numVHeads, numQKHeads) : Value();
    for (int64_t i = 0; i < kPartRows; ++i) {
      Value r = e.addIndex(r0, e.index(i));
      rowIdx.push_back(e.addIndex(rows.t0, r));
      inRange.push_back(k.ult(r, rows.valid));
      Value clamped = e.minIndex(rowIdx.back(), lastRow);
      gates.push_back(gate.read(b, index(clamped)));
      if (decay)
        rowKeys.push_back(e.loadF32(keys, {bIdx, clamped, h, key}));
    }
    Value sum = e.f32(0.0f);
    SmallVector<Value> sums;
    for (int64_t i = 0; i < kPartRows; ++i) {
      sum = e.add(sum, k.select(inRange[i], gates[i], e.f32(0.0f)));
      sums.push_back(sum);
    }
    // G_t = (the earlier parts' totals) + the part's own prefix sum; G_C
    // is every part's total (rows past T add 0).
    memref::StoreOp::create(b, sum, partTotals, ValueRange{part, key});
    k.barrier();
    Value offset = e.f32(0.0f), total = e.f32(0.0f);
    for (int64_t p = 0; p < kParts; ++p) {
      Value x = memref::LoadOp::create(b, partTotals, ValueRange{e.index(p), key});
      total = e.add(total, x);
      if (p + 1 < kParts)
        offset = e.add(offset, k.select(k.ult(e.index(p), part), x, e.f32(0.0f)));
    }
    for (int64_t i = 0; i < kPartRows; ++i) {
      sums[i] = e.add(offset, sums[i]);
      auto store = scf::IfOp::create(b, inRange[i], /*withElseRegion=*/false);
      OpBuilder::InsertionGuard storeGuard(b);
      b.setInsertionPointToStart(store.thenBlock());
      memref::StoreOp::create(b, sums[i], out, index(rowIdx[i]));
    }
    if (decay) {
      // exp(G_C - G_t) <= 1. Part 0's threads store G_C.
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(
            scf::IfOp::create(b, k.ult(part, e.index(1)), false).thenBlock());
        memref::StoreOp::create(b, total, chunkTotals,
                                ValueRange{bIdx, n, hv, key});
      }
      for (int64_t i = 0; i < kPartRows; ++i) {
        auto store = scf::IfOp::create(b, inRange[i], /*withElseRegion=*/false);
        OpBuilder::InsertionGuard storeGuard(b);
        b.setInsertionPointToStart(store.thenBlock());
        e.storeFromF32(e.mul(rowKeys[i], approxExp(b, e.sub(total, sums[i]))),
                       decayedKeys, index(rowIdx[i]));
      }
    }
  }, kParts * numKeys);
  if (decay)
    return finish({out, decayedKeys, chunkTotals});
  return finish({out});
}

struct ChunkCumsumToGPU : OpRewritePattern<ChunkCumsumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ChunkCumsumOp op,
                                PatternRewriter &rewriter) const override {
    return lowerChunkCumsum(op, rewriter);
  }
};

} // namespace

void populateChunkCumsumToGPUPatterns(RewritePatternSet &patterns,
                                      const ChunkedLoweringContext &) {
  patterns.add<ChunkCumsumToGPU>(patterns.getContext());
}

} // namespace mlir::linattn::kernel
