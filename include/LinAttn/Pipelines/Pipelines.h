//===- Pipelines.h - LinAttn lowering pipelines -----------------*- C++ -*-===//
//
// Whole lowerings, from linattn ops to LLVM, for embedding in other
// compilers: build them into an OpPassManager, or name them on the command
// line (`--linattn-to-cpu`).
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_PIPELINES_PIPELINES_H
#define LINATTN_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::linattn {

/// Options of the `linattn-to-cpu` pipeline.
struct LinAttnToCPUOptions : public PassPipelineOptions<LinAttnToCPUOptions> {
  PassOptions::Option<bool> emitCInterface{
      *this, "emit-c-interface",
      llvm::cl::desc("Emit _mlir_ciface_ wrappers for public functions"),
      llvm::cl::init(true)};
};

/// linattn ops on tensors -> sequential loops -> bufferized memrefs -> the
/// LLVM dialect, ready for mlir-translate --mlir-to-llvmir or the
/// ExecutionEngine.
void buildLinAttnToCPUPipeline(OpPassManager &pm,
                               const LinAttnToCPUOptions &options);

/// Registers every LinAttn pipeline by name.
void registerLinAttnPipelines();

} // namespace mlir::linattn

#endif // LINATTN_PIPELINES_PIPELINES_H
