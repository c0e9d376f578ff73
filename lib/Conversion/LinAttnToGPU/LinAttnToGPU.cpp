//===- LinAttnToGPU.cpp - Lowered LinAttn algorithms to GPU kernels -------===//
//
// After convert-linattn-to-loops, gpu-map-parallel-loops and bufferization,
// an algorithm is host code around mapped scf.parallel nests. This pass
// makes the nests kernels (gpu.launch) and the buffers device memory, and
// refuses host code that would touch device memory directly.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Conversion/Passes.h"

#include "KernelUtils.h"

#include "mlir/Conversion/SCFToGPU/SCFToGPU.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_CONVERTLINATTNTOGPU
#include "LinAttn/Conversion/Passes.h.inc"

namespace {

/// Whether `a` and `b` are the same memory: one value, or subviews with the
/// same operands and attributes of the same view.
bool isSameView(Value a, Value b) {
  if (a == b)
    return true;
  auto subA = a.getDefiningOp<memref::SubViewOp>();
  auto subB = b.getDefiningOp<memref::SubViewOp>();
  if (!subA || !subB || !isSameView(subA.getSource(), subB.getSource()))
    return false;
  return OperationEquivalence::isEquivalentTo(
      subA, subB,
      [](Value x, Value y) {
        return success(x == y || isSameView(x, y));
      },
      /*markEquivalent=*/nullptr, OperationEquivalence::IgnoreLocations);
}

/// Whether result `i` of `ifOp` owns its buffer: every branch yields there
/// a buffer allocated in that branch (or an owning result of an scf.if of
/// that branch), so that freeing the result frees whichever ran.
bool ownsBuffer(scf::IfOp ifOp, unsigned i) {
  for (Region *region : {&ifOp.getThenRegion(), &ifOp.getElseRegion()}) {
    if (region->empty())
      return false;
    Block &branch = region->front();
    Value v = branch.getTerminator()->getOperand(i);
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != &branch)
      return false;
    if (isa<memref::AllocOp>(def))
      continue;
    auto inner = dyn_cast<scf::IfOp>(def);
    if (!inner || !ownsBuffer(inner, cast<OpResult>(v).getResultNumber()))
      return false;
  }
  return true;
}

/// The memory `v` is: `v`, or for a result of an scf.if whose branches
/// both yield the same memory there (see through nested ifs), that memory.
Value sameBufferOf(Value v) {
  auto ifOp = v.getDefiningOp<scf::IfOp>();
  if (!ifOp || ifOp.getElseRegion().empty())
    return v;
  unsigned i = cast<OpResult>(v).getResultNumber();
  Value then = sameBufferOf(ifOp.thenYield().getOperand(i));
  Value other = sameBufferOf(ifOp.elseYield().getOperand(i));
  return isSameView(then, other) ? then : v;
}

/// Whether every branch of `ifOp` yields `buffer`'s memory as result `i`:
/// the result is then that memory whichever ran, e.g. a state pass whose
/// new values are its input u, under run-time choices of blocks.
bool yieldsSameBuffer(scf::IfOp ifOp, unsigned i, Value buffer) {
  if (ifOp.getElseRegion().empty())
    return false;
  return isSameView(sameBufferOf(ifOp.getResult(i)), sameBufferOf(buffer));
}

