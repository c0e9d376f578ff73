//===- PipelineStages.h - Stages the LinAttn pipelines share ----*- C++ -*-===//
//
// The stages linattn-to-cpu and linattn-to-nvvm both run: the algorithm
// passes, forced segments and bufferization. They live in the CPU pipeline's
// library (MLIRLinAttnCPUPipeline), which does not link the GPU conversion:
// the GPU-only pass among them (linattn-fit-chunked-kernels) comes from the
// caller.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_PIPELINES_PIPELINESTAGES_H
#define LIB_PIPELINES_PIPELINESTAGES_H

#include "LinAttn/Transforms/Strategy.h"

#include "mlir/Pass/PassManager.h"

namespace mlir::linattn {

/// Adds the pass that refits chunked choices to a chip's kernels
/// (linattn-fit-chunked-kernels); given only by the GPU pipeline.
using AddFitChunkedKernels = function_ref<void(OpPassManager &)>;

/// The algorithm passes for `strategy`: forced, every recurrence takes it;
/// auto, the selector records a choice per recurrence and each algorithm
/// pass rewrites the ones that name it. With `fitChunkedKernels` the passes
/// plan for the GPU's tensor-core kernels (padded head sizes, the fit pass,
/// the backward chunked as the forward's kernels store it).
/// `narrowBackwardStates`: linattn-recurrence-grad-to-chunked's
/// narrow-states (the backward's chunk states in bf16 where the keys are).
void addAlgorithmPasses(OpPassManager &pm, Strategy strategy,
                        int64_t chunkSize, int64_t smCount,
                        AddFitChunkedKernels fitChunkedKernels = nullptr,
                        bool narrowBackwardStates = true);

/// The state pass in segments of `segmentChunks` chunks where its
/// transitions are scalars; none for 0 (the pass rejects a negative count).
void addSegmentPass(OpPassManager &pm, int64_t segmentChunks);

/// Tensors to buffers, across function boundaries, with plain (identity
/// layout) memrefs in signatures so C callers pass dense descriptors.
/// Buffers are not freed here: each pipeline frees the intermediates its
/// own way (without that every call leaks them, the chunk states among
/// them).
void addBufferization(OpPassManager &pm);

} // namespace mlir::linattn

#endif // LIB_PIPELINES_PIPELINESTAGES_H
