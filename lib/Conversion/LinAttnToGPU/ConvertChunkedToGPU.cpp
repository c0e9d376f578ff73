//===- ConvertChunkedToGPU.cpp - Chunked algorithm ops to GPU kernels -----===//
//
// The pass convert-linattn-chunked-to-gpu: every chunked-state algorithm op
// becomes one gpu.launch, its kernel written by the op's pattern
// (<Op>ToGPU.cpp) from the building blocks in Kernel/. The pass populates
// the patterns and applies them in one walk; what a kernel fuses is already
// in the ops it is given (linattn-fuse-chunk-cumsum).
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Conversion/Passes.h"

#include "ChunkedToGPUPatterns.h"
#include "KernelSupport.h"
#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include "llvm/ADT/TypeSwitch.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_CONVERTLINATTNCHUNKEDTOGPU
#include "LinAttn/Conversion/Passes.h.inc"

namespace kernel {

FailureOr<ChunkedLoweringContext>
ChunkedLoweringContext::build(Operation *root, const GPUTargetInfo &target,
                              bool explain) {
  ChunkedLoweringContext context(target, explain);
  WalkResult walk = root->walk([&](Operation *op) {
    FailureOr<Type> type =
        llvm::TypeSwitch<Operation *, FailureOr<Type>>(op)
            .Case([](UTTransformOp o) {
              return mmaTypeOf(o, {o.getK(), o.getV()}, o.getGates());
            })
            .Case([](ChunkStatePassOp o) {
              return mmaTypeOf(o, {o.getK()}, o.getGates());
            })
            .Case([](ChunkStatePassOutputOp o) {
              return mmaTypeOf(o, {o.getQ(), o.getK()}, o.getGates());
            })
            .Case([](SegmentMapsOp o) {
              return mmaTypeOf(o, {o.getK()}, o.getGates());
            })
            .Case([](ChunkOutputOp o) {
              return mmaTypeOf(o, {o.getQ(), o.getK()}, o.getGates());
            })
            .Default([](Operation *) { return Type(); });
    if (failed(type))
      return WalkResult::interrupt();
    if (*type)
      context.mmaTypes[op] = *type;
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  return context;
}

} // namespace kernel

namespace {
using namespace kernel;

bool isChunkedOp(Operation *op) {
  return isa<L2NormOp, RNormOp, ChunkCumsumOp, UTTransformOp, ChunkStatePassOp,
             SegmentCarriesOp, SegmentMapsOp, SegmentEntriesOp, ChunkOutputOp,
             ChunkStatePassOutputOp>(op);
}

struct ConvertLinAttnChunkedToGPU
    : impl::ConvertLinAttnChunkedToGPUBase<ConvertLinAttnChunkedToGPU> {
  using Base::Base;
  void runOnOperation() override {
    if (std::string why = chunked_kernels::checkChip(chip); !why.empty()) {
      getOperation()->emitError() << "convert-linattn-chunked-to-gpu: " << why;
      return signalPassFailure();
    }
    GPUTargetInfo target = *GPUTargetInfo::forChip(chip);
    unfuseStatePassOutputsWithoutKernel(getOperation(), target, explain);
    FailureOr<ChunkedLoweringContext> context =
        ChunkedLoweringContext::build(getOperation(), target, explain);
    if (failed(context))
      return signalPassFailure();
    int64_t kernels = 0;
    getOperation()->walk([&](Operation *op) { kernels += isChunkedOp(op); });
    if (context->explains())
      explainBackwardOps(getOperation(), target);

    RewritePatternSet patterns(&getContext());
    populateL2NormToGPUPatterns(patterns, *context);
    populateChunkCumsumToGPUPatterns(patterns, *context);
    populateUTTransformToGPUPatterns(patterns, *context);
    populateChunkStatePassToGPUPatterns(patterns, *context);
    populateChunkStatePassGradToGPUPatterns(patterns, *context);
    populateQKGradToGPUPatterns(patterns, *context);
    populateSegmentCarriesToGPUPatterns(patterns, *context);
    populateSegmentEntriesToGPUPatterns(patterns, *context);
    populateChunkOutputToGPUPatterns(patterns, *context);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    SmallVector<ChunkGradOp> chunkGrads;
    getOperation()->walk([&](ChunkGradOp op) { chunkGrads.push_back(op); });
    for (ChunkGradOp op : chunkGrads)
      lowerChunkGradToGPU(op, target);

    // An op left behind has had its lowering say why.
    if (getOperation()->walk([](Operation *op) {
          return isChunkedOp(op) ? WalkResult::interrupt() : WalkResult::advance();
        }).wasInterrupted())
      return signalPassFailure();
    numKernels += kernels;
  }
};

} // namespace
} // namespace mlir::linattn