/// Frees `owner` (an allocation, or an scf.if result that owns its
/// buffer) unless the function returns it: a `memref.dealloc` after the
/// last op of its block that uses it or a view of it (a kernel using it
/// counts as one use, at its launch). Yielded out of an scf.if whose
/// result owns it, the result is freed instead (the caller's walk reaches
/// it); yielded by every branch of one, the result is one more view of it;
/// yielded out of one that does not own it otherwise, it must be returned.
LogicalResult freeUnlessReturned(func::FuncOp func, Value owner) {
  Block *block = owner.getParentBlock();
  Operation *last = owner.getDefiningOp();
  bool returned = false, handedOver = false;
  // Yielded out of an scf.if that does not own it: the buffer then lives
  // on as the if's result, which only the function's return may take.
  Operation *yield = nullptr;
  SmallVector<Value> aliases = {owner};
  while (!aliases.empty()) {
    Value alias = aliases.pop_back_val();
    for (OpOperand &use : alias.getUses()) {
      Operation *user = use.getOwner();
      if (isa<func::ReturnOp>(user) && user->getParentOp() == func &&
          (user->getBlock() == block || yield)) {
        returned = true;
        continue;
      }
      if (auto ifOp = dyn_cast<scf::IfOp>(user->getParentOp());
          ifOp && isa<scf::YieldOp>(user) && !insideKernel(user)) {
        if (alias == owner && user->getBlock() == block &&
            ownsBuffer(ifOp, use.getOperandNumber())) {
          handedOver = true; // freed (or returned) as the if's result
          continue;
        }
        if (yieldsSameBuffer(ifOp, use.getOperandNumber(), alias)) {
          // One more view of the buffer (each branch's yield reaches here).
          Value result = ifOp.getResult(use.getOperandNumber());
          if (!llvm::is_contained(aliases, result))
            aliases.push_back(result);
          continue;
        }
        yield = user;
        aliases.push_back(ifOp.getResult(use.getOperandNumber()));
        continue;
      }
      if (user->hasTrait<OpTrait::IsTerminator>() && !insideKernel(user))
        return user->emitOpError()
               << "passes a device buffer out of its region: "
                  "convert-linattn-to-gpu frees only buffers that stay in "
                  "the block that allocates them";
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      if (view && view.getViewSource() == alias)
        llvm::append_range(aliases, user->getResults());
      else if (!insideKernel(user) &&
               llvm::any_of(user->getResultTypes(),
                            llvm::IsaPred<BaseMemRefType>))
        return user->emitOpError()
               << "returns a buffer that may alias a device buffer: "
                  "convert-linattn-to-gpu cannot tell when that buffer "
                  "is last used";
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (ancestor && last->isBeforeInBlock(ancestor))
        last = ancestor;
    }
  }
  if (returned || handedOver)
    return success(); // The caller owns it, or the if's result does.
  if (yield)
    return yield->emitOpError()
           << "passes a device buffer out of an scf.if that the function "
              "does not return and whose other branch yields a buffer it "
              "did not allocate: convert-linattn-to-gpu cannot tell "
              "whether to free it";
  OpBuilder b(func.getContext());
  b.setInsertionPointAfter(last);
  memref::DeallocOp::create(b, owner.getLoc(), owner);
  return success();
}

/// Frees host-allocated buffers that the function does not return, each
/// after its last use (freeUnlessReturned). Upstream's ownership-based
/// deallocation cannot run here: it refuses the kernels' barriers and
/// async copies, which declare no memory effects. The host code of a
/// lowered recurrence keeps each buffer in the block that allocates it, or
/// yields it out of an `scf.if` (a choice made at run time: the dispatch
/// on T, linattn-segment-chunk-states' segments) whose result owns it; a
/// buffer that leaves its block any other way is an error rather than a
/// leak.
LogicalResult freeTemporaries(func::FuncOp func) {
  SmallVector<Value> owners;
  func.walk([&](Operation *op) {
    if (insideKernel(op))
      return;
    if (auto alloc = dyn_cast<memref::AllocOp>(op))
      owners.push_back(alloc.getResult());
    else if (auto ifOp = dyn_cast<scf::IfOp>(op))
      for (OpResult result : ifOp->getResults())
        if (isa<BaseMemRefType>(result.getType()) &&
            ownsBuffer(ifOp, result.getResultNumber()))
          owners.push_back(result);
  });
  for (Value owner : owners)
    if (failed(freeUnlessReturned(func, owner)))
      return failure();
  return success();
}

