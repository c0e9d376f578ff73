//===- ChunkCumsumToGPU.cpp - linattn.chunk_cumsum to a kernel --------------===//
//
// Scalar gates: a warp per (chunk, head). Per-key gates: a thread per
// (chunk, head, key), which can also write the keys decayed to their
// chunk's end for the state pass.
//
//===----------------------------------------------------------------------===//

#include "ChunkedLowerings.h"
#include "KernelSupport.h"
#include "Kernel/Gates.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

/// Erases a chunk_cumsum that nothing reads any more, and the constant-gate
/// generator it read once nothing else does (the kernels that read the
/// gates inlined it), so that no host loop materialises it.
void eraseCumsum(ChunkCumsumOp op) {
  auto generator = op.getGate().getDefiningOp<tensor::GenerateOp>();
  op.erase();
  if (generator && generator->use_empty())
    generator->erase();
}

/// The scalar chunk_cumsum that `op`'s UT kernel can compute on the way:
/// the producer of its [B, T, HV] gates when every other reader comes
/// after `op` in its block (the UT kernel runs first, so they may read
/// what it writes). Null otherwise.
ChunkCumsumOp cumsumForUTKernel(UTTransformOp op) {
  auto cumsum = op.getGates() ? op.getGates().getDefiningOp<ChunkCumsumOp>()
                              : nullptr;
  if (!cumsum || cast<ShapedType>(cumsum.getType()).getRank() != 3)
    return nullptr;
  for (Operation *user : cumsum->getUsers())
    if (user != op.getOperation() &&
        (user->getBlock() != op->getBlock() || !op->isBeforeInBlock(user)))
      return nullptr;
  return cumsum;
}

/// The chunk_state_pass that can read decayed keys from `cumsum`'s kernel:
/// it takes the per-key cumsum's G as its gates, unsegmented, in 64-row
/// chunks, and every other reader of G comes after it in its block (the
/// cumsum kernel then runs just before it, where its keys are defined).
/// Null otherwise.
ChunkStatePassOp statePassForDecayedKeys(ChunkCumsumOp cumsum) {
  if (cast<ShapedType>(cumsum.getType()).getRank() != 4 ||
      cumsum.getChunkSize() != kChunk)
    return nullptr;
  ChunkStatePassOp statePass;
  for (Operation *user : cumsum->getUsers())
    if (auto pass = dyn_cast<ChunkStatePassOp>(user))
      if (pass.getGates() == cumsum.getResult() && !pass.getSegmentChunks() &&
          !pass.getW() && pass.getChunkSize() == kChunk && !statePass)
        statePass = pass;
  if (!statePass)
    return nullptr;
  for (Operation *user : cumsum->getUsers())
    if (user != statePass.getOperation() &&
        (user->getBlock() != statePass->getBlock() ||
         !statePass->isBeforeInBlock(user)))
      return nullptr;
  return statePass;
}

