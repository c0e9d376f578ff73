//===- LinalgToGPU.cpp - Host linalg ops on buffers to mapped loops -------===//
//
// The scan forms leave linalg ops on the host once bufferized: the outer
// products k_t v_t^T a token scan folds, the contraction o_t = S_t^T q_t,
// fills, casts, a tensor.generate's linalg.map. Each becomes the
// upstream scf.parallel nest over its parallel dimensions (reductions stay
// sequential inside, in order), collapsed into one dimension and tiled by
// 256: the tiles are blocks, their elements threads
// (convert-linattn-to-gpu then makes them kernels). One thread per output
// element; consecutive threads take consecutive elements of the innermost
// dimension, so their accesses coalesce.
//
// Departures from one thread per element, for copies' sake (the padding
// of head sizes, bench/NOTES.md p3, where these kernels were bound by
// instruction issue): a leading dimension before a dynamic one (B before
// T) is the grid's y, so that recovering the other indices from the
// collapsed one divides by constants (the outermost of the collapsed
// sizes is never a divisor), not by the run-time T in 64 bits; and a body
// of loads, stores and arithmetic runs eight elements a thread, 256
// apart, their loads before their stores. A copy or fill of whole rows
// (the padding of head sizes is one, bench/NOTES.md p4) moves 16 bytes
// an access: vector loads and stores of a row's 16-byte pieces.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Conversion/Passes.h"

#include "KernelUtils.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <numeric>

namespace mlir::linattn {
#define GEN_PASS_DEF_CONVERTLINATTNLINALGTOGPU
#include "LinAttn/Conversion/Passes.h.inc"

namespace {

constexpr int64_t kThreadsPerBlock = 256;
/// The most blocks a grid's y dimension launches (CUDA's limit).
constexpr int64_t kMaxGridY = 65535;
/// Elements a thread takes of a straight-line body, kThreadsPerBlock
/// apart: their loads issue before any of their stores, so each thread
/// has that many loads in flight (one 2-byte load per thread keeps ~0.5
/// MB in flight on the whole GPU: ~0.5 TB/s at DRAM's latency).
constexpr int64_t kElementsPerThread = 8;

/// Whether `body` is loads, stores and ops without regions or memory
/// effects, so that several of its iterations can run as all their loads
/// and arithmetic, then all their stores (a parallel loop's iterations
/// touch disjoint elements).
bool isStraightLine(Block &body) {
  return llvm::all_of(body.without_terminator(), [](Operation &op) {
    return op.getNumRegions() == 0 &&
           (isa<memref::LoadOp, memref::StoreOp, vector::LoadOp,
                vector::StoreOp>(op) ||
            isMemoryEffectFree(&op));
  });
}

bool isStore(Operation &op) { return isa<memref::StoreOp, vector::StoreOp>(op); }

/// A thread's elements of a loop body: base + j kThreadsPerBlock for j <
/// perThread, of the collapsed loop `iv` (and `batchIv` the leading loop
/// walked by `walkIv`, if any).
struct ThreadElements {
  Block &body;
  Value iv, batchIv, walkIv, base, count;
  int64_t perThread;

