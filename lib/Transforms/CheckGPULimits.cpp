//===- CheckGPULimits.cpp - Recurrences the GPU code is generated for -----===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNCHECKGPULIMITS
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

struct LinAttnCheckGPULimits
    : impl::LinAttnCheckGPULimitsBase<LinAttnCheckGPULimits> {
  void runOnOperation() override {
    WalkResult result = getOperation()->walk([](RecurrenceOp op) {
      if (op.getKeyDim() <= kMaxGPUKeyDim)
        return WalkResult::advance();
      op.emitOpError() << "K = " << op.getKeyDim()
                       << " exceeds the GPU code's K <= " << kMaxGPUKeyDim
                       << ": its recurrent kernel unrolls over K, and its "
                          "compile time grows past 10 s beyond that (the CPU "
                          "pipeline takes any K)";
      return WalkResult::interrupt();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
} // namespace mlir::linattn
