//===- CPUPipeline.cpp - linattn-to-cpu -----------------------------------===//
//
// The CPU lowering, in a library of its own (MLIRLinAttnCPUPipeline) that
// does not link the GPU conversion: the spec fuzzer, instrumented, builds
// only what this pipeline runs.
//
//===----------------------------------------------------------------------===//

#include "PipelineStages.h"

#include "LinAttn/Conversion/Passes.h"
#include "LinAttn/Pipelines/Pipelines.h"
#include "LinAttn/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void linattn::buildLinAttnToCPUPipeline(OpPassManager &pm,
                                        const LinAttnToCPUOptions &options) {
  linattn::addAlgorithmPasses(pm, options.strategy, options.chunkSize,
                              options.smCount);
  linattn::addSegmentPass(pm, options.segmentChunks);
  // Every algorithm op to loops; elementwise tensor math (scan combiners)
  // to linalg so that it bufferizes.
  pm.addNestedPass<func::FuncOp>(createConvertLinAttnToLoops());
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());

  linattn::addBufferization(pm);
  // Every buffer that is not returned is freed after its last use.
  bufferization::buildBufferDeallocationPipeline(
      pm, bufferization::BufferDeallocationPipelineOptions());
  // The clones deallocation may add (a private function returning an
  // argument) become alloc + copy.
  pm.addPass(createConvertBufferizationToMemRefPass());
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
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}
