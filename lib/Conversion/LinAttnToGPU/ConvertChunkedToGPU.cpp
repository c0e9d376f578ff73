//===- ConvertChunkedToGPU.cpp - Chunked algorithm ops to GPU kernels -----===//
//
// The pass convert-linattn-chunked-to-gpu: every chunked-state algorithm op
// becomes one gpu.launch, its kernel written by the op's lowering
// (<Op>ToGPU.cpp) from the building blocks in Kernel/.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Conversion/Passes.h"

#include "ChunkedLowerings.h"
#include "KernelSupport.h"
#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/TypeSwitch.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_CONVERTLINATTNCHUNKEDTOGPU
#include "LinAttn/Conversion/Passes.h.inc"

namespace {
using namespace kernel;

struct ConvertLinAttnChunkedToGPU
    : impl::ConvertLinAttnChunkedToGPUBase<ConvertLinAttnChunkedToGPU> {
  using Base::Base;
  void runOnOperation() override {
    std::optional<GPUTargetInfo> target = GPUTargetInfo::forChip(chip);
    if (!target) {
      getOperation()->emitError()
          << "convert-linattn-chunked-to-gpu: chip '" << chip
          << "' is not a CUDA chip name (sm_XY or sm_XYa)";
      return signalPassFailure();
    }
    // The cumsums go last: a UT kernel that sums its scalar gates itself
    // (cumsumForUTKernel) leaves one unread, and then it is not launched.
    SmallVector<Operation *> ops, cumsums;
    getOperation()->walk([&](Operation *op) {
      if (isa<ChunkCumsumOp>(op))
        cumsums.push_back(op);
      else if (isa<L2NormOp, UTTransformOp, ChunkStatePassOp, SegmentCarriesOp,
                   ChunkOutputOp>(op))
        ops.push_back(op);
    });
    // Tensor-core operand types first, while every operand's producer
    // (an l2norm, say) is still visible.
    DenseMap<Operation *, Type> mmaTypes;
    for (Operation *op : ops) {
      FailureOr<Type> type =
          llvm::TypeSwitch<Operation *, FailureOr<Type>>(op)
              .Case([](UTTransformOp o) {
                return mmaTypeOf(o, {o.getK(), o.getV()});
              })
              .Case([](ChunkStatePassOp o) { return mmaTypeOf(o, {o.getK()}); })
              .Case([](ChunkOutputOp o) {
                return mmaTypeOf(o, {o.getQ(), o.getK()});
              })
              .Default([](Operation *) { return Type(); });
      if (failed(type))
        return signalPassFailure();
      mmaTypes[op] = *type;
    }
    // Per-key cumsums that decay their state pass's keys run first: the
    // state pass reads what they write.
    DenseMap<Operation *, DecayedKeys> decayedKeys;
    bool failedCumsum = false;
    llvm::erase_if(cumsums, [&](Operation *op) {
      auto cumsum = cast<ChunkCumsumOp>(op);
      ChunkStatePassOp statePass = statePassForDecayedKeys(cumsum);
      if (!statePass)
        return false;
      if (failed(lowerChunkCumsum(cumsum, statePass, &decayedKeys[statePass])))
        failedCumsum = true;
      ++numKernels;
      return true;
    });
    if (failedCumsum)
      return signalPassFailure();
    for (Operation *op : ops) {
      Type mma = mmaTypes[op];
      LogicalResult result =
          llvm::TypeSwitch<Operation *, LogicalResult>(op)
              .Case([](L2NormOp o) { return lowerL2Norm(o); })
              .Case([&](UTTransformOp o) { return lowerUTTransform(o, mma); })
              .Case([&](ChunkStatePassOp o) {
                auto decayed = decayedKeys.find(o);
                return lowerChunkStatePass(
                    o, mma, *target,
                    decayed == decayedKeys.end() ? nullptr : &decayed->second);
              })
              .Case([](SegmentCarriesOp o) { return lowerSegmentCarries(o); })
              .Case([&](ChunkOutputOp o) {
                return lowerChunkOutput(o, mma, *target);
              });
      if (failed(result))
        return signalPassFailure();
      ++numKernels;
    }
    for (Operation *op : cumsums) {
      auto cumsum = cast<ChunkCumsumOp>(op);
      if (cumsum->use_empty()) {
        eraseCumsum(cumsum);
        ++numCumsumsFused;
        continue;
      }
      if (failed(lowerChunkCumsum(cumsum)))
        return signalPassFailure();
      ++numKernels;
    }
  }
};

} // namespace
} // namespace mlir::linattn
