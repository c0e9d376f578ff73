//===- PipelineStages.cpp - Stages the LinAttn pipelines share -----------===//

#include "PipelineStages.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Transforms/Passes.h"

#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

void linattn::addAlgorithmPasses(OpPassManager &pm, Strategy strategy,
                                 int64_t chunkSize, int64_t smCount,
                                 AddFitChunkedKernels fitChunkedKernels,
                                 bool narrowBackwardStates) {
  bool gpuKernels = bool(fitChunkedKernels);
  // Shape checks first: they hold whatever algorithm computes the op.
  pm.addNestedPass<func::FuncOp>(linattn::createLinAttnInsertShapeChecks());
  switch (strategy) {
  case linattn::Strategy::Recurrent:
    break;
  case linattn::Strategy::Scan:
    pm.addNestedPass<func::FuncOp>(linattn::createLinAttnRecurrenceToScan(
        linattn::LinAttnRecurrenceToScanOptions{/*requireAll=*/true}));
    break;
  case linattn::Strategy::Chunked:
  case linattn::Strategy::SegmentScan:
    if (gpuKernels)
      pm.addNestedPass<func::FuncOp>(linattn::createLinAttnPadHeadDims(
          linattn::LinAttnPadHeadDimsOptions{
              linattn::chunked_kernels::kHeadDimMultiple}));
    pm.addNestedPass<func::FuncOp>(linattn::createLinAttnRecurrenceToChunked(
        linattn::LinAttnRecurrenceToChunkedOptions{
            chunkSize,
            /*narrowIntermediates=*/strategy == linattn::Strategy::Chunked}));
    pm.addNestedPass<func::FuncOp>(linattn::createLinAttnLowerRank1ToWY(
        linattn::LinAttnLowerRank1ToWYOptions{
            /*splitW=*/strategy == linattn::Strategy::Chunked}));
    if (strategy == linattn::Strategy::SegmentScan)
      pm.addNestedPass<func::FuncOp>(linattn::createLinAttnStatePassToScan());
    // The backward in chunked form; on the GPU the forward's kernels
    // recompute what it needs, so it stores that as they do.
    if (strategy == linattn::Strategy::Chunked)
      pm.addNestedPass<func::FuncOp>(
          linattn::createLinAttnRecurrenceGradToChunked(
              linattn::LinAttnRecurrenceGradToChunkedOptions{
                  chunkSize, /*forwardWForm=*/gpuKernels,
                  narrowBackwardStates}));
    break;
  case linattn::Strategy::Auto: {
    // The selector records a choice per recurrence; each algorithm pass
    // rewrites the ones that name it.
    linattn::LinAttnSelectStrategyOptions select;
    select.smCount = smCount;
    select.gpuKernels = gpuKernels;
    pm.addNestedPass<func::FuncOp>(linattn::createLinAttnSelectStrategy(select));
    // On the GPU, a chunked choice whose kernels would not fit the chip
    // (shared memory, at K or V above 128) becomes recurrent.
    if (gpuKernels)
      fitChunkedKernels(pm);
    pm.addNestedPass<func::FuncOp>(linattn::createLinAttnRecurrenceToScan());
    linattn::addChunkedFormPasses(
        pm.nest<func::FuncOp>(), chunkSize,
        gpuKernels ? linattn::chunked_kernels::kHeadDimMultiple : 0);
    // On the GPU the backward is chunked where the fit pass found the
    // forward's kernels fit (it records recurrent elsewhere); the CPU keeps
    // the adjoint's loop.
    if (gpuKernels)
      pm.addNestedPass<func::FuncOp>(
          linattn::createLinAttnRecurrenceGradToChunked(
              linattn::LinAttnRecurrenceGradToChunkedOptions{
                  chunkSize, /*forwardWForm=*/true,
                  narrowBackwardStates}));
    pm.addNestedPass<func::FuncOp>(linattn::createLinAttnStatePassToScan());
    break;
  }
  }
}

void linattn::addSegmentPass(OpPassManager &pm, int64_t segmentChunks) {
  if (segmentChunks != 0)
    pm.addNestedPass<func::FuncOp>(linattn::createLinAttnSegmentChunkStates(
        linattn::LinAttnSegmentChunkStatesOptions{
            segmentChunks, /*maxStateColumns=*/0, /*maxDenseStateColumns=*/0}));
}

void linattn::addBufferization(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  // A scan's accumulator is a fresh value every step (the combiner's
  // result), not an in-place update of the loop-carried buffer.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
}

