//===- FuseIndependentLaunches.cpp - One launch for independent ones ------===//
//
// Consecutive gpu.launch ops that touch nothing the other writes run as one
// launch over a flat grid: n1 = x1 y1 z1 blocks of the first, then n2 of
// the second, each block recovering its launch's (x, y, z) from its index.
// Each launch in a CUDA graph costs a few microseconds and the tail of its
// grid; the padding of head sizes alone took 11 small ones a call
// (bench/NOTES.md p4, l1). The grid is flat, not (x1 + x2, max y, max z):
// a launch over y = B beside one of y = 1 would add B - 1 idle blocks per
// block of the second (2.1-2.5x slower calls at B = 256, NOTES l1).
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNFUSEINDEPENDENTLAUNCHES
#include "LinAttn/Transforms/Passes.h.inc"

namespace {
using gpu::KernelDim3;

/// A memref a launch body reads or writes from outside it: the root it is a
/// view of and, per dimension of the root, the static range [lo, hi) it
/// covers (nullopt where not known statically).
struct Access {
  Value root;
  SmallVector<std::optional<std::pair<int64_t, int64_t>>> ranges;
  bool write = false;
};

/// `value` traced through view-like ops (subview, cast, reshapes, ...) to
/// its root. A subview taken from the root itself (of the same rank) gives
/// its static ranges; any other view covers the whole root, as far as this
/// knows.
Access traceView(Value value, bool write) {
  Access access{value, {}, write};
  while (auto view = access.root.getDefiningOp<ViewLikeOpInterface>())
    access.root = view.getViewSource();
  auto subview = value.getDefiningOp<memref::SubViewOp>();
  if (!subview || subview.getSource() != access.root ||
      subview.getSourceType().getRank() != subview.getType().getRank())
    return access;
  for (auto [offset, size, stride] :
       llvm::zip(subview.getStaticOffsets(), subview.getStaticSizes(),
                 subview.getStaticStrides())) {
    if (ShapedType::isDynamic(offset) || ShapedType::isDynamic(size) ||
        stride != 1) {
      access.ranges.push_back(std::nullopt);
      continue;
    }
    access.ranges.push_back(std::make_pair(offset, offset + size));
  }
  return access;
}

bool isAllocation(Value v) {
  return v.getDefiningOp<memref::AllocOp>() || v.getDefiningOp<gpu::AllocOp>();
}

bool isFunctionArgument(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
}

/// Whether two roots may be the same memory. Distinct only where both are
/// allocations (different ones), or one is an allocation and the other an
/// argument of the function (which an allocation made in it cannot be);
/// two arguments may alias, and any other root (a result of scf.if, of a
/// call) may be anything.
bool mayAlias(Value a, Value b) {
  if (a == b)
    return true;
  if (isAllocation(a) && (isAllocation(b) || isFunctionArgument(b)))
    return false;
  if (isAllocation(b) && isFunctionArgument(a))
    return false;
  return true;
}

/// Whether two accesses may touch a common element.
bool mayOverlap(const Access &a, const Access &b) {
  if (!mayAlias(a.root, b.root))
    return false;
  if (a.root != b.root || a.ranges.empty() || b.ranges.empty())
    return true;
  for (auto [ra, rb] : llvm::zip(a.ranges, b.ranges))
    if (ra && rb && (ra->second <= rb->first || rb->second <= ra->first))
      return false;
  return true;
}

/// Every memref from outside `launch` that its body reads or writes, or
/// nullopt if some op's effects are not known.
std::optional<SmallVector<Access>> accessesOf(gpu::LaunchOp launch) {
  SmallVector<Access> accesses;
  Region &body = launch.getBody();
  WalkResult walk = body.walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const MemoryEffects::EffectInstance &effect : effects) {
      bool read = isa<MemoryEffects::Read>(effect.getEffect());
      bool write = isa<MemoryEffects::Write>(effect.getEffect());
      if (!read && !write)
        continue; // allocations and frees of the body's own
      Value value = effect.getValue();
      if (!value)
        return WalkResult::interrupt();
      if (body.isAncestor(value.getParentRegion()))
        continue; // the body's own memory
      accesses.push_back(traceView(value, write));
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return std::nullopt;
  return accesses;
}

bool sameConstant(Value a, Value b) {
  APInt x, y;
  return matchPattern(a, m_ConstantInt(&x)) &&
         matchPattern(b, m_ConstantInt(&y)) && x == y;
}

/// Whether `launch` can take part in a fusion at all. Its body must see
/// its block ids and grid through the launch's arguments (which the fusion
/// rewrites): ops that read them from the hardware would see the fused
/// grid's.
bool isFusable(gpu::LaunchOp launch) {
  if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
      launch.getDynamicSharedMemorySize() || launch.hasClusterSize() ||
      !launch.getWorkgroupAttributions().empty() ||
      !launch.getPrivateAttributions().empty() || launch.getModuleAttr() ||
      launch.getFunctionAttr() || !launch.getBody().hasOneBlock())
    return false;
  WalkResult gridQueries = launch.getBody().walk([](Operation *op) {
    return isa<gpu::BlockIdOp, gpu::GridDimOp, gpu::GlobalIdOp,
               gpu::ClusterIdOp, gpu::ClusterDimOp, gpu::ClusterDimBlocksOp,
               gpu::ClusterBlockIdOp>(op)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return !gridQueries.wasInterrupted();
}

/// Whether `first` may run together with `second`, the next launch after
/// it in its block: same block size, only pure ops, allocations and waits
/// between them, and no access of one overlapping a write of the other.
bool canFuse(gpu::LaunchOp first, gpu::LaunchOp second) {
  if (!isFusable(first) || !isFusable(second))
    return false;
  KernelDim3 a = first.getBlockSizeOperandValues(),
             b = second.getBlockSizeOperandValues();
  if (!sameConstant(a.x, b.x) || !sameConstant(a.y, b.y) ||
      !sameConstant(a.z, b.z))
    return false;
  for (Operation *op = first->getNextNode(); op != second;
       op = op->getNextNode()) {
    if (isMemoryEffectFree(op) ||
        isa<memref::AllocOp, gpu::AllocOp, gpu::WaitOp>(op))
      continue;
    return false;
  }
  std::optional<SmallVector<Access>> x = accessesOf(first),
                                     y = accessesOf(second);
  if (!x || !y)
    return false;
  for (const Access &p : *x)
    for (const Access &q : *y)
      if ((p.write || q.write) && mayOverlap(p, q))
        return false;
  return true;
}

/// `launch`'s body moved under `condition` before `into`'s terminator, its
/// block ids those `idsOf` builds in the branch, its grid size its own
/// operands.
void inlineBodyUnder(RewriterBase &rewriter, Location loc, Value condition,
                     gpu::LaunchOp launch, gpu::LaunchOp into,
                     function_ref<KernelDim3()> idsOf) {
  auto branch = scf::IfOp::create(rewriter, loc, condition,
                                  /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(branch.thenBlock());
  KernelDim3 ids = idsOf();
  Block &body = launch.getBody().front();
  KernelDim3 threads = into.getThreadIds(), blockSize = into.getBlockSize(),
             grid = launch.getGridSizeOperandValues();
  SmallVector<Value> args = {ids.x,     ids.y,       ids.z,       threads.x,
                             threads.y, threads.z,   grid.x,      grid.y,
                             grid.z,    blockSize.x, blockSize.y, blockSize.z};
  Operation *yield = branch.thenBlock()->getTerminator();
  rewriter.inlineBlockBefore(&body, yield, args);
  // The body's gpu.terminator, now before the scf.yield.
  rewriter.eraseOp(yield->getPrevNode());
}

/// Blocks of a launch over `grid`: x y z (x alone where y = z = 1).
Value blockCount(RewriterBase &rewriter, Location loc, const KernelDim3 &grid) {
  Value n = grid.x;
  for (Value d : {grid.y, grid.z})
    if (!matchPattern(d, m_One()))
      n = arith::MulIOp::create(rewriter, loc, n, d);
  return n;
}

/// The (x, y, z) of flat block index `i` in a launch over `grid`:
/// x = i mod gx, y = (i / gx) mod gy, z = i / (gx gy).
KernelDim3 blockIdsOf(RewriterBase &rewriter, Location loc, Value i,
                      const KernelDim3 &grid, Value zero) {
  if (matchPattern(grid.y, m_One()) && matchPattern(grid.z, m_One()))
    return {i, zero, zero};
  Value x = arith::RemUIOp::create(rewriter, loc, i, grid.x);
  Value rest = arith::DivUIOp::create(rewriter, loc, i, grid.x);
  if (matchPattern(grid.z, m_One()))
    return {x, rest, zero};
  Value y = arith::RemUIOp::create(rewriter, loc, rest, grid.y);
  Value z = arith::DivUIOp::create(rewriter, loc, rest, grid.y);
  return {x, y, z};
}

/// One launch running `first`'s blocks, then `second`'s, at `second`.
gpu::LaunchOp fuse(RewriterBase &rewriter, gpu::LaunchOp first,
                   gpu::LaunchOp second) {
  Location loc = rewriter.getFusedLoc({first.getLoc(), second.getLoc()});
  rewriter.setInsertionPoint(second);
  KernelDim3 g1 = first.getGridSizeOperandValues(),
             g2 = second.getGridSizeOperandValues(),
             block = second.getBlockSizeOperandValues();
  Value n1 = blockCount(rewriter, loc, g1);
  Value n = arith::AddIOp::create(rewriter, loc, n1,
                                  blockCount(rewriter, loc, g2));
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto fused = gpu::LaunchOp::create(rewriter, loc, n, one, one, block.x,
                                     block.y, block.z);
  Block &body = fused.getBody().front();
  rewriter.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(rewriter, loc);
  rewriter.setInsertionPoint(terminator);
  Value i = fused.getBlockIds().x;
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value inFirst =
      arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, i, n1);
  inlineBodyUnder(rewriter, loc, inFirst, first, fused,
                  [&] { return blockIdsOf(rewriter, loc, i, g1, zero); });
  Value inSecond =
      arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::uge, i, n1);
  inlineBodyUnder(rewriter, loc, inSecond, second, fused, [&] {
    Value j = arith::SubIOp::create(rewriter, loc, i, n1);
    return blockIdsOf(rewriter, loc, j, g2, zero);
  });
  rewriter.eraseOp(first);
  rewriter.eraseOp(second);
  return fused;
}

struct LinAttnFuseIndependentLaunches
    : impl::LinAttnFuseIndependentLaunchesBase<
          LinAttnFuseIndependentLaunches> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Host blocks only (a launch body holds no launch); nested blocks come
    // first, so a body moved by a fusion is never visited after it.
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) {
      if (!block->getParentOp()->getParentOfType<gpu::LaunchOp>() &&
          !isa<gpu::LaunchOp>(block->getParentOp()))
        blocks.push_back(block);
    });
    for (Block *block : blocks) {
      gpu::LaunchOp previous;
      for (Operation &op : llvm::make_early_inc_range(*block)) {
        auto launch = dyn_cast<gpu::LaunchOp>(op);
        if (!launch)
          continue;
        if (previous && canFuse(previous, launch))
          launch = fuse(rewriter, previous, launch);
        previous = launch;
      }
    }
  }
};

} // namespace
} // namespace mlir::linattn