  /// Clones the body for every element at the insertion point, all loads
  /// and arithmetic first, then the stores: each element's stores only
  /// below count, and (of several) its loads at the index clamped to
  /// count - 1, in bounds (the values of an element outside are never
  /// stored).
  void emit(RewriterBase &rewriter, Location loc) {
    SmallVector<IRMapping> mappings(perThread);
    SmallVector<Value> inside(perThread);
    Value last;
    if (perThread > 1)
      last = arith::SubIOp::create(
          rewriter, loc, count, arith::ConstantIndexOp::create(rewriter, loc, 1));
    for (int64_t j = 0; j < perThread; ++j) {
      Value element =
          j == 0 ? base
                 : arith::AddIOp::create(
                       rewriter, loc, base,
                       arith::ConstantIndexOp::create(rewriter, loc,
                                                      j * kThreadsPerBlock))
                       .getResult();
      if (batchIv)
        mappings[j].map(batchIv, walkIv);
      inside[j] = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, element, count);
      if (perThread == 1) {
        mappings[j].map(iv, element);
        continue;
      }
      mappings[j].map(iv, arith::MinUIOp::create(rewriter, loc, element, last));
      for (Operation &op : body.without_terminator())
        if (!isStore(op))
          rewriter.clone(op, mappings[j]);
    }
    for (int64_t j = 0; j < perThread; ++j) {
      OpBuilder::InsertionGuard guard(rewriter);
      auto kept = scf::IfOp::create(rewriter, loc, inside[j]);
      rewriter.setInsertionPoint(kept.thenBlock()->getTerminator());
      for (Operation &op : body.without_terminator())
        if (perThread == 1 || isStore(op))
          rewriter.clone(op, mappings[j]);
    }
  }
};

/// The parallel loop `op` (loops from 0 by 1, as linalg's are) becomes
/// blocks of kThreadsPerBlock threads over its loops collapsed into one,
/// each thread taking kElementsPerThread elements of a straight-line body
/// (one otherwise). A first loop followed by one of dynamic bound (B
/// before T) stays apart, on the grid's y: min(N, kMaxGridY) blocks, block
/// y walking n = y, y + kMaxGridY, ... < N.
LogicalResult mapToBlocksAndThreads(RewriterBase &rewriter,
                                    scf::ParallelOp op) {
  unsigned numLoops = op.getNumLoops();
  // The outermost of the collapsed loops is the only one whose bound
  // recovering the indices does not divide by: a first loop whose
  // neighbour's bound is dynamic (B before T) stays apart.
  bool leadingOnGridY =
      numLoops > 1 && !getConstantIntValue(op.getUpperBound()[1]);
  unsigned first = leadingOnGridY ? 1 : 0;
  if (numLoops - first > 1) {
    Operation *after = op->getNextNode();
    std::vector<unsigned> collapsed(numLoops - first);
    std::iota(collapsed.begin(), collapsed.end(), first);
    SmallVector<std::vector<unsigned>> groups;
    if (leadingOnGridY)
      groups.push_back({0});
    groups.push_back(collapsed);
    rewriter.setInsertionPoint(op);
    collapseParallelLoops(rewriter, op, groups);
    op = cast<scf::ParallelOp>(after->getPrevNode());
  }
  int64_t perThread = isStraightLine(*op.getBody()) ? kElementsPerThread : 1;

  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  Value zero = index(0), one = index(1);
  Value count = op.getUpperBound()[first];
  Value tile = index(kThreadsPerBlock * perThread);
  SmallVector<Value> blockBounds, threadBounds;
  Value batch, maxY;
  if (leadingOnGridY) {
    batch = op.getUpperBound()[0];
    maxY = index(kMaxGridY);
    blockBounds.push_back(arith::MinUIOp::create(rewriter, loc, batch, maxY));
    threadBounds.push_back(one);
  }
  blockBounds.push_back(arith::CeilDivUIOp::create(rewriter, loc, count, tile));
  threadBounds.push_back(index(kThreadsPerBlock));
  SmallVector<Value> zeros(blockBounds.size(), zero),
      ones(blockBounds.size(), one);
  auto blocks = scf::ParallelOp::create(rewriter, loc, zeros, blockBounds, ones);
  rewriter.setInsertionPointToStart(blocks.getBody());
  auto threads =
      scf::ParallelOp::create(rewriter, loc, zeros, threadBounds, ones);
  rewriter.setInsertionPointToStart(threads.getBody());
  SmallVector<Value> blockIds(blocks.getInductionVars()),
      threadIds(threads.getInductionVars());
  Value base = arith::AddIOp::create(
      rewriter, loc,
      arith::MulIOp::create(rewriter, loc, blockIds[first], tile),
      threadIds[first]);
  Value walkIv;
  if (leadingOnGridY) {
    auto walk = scf::ForOp::create(rewriter, loc, blockIds[0], batch, maxY);
    rewriter.setInsertionPoint(walk.getBody()->getTerminator());
    walkIv = walk.getInductionVar();
  }

  Block &body = *op.getBody();
  SmallVector<Value> ivs(op.getInductionVars());
  ThreadElements elements{body,
                          ivs[first],
                          leadingOnGridY ? ivs[0] : Value(),
                          walkIv,
                          base,
                          count,
                          perThread};
  elements.emit(rewriter, loc);
  rewriter.eraseOp(op);

  MLIRContext *ctx = rewriter.getContext();
  auto identity = AffineMap::getMultiDimIdentityMap(1, ctx);
  auto dimension = [&](gpu::Processor processor) {
    return gpu::ParallelLoopDimMappingAttr::get(ctx, processor, identity,
                                                identity);
  };
  SmallVector<gpu::ParallelLoopDimMappingAttr> blockDims, threadDims;
  if (leadingOnGridY) {
    blockDims.push_back(dimension(gpu::Processor::BlockY));
    threadDims.push_back(dimension(gpu::Processor::Sequential));
  }
  blockDims.push_back(dimension(gpu::Processor::BlockX));
  threadDims.push_back(dimension(gpu::Processor::ThreadX));
  if (failed(gpu::setMappingAttr(blocks, blockDims)) ||
      failed(gpu::setMappingAttr(threads, threadDims)))
    return failure();
  return success();
}

/// Bytes of a row access: the widest global load and store a thread
/// issues (ld.global.v4.b32).
constexpr int64_t kRowAccessBytes = 16;
static_assert(kArgumentAlignmentBytes % kRowAccessBytes == 0,
              "an argument's rows start on an access boundary");

/// Elements of `type` in a row access, where its rows can be accessed so:
/// unit innermost stride, a static innermost size that is a multiple of
/// the access, and every row starting on an access boundary. That is a
/// static offset and static strides in multiples of kRowAccessBytes, and
/// a dynamic stride only outside such a static one (the row-major buffers
/// here, allocations, the ABI's dense arguments and their subviews, have
/// each stride a multiple of the next). The buffer's start is taken to be
/// 16-byte aligned: allocations are, and arguments are checked to be
/// (kArgumentAlignmentBytes), as the kernels' cp.async loads need.
std::optional<int64_t> rowAccessWidth(MemRefType type) {
  Type elem = type.getElementType();
  int64_t rank = type.getRank();
  if (rank == 0 || !elem.isIntOrFloat())
    return std::nullopt;
  int64_t bits = elem.getIntOrFloatBitWidth();
  if (bits % 8 != 0 || (kRowAccessBytes * 8) % bits != 0)
    return std::nullopt;
  int64_t bytes = bits / 8, width = kRowAccessBytes / bytes;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return std::nullopt;
  int64_t inner = type.getDimSize(rank - 1);
  if (strides[rank - 1] != 1 || ShapedType::isDynamic(inner) ||
      inner % width != 0 || ShapedType::isDynamic(offset) ||
      (offset * bytes) % kRowAccessBytes != 0)
    return std::nullopt;
  bool staticInside = false;
  for (int64_t d = rank - 2; d >= 0; --d) {
    if (ShapedType::isDynamic(strides[d])) {
      if (!staticInside)
        return std::nullopt;
      continue;
    }
    if ((strides[d] * bytes) % kRowAccessBytes != 0)
      return std::nullopt;
    staticInside = true;
  }
  return width;
}

/// `op` as a parallel loop over its rows' kRowAccessBytes pieces, one
/// vector load (a broadcast, for a fill) and store each, where it is a
/// linalg.copy or linalg.fill whose buffers rowAccessWidth admits alike;
/// else null. out[i..., j w : j w + w] = in[i..., j w : j w + w].
scf::ParallelOp rowAccessLoop(RewriterBase &rewriter, linalg::LinalgOp op) {
  Value source, fillValue;
  if (auto copy = dyn_cast<linalg::CopyOp>(op.getOperation()))
    source = copy.getInputs()[0];
  else if (auto fill = dyn_cast<linalg::FillOp>(op.getOperation()))
    fillValue = fill.value();
  else
    return {};
  Value target = op.getDpsInitOperand(0)->get();
  auto targetType = cast<MemRefType>(target.getType());
  std::optional<int64_t> width = rowAccessWidth(targetType);
  if (!width)
    return {};
  if (source) {
    auto sourceType = dyn_cast<MemRefType>(source.getType());
    if (!sourceType ||
        sourceType.getElementType() != targetType.getElementType() ||
        rowAccessWidth(sourceType) != width)
      return {};
  }
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  int64_t rank = targetType.getRank();
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  SmallVector<Value> lower(rank, zero), upper, steps(rank, one);
  for (int64_t d = 0; d + 1 < rank; ++d)
    upper.push_back(
        targetType.isDynamicDim(d)
            ? memref::DimOp::create(rewriter, loc, target, d).getResult()
            : arith::ConstantIndexOp::create(rewriter, loc,
                                             targetType.getDimSize(d))
                  .getResult());
  upper.push_back(arith::ConstantIndexOp::create(
      rewriter, loc, targetType.getDimSize(rank - 1) / *width));
  auto loop = scf::ParallelOp::create(rewriter, loc, lower, upper, steps);
  rewriter.setInsertionPointToStart(loop.getBody());
  SmallVector<Value> indices(loop.getInductionVars());
  indices.back() = arith::MulIOp::create(
      rewriter, loc, indices.back(),
      arith::ConstantIndexOp::create(rewriter, loc, *width));
  auto pieceType = VectorType::get({*width}, targetType.getElementType());
  llvm::MaybeAlign aligned(kRowAccessBytes);
  Value piece =
      source ? vector::LoadOp::create(rewriter, loc, pieceType, source, indices,
                                      /*nontemporal=*/false, aligned)
                   .getResult()
             : vector::BroadcastOp::create(rewriter, loc, pieceType, fillValue)
                   .getResult();
  vector::StoreOp::create(rewriter, loc, piece, target, indices,
                          /*nontemporal=*/false, aligned);
  return loop;
}

struct ConvertLinAttnLinalgToGPU
    : impl::ConvertLinAttnLinalgToGPUBase<ConvertLinAttnLinalgToGPU> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> ops;
    getOperation()->walk([&](linalg::LinalgOp op) {
      if (!insideKernel(op) && op.hasPureBufferSemantics())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops) {
      if (scf::ParallelOp rows = rowAccessLoop(rewriter, op)) {
        rewriter.eraseOp(op);
        if (failed(mapToBlocksAndThreads(rewriter, rows))) {
          rows.emitOpError() << "could not be mapped to GPU blocks and threads";
          return signalPassFailure();
        }
        ++numMapped;
        continue;
      }
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::LinalgLoops> loops =
          linalg::linalgOpToParallelLoops(rewriter, op);
      if (failed(loops)) {
        op->emitOpError() << "could not be lowered to parallel loops for the GPU";
        return signalPassFailure();
      }
      rewriter.eraseOp(op);
      auto parallel = loops->empty()
                          ? scf::ParallelOp()
                          : dyn_cast<scf::ParallelOp>(loops->front());
      if (!parallel) {
        // A zero-dimensional op, or one whose outermost loop is a reduction:
        // one thread walks it.
        if (loops->empty())
          continue;
        OpBuilder b(loops->front());
        Location loc = loops->front()->getLoc();
        Value zero = arith::ConstantIndexOp::create(b, loc, 0);
        Value one = arith::ConstantIndexOp::create(b, loc, 1);
        parallel = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                           ValueRange{one}, ValueRange{one});
        loops->front()->moveBefore(parallel.getBody()->getTerminator());
      }
      if (failed(mapToBlocksAndThreads(rewriter, parallel))) {
        parallel.emitOpError() << "could not be mapped to GPU blocks and threads";
        return signalPassFailure();
      }
      ++numMapped;
    }
  }
};

} // namespace
} // namespace mlir::linattn