/// Lowers a chunk_cumsum to its kernel; with `decayFor` (per-key gates,
/// statePassForDecayedKeys), the kernel runs just before that state pass
/// and also writes its DecayedKeys into `decayed`.
LogicalResult lowerChunkCumsum(ChunkCumsumOp op, ChunkStatePassOp decayFor,
                               DecayedKeys *decayed) {
  auto type = cast<RankedTensorType>(op.getGate().getType());
  bool perKey = type.getRank() == 4;
  int64_t chunk = op.getChunkSize();
  if (failed(checkChunkGeometry(op, chunk, {},
                                perKey ? "per-key gates" : "")))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), decayFor ? decayFor.getOperation()
                                               : op.getOperation());
  LoopEmitter e(b);
  int64_t numKeys = perKey ? type.getDimSize(3) : 1;
  if (numKeys > 1024)
    return op.emitOpError() << "GPU cumsum runs a thread per key; at most 1024 keys";
  GateReader gate(e, op.getGate());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(gate.size(d));
  Value out = e.allocFor(op.getResult().getType(), sizes);
  Value numChunks = arith::CeilDivUIOp::create(b, sizes[1], e.index(chunk));
  auto finish = [&] {
    op.getResult().replaceAllUsesWith(e.toTensor(out, op.getResult().getType()));
    eraseCumsum(op);
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
    return finish();
  }

  // Per-key gates [B, T, HV, K]: a thread per (chunk, head, key), keys
  // contiguous in memory.
  Value keys, decayedKeys, chunkTotals;
  int64_t numVHeads = type.getDimSize(2), numQKHeads = 0;
  if (decayFor) {
    keys = e.toBuffer(decayFor.getK());
    numQKHeads = dimOf(decayFor.getK(), 2);
    auto keyType = cast<RankedTensorType>(decayFor.getK().getType());
    decayedKeys = e.allocFor(
        RankedTensorType::get(type.getShape(), keyType.getElementType()), sizes);
    chunkTotals = e.allocFor(type, {sizes[0], numChunks, sizes[2], sizes[3]});
  }
  auto launch = gpu::LaunchOp::create(b, numChunks, sizes[2], sizes[0],
                                      e.index(numKeys), e.index(1), e.index(1));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&launch.getBody().front());
    auto terminator = gpu::TerminatorOp::create(b);
    b.setInsertionPoint(terminator);
    Value n = launch.getBlockIds().x, hv = launch.getBlockIds().y;
    Value bIdx = launch.getBlockIds().z, key = launch.getThreadIds().x;
    ChunkRows rows = chunkRows(e, n, sizes[1]);
    // Straight-line code: the chunk's 64 gates are loaded first, all in
    // flight at once (rows past T clamped to the last valid row and
    // counted as 0), then summed and stored. A loop of load, add, store
    // waits a full memory latency per row: the stores may alias the gates
    // as far as the compiler knows, so no load moves above them.
    Value lastRow = e.subIndex(e.addIndex(rows.t0, rows.valid), e.index(1));
    auto index = [&](Value t) { return SmallVector<Value>{bIdx, t, hv, key}; };
    SmallVector<Value> gates, inRange, rowKeys;
    Value h = decayFor ? e.qkHead(hv, numVHeads, numQKHeads) : Value();
    for (int64_t r = 0; r < kChunk; ++r) {
      Value t = e.addIndex(rows.t0, e.index(r));
      Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                          e.index(r), rows.valid);
      inRange.push_back(valid);
      Value clamped = e.minIndex(t, lastRow);
      gates.push_back(gate.read(b, index(clamped)));
      if (decayFor)
        rowKeys.push_back(e.loadF32(keys, {bIdx, clamped, h, key}));
    }
    Value sum = e.f32(0.0f);
    SmallVector<Value> sums;
    for (int64_t r = 0; r < kChunk; ++r) {
      sum = e.add(sum, arith::SelectOp::create(b, inRange[r], gates[r],
                                               e.f32(0.0f)));
      sums.push_back(sum);
      auto store = scf::IfOp::create(b, inRange[r], /*withElseRegion=*/false);
      OpBuilder::InsertionGuard storeGuard(b);
      b.setInsertionPointToStart(store.thenBlock());
      memref::StoreOp::create(
          b, sum, out, index(e.addIndex(rows.t0, e.index(r))));
    }
    if (decayFor) {
      // G_C is the last sum (rows past T add 0); exp(G_C - G_t) <= 1.
      memref::StoreOp::create(b, sum, chunkTotals, ValueRange{bIdx, n, hv, key});
      for (int64_t r = 0; r < kChunk; ++r) {
        auto store = scf::IfOp::create(b, inRange[r], /*withElseRegion=*/false);
        OpBuilder::InsertionGuard storeGuard(b);
        b.setInsertionPointToStart(store.thenBlock());
        e.storeFromF32(e.mul(rowKeys[r], approxExp(b, e.sub(sum, sums[r]))),
                       decayedKeys, index(e.addIndex(rows.t0, e.index(r))));
      }
    }
  }
  if (decayed)
    *decayed = {decayedKeys, chunkTotals};
  return finish();
}

} // namespace mlir::linattn::kernel
