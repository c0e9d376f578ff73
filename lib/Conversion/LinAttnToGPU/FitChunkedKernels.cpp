//===- FitChunkedKernels.cpp - Chunked only where its kernels fit ---------===//
//
// The selector knows what the chunked kernels take by element type and head
// size (TargetInfo.h); whether each kernel's tiles fit a block's shared
// memory depends on the forms the algorithm passes make (a split W, f32
// keys, per-key gates) and is decided by the conversion. So the chunked
// choice is tried: on a copy of the recurrence, the pipeline's chunked
// forms and convert-linattn-chunked-to-gpu; a failure makes it recurrent.
//
//===----------------------------------------------------------------------===//

#include "ChunkedToGPUPatterns.h"

#include "LinAttn/Conversion/Passes.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Transforms/Passes.h"
#include "LinAttn/Transforms/Strategy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNFITCHUNKEDKERNELS
#include "LinAttn/Conversion/Passes.h.inc"

namespace {

struct LinAttnFitChunkedKernels
    : impl::LinAttnFitChunkedKernelsBase<LinAttnFitChunkedKernels> {
  using Base::Base;

  void runOnOperation() override {
    // Options the trial would fail on for every recurrence, silently.
    std::string why = chunked_kernels::checkChip(chip);
    if (why.empty() && chunkSize <= 0)
      why = "chunk-size must be positive, got " + std::to_string(chunkSize);
    if (!why.empty()) {
      getOperation()->emitError() << "linattn-fit-chunked-kernels: " << why;
      return signalPassFailure();
    }
    SmallVector<RecurrenceOp> chunked;
    getOperation()->walk([&](RecurrenceOp op) {
      if (getRecordedStrategy(op) == Strategy::Chunked)
        chunked.push_back(op);
    });
    for (RecurrenceOp op : chunked) {
      ++numTried;
      why = whyKernelsDoNotFit(op, /*backward=*/false);
      if (why.empty())
        continue;
      ++numRefitted;
      record(op, Strategy::Recurrent);
      if (explain)
        op.emitRemark() << "linattn GPU strategy for "
                        << stringifyTransitionKind(op.getKind())
                        << ": recurrent (the chunked kernels do not fit: "
                        << why << ")";
    }
    // The backward: chunked (the forward's kernels recompute W, U, D and the
    // chunk states; the backward's own ops are loops) wherever those
    // kernels fit, unless a strategy was recorded already.
    SmallVector<RecurrenceGradOp> adjoints;
    getOperation()->walk([&](RecurrenceGradOp op) {
      if (!getRecordedStrategy(op))
        adjoints.push_back(op);
    });
    for (RecurrenceGradOp op : adjoints) {
      ++numTried;
      std::string kernels;
      why = whyChunkedBackwardIsNotTaken(op);
      if (why.empty()) {
        why = whyKernelsDoNotFit(op, /*backward=*/true, &kernels);
        if (!why.empty())
          why = "the chunked kernels do not fit: " + why;
      }
      if (why.empty()) {
        record(op, Strategy::Chunked);
        if (explain)
          op.emitRemark() << "linattn GPU strategy for the backward of "
                          << stringifyTransitionKind(op.getKind()) << ": chunked C="
                          << int64_t(chunkSize) << " (" << kernels << ")";
        continue;
      }
      ++numRefitted;
      record(op, Strategy::Recurrent);
      if (explain)
        op.emitRemark() << "linattn GPU strategy for the backward of "
                        << stringifyTransitionKind(op.getKind())
                        << ": recurrent (" << why << ")";
    }
  }

  /// Why the backward of `op` keeps the adjoint's loop although its
  /// chunked kernels would fit, or "". An f32 spec's chunked backward runs
  /// its reverse pass and chunk_grad as loops (their kernels take 16-bit
  /// dO) beside the recomputed forward's kernels: 17.7 ms against the
  /// adjoint's 4.0 s (Gated DeltaNet B 4 H 8 K = V = 128 T 1024, H200),
  /// within f32's 1e-4 of the float64 reference for every kind but negeig,
  /// whose hard inputs (beta near 1, nearly parallel keys) took it to
  /// 2.6e-4 (bench/NOTES.md f5).
  static std::string whyChunkedBackwardIsNotTaken(RecurrenceGradOp op) {
    if (cast<ShapedType>(op.getV().getType()).getElementType().isF32() &&
        op.getKind() == TransitionKind::NegEigDelta)
      return "f32 inputs with negeig's transitions: its chunked backward "
             "missed f32's 1e-4 on hard inputs";
    return "";
  }

  /// Records `strategy` as the op's choice (a recurrent one without a
  /// chunk size).
  void record(Operation *op, Strategy strategy) {
    op->setAttr(kStrategyAttrName,
                StringAttr::get(&getContext(), stringifyStrategy(strategy)));
    if (strategy == Strategy::Recurrent)
      op->removeAttr(kChunkSizeAttrName);
  }

  /// "" if the chunked form of `op` (a recurrence, or with `backward` its
  /// adjoint) lowers to kernels for `chip`, else the first error the
  /// lowering gave. With `kernels`, what runs the backward's chunked ops
  /// (describeBackwardKernels, asked before the conversion).
  std::string whyKernelsDoNotFit(Operation *op, bool backward,
                                 std::string *kernels = nullptr) {
    MLIRContext *context = &getContext();
    Location loc = op->getLoc();
    OwningOpRef<ModuleOp> trial = ModuleOp::create(loc);
    OpBuilder b(context);
    b.setInsertionPointToStart(trial->getBody());
    auto func = func::FuncOp::create(
        b, loc, "trial",
        b.getFunctionType(op->getOperandTypes(), op->getResultTypes()));
    Block *entry = func.addEntryBlock();
    b.setInsertionPointToStart(entry);
    IRMapping mapping;
    mapping.map(op->getOperands(), entry->getArguments());
    Operation *copy = b.clone(*op, mapping);
    func::ReturnOp::create(b, loc, copy->getResults());

    // The chunked forms, then their kernels (two runs, so that `kernels`
    // can be read off the forms in between).
    PassManager forms(context), conversion(context);
    OpPassManager &formsPm = forms.nest<func::FuncOp>();
    addChunkedFormPasses(formsPm, chunkSize, chunked_kernels::kHeadDimMultiple);
    if (backward)
      formsPm.addPass(createLinAttnRecurrenceGradToChunked(
          LinAttnRecurrenceGradToChunkedOptions{chunkSize,
                                                /*forwardWForm=*/true,
                                                narrowStates}));
    formsPm.addPass(createLinAttnFuseChunkCumsum());
    formsPm.addPass(createLinAttnFuseRowNorms());
    formsPm.addPass(createLinAttnFuseChunkOutput());
    conversion.nest<func::FuncOp>().addPass(
        createConvertLinAttnChunkedToGPU(ConvertLinAttnChunkedToGPUOptions{chip}));
    // The trial's diagnostics are the answer, not the user's errors.
    std::string why;
    ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
      if (why.empty() && diag.getSeverity() == DiagnosticSeverity::Error)
        why = diag.str();
      return success();
    });
    if (succeeded(forms.run(*trial))) {
      if (kernels)
        *kernels = kernel::describeBackwardKernels(*trial,
                                                   *GPUTargetInfo::forChip(chip));
      if (succeeded(conversion.run(*trial)))
        return "";
    }
    return why.empty() ? "the chunked form did not lower" : why;
  }
};

} // namespace
} // namespace mlir::linattn
