//===- Pipelines.cpp - LinAttn lowering pipelines -------------------------===//

#include "LinAttn/Pipelines/Pipelines.h"

#include "LinAttn/Conversion/Passes.h"
#include "LinAttn/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void linattn::buildLinAttnToCPUPipeline(OpPassManager &pm,
                                        const LinAttnToCPUOptions &options) {
  // Algorithm.
  switch (options.strategy) {
  case Strategy::Recurrent:
    break;
  case Strategy::Scan:
    pm.addNestedPass<func::FuncOp>(createLinAttnRecurrenceToScan(
        LinAttnRecurrenceToScanOptions{/*requireAll=*/true}));
    break;
  case Strategy::Chunked:
  case Strategy::SegmentScan:
    pm.addNestedPass<func::FuncOp>(createLinAttnRecurrenceToChunked(
        LinAttnRecurrenceToChunkedOptions{options.chunkSize}));
    pm.addNestedPass<func::FuncOp>(createLinAttnLowerRank1ToWY());
    if (options.strategy == Strategy::SegmentScan)
      pm.addNestedPass<func::FuncOp>(createLinAttnStatePassToScan());
    break;
  case Strategy::Auto: {
    // The selector records a choice per recurrence; each algorithm pass
    // rewrites the ones that name it.
    LinAttnSelectStrategyOptions select;
    select.smCount = options.smCount;
    pm.addNestedPass<func::FuncOp>(createLinAttnSelectStrategy(select));
    pm.addNestedPass<func::FuncOp>(createLinAttnRecurrenceToScan());
    pm.addNestedPass<func::FuncOp>(createLinAttnRecurrenceToChunked(
        LinAttnRecurrenceToChunkedOptions{options.chunkSize}));
    pm.addNestedPass<func::FuncOp>(createLinAttnLowerRank1ToWY());
    pm.addNestedPass<func::FuncOp>(createLinAttnStatePassToScan());
    break;
  }
  }
  // Every algorithm op to loops; elementwise tensor math (scan combiners)
  // to linalg so that it bufferizes.
  pm.addNestedPass<func::FuncOp>(createConvertLinAttnToLoops());
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());

  // Tensors to buffers, across function boundaries, with plain (identity
  // layout) memrefs in signatures so C callers pass dense descriptors.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  // A scan's accumulator is a fresh value every step (the combiner's
  // result), not an in-place update of the loop-carried buffer.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  if (options.emitCInterface)
    pm.addPass(createLinAttnEmitCInterface());

  // Down to the LLVM dialect. bf16 conversions become integer bit
  // manipulation (arith-expand) so that no soft-float library call is needed.
  pm.addPass(createSCFToControlFlowPass());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void linattn::registerLinAttnPipelines() {
  PassPipelineRegistration<LinAttnToCPUOptions>(
      "linattn-to-cpu",
      "Lower linattn ops to the LLVM dialect for the host CPU (chosen "
      "algorithm as loops, bufferized, C interface on public functions)",
      buildLinAttnToCPUPipeline);
}