struct ConvertLinAttnToGPU
    : impl::ConvertLinAttnToGPUBase<ConvertLinAttnToGPU> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    // 1. Mapped parallel loops -> gpu.launch.
    int64_t mapped = 0;
    module.walk([&](scf::ParallelOp op) {
      if (op->hasAttr(gpu::getMappingAttrName()) &&
          !op->getParentOfType<scf::ParallelOp>())
        ++mapped;
    });
    {
      RewritePatternSet patterns(ctx);
      populateParallelLoopToGPUPatterns(patterns);
      ConversionTarget target(*ctx);
      target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
      configureParallelLoopToGPULegality(target);
      if (failed(applyPartialConversion(module, target, std::move(patterns))))
        return signalPassFailure();
      finalizeParallelLoopToGPUConversion(module);
    }
    numKernels += mapped;

    // Inside kernels, fully unroll the innermost loops of constant trip
    // count (the loops over K of a state column): their private arrays are
    // then indexed by constants, and LLVM keeps them in registers instead
    // of local memory.
    SmallVector<scf::ForOp> unrollable;
    module.walk([&](scf::ForOp loop) {
      if (!insideKernel(loop))
        return;
      bool innermost = true;
      loop.getBody()->walk([&](scf::ForOp) { innermost = false; });
      std::optional<int64_t> trips = loop.getStaticTripCount()
                                         ? std::optional<int64_t>(
                                               loop.getStaticTripCount()->getSExtValue())
                                         : std::nullopt;
      if (innermost && trips && *trips <= maxUnroll)
        unrollable.push_back(loop);
    });
    for (scf::ForOp loop : unrollable)
      if (failed(loopUnrollFull(loop)))
        return signalPassFailure();

    // 2. Nothing else on the host may touch a buffer's contents.
    WalkResult walk = module.walk([&](Operation *op) {
      bool touchesBuffers =
          isa<memref::LoadOp, memref::StoreOp, affine::AffineLoadOp,
              affine::AffineStoreOp>(op) ||
          (isa<linalg::LinalgOp>(op) &&
           llvm::any_of(op->getOperandTypes(), llvm::IsaPred<MemRefType>));
      if (!touchesBuffers || insideKernel(op))
        return WalkResult::advance();
      op->emitOpError()
          << "runs on the host but reads or writes device memory: this part "
             "of the algorithm has no GPU mapping yet (on the GPU, use "
             "strategy=recurrent)";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    // 3. A host global (a bufferized constant tensor) has a host address:
    //    kernels read a copy of it, which the next step makes a device
    //    buffer filled from the global.
    SmallVector<memref::GetGlobalOp> globals;
    module.walk([&](memref::GetGlobalOp get) {
      if (!insideKernel(get) &&
          llvm::any_of(get->getUsers(),
                       [](Operation *user) { return insideKernel(user); }))
        globals.push_back(get);
    });
    for (memref::GetGlobalOp get : globals) {
      OpBuilder b(get.getContext());
      b.setInsertionPointAfter(get);
      auto copy = memref::AllocOp::create(b, get.getLoc(), get.getType());
      memref::CopyOp::create(b, get.getLoc(), get.getResult(), copy);
      get.getResult().replaceUsesWithIf(copy, [](OpOperand &use) {
        return insideKernel(use.getOwner());
      });
    }

    // 4. Host buffers -> device buffers, each freed after its last use.
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(freeTemporaries(func)))
        return signalPassFailure();
    SmallVector<Operation *> hostBufferOps;
    module.walk([&](Operation *op) {
      if (isa<memref::AllocOp, memref::DeallocOp, memref::CopyOp>(op) &&
          !insideKernel(op))
        hostBufferOps.push_back(op);
    });
    // A copy of a view onto the same view is nothing: tensor.insert_slice
    // of the slice it was computed in (PadHeadDims' copies into a padded
    // buffer) bufferizes to one, left for canonicalisation to fold.
    llvm::erase_if(hostBufferOps, [](Operation *op) {
      auto copy = dyn_cast<memref::CopyOp>(op);
      if (!copy || !isSameView(copy.getSource(), copy.getTarget()))
        return false;
      copy.erase();
      return true;
    });
    // gpu-to-llvm lowers device allocations and copies in their async
    // form: each one runs on its own stream and is waited for at once, so
    // the host code stays synchronous.
    for (Operation *op : hostBufferOps) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      Type tokenType = gpu::AsyncTokenType::get(ctx);
      Value start =
          gpu::WaitOp::create(b, loc, tokenType, ValueRange{}).getAsyncToken();
      Value done;
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto device = gpu::AllocOp::create(
            b, loc, alloc.getType(), tokenType, ValueRange{start},
            alloc.getDynamicSizes(), alloc.getSymbolOperands(),
            /*hostShared=*/false);
        alloc.replaceAllUsesWith(device.getMemref());
        done = device.getAsyncToken();
        ++numDeviceBuffers;
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        done = gpu::DeallocOp::create(b, loc, tokenType, ValueRange{start},
                                      dealloc.getMemref())
                   .getAsyncToken();
      } else {
        auto copy = cast<memref::CopyOp>(op);
        done = gpu::MemcpyOp::create(b, loc, tokenType, ValueRange{start},
                                     copy.getTarget(), copy.getSource())
                   .getAsyncToken();
      }
      gpu::WaitOp::create(b, loc, Type(), ValueRange{done});
      op->erase();
    }
  }
};

} // namespace
} // namespace mlir::linattn
