//===- Registration.cpp - LinAttn pass and pipeline registration ----------===//

#include "LinAttn/InitAllPasses.h"

#include "LinAttn/Conversion/Passes.h"
#include "LinAttn/Pipelines/Pipelines.h"
#include "LinAttn/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void linattn::registerAllPasses() {
  registerLinAttnConversionPasses();
  registerLinAttnTransformsPasses();
  registerLinAttnPipelines();
}

void linattn::registerLinAttnPipelines() {
  PassPipelineRegistration<LinAttnToNVVMOptions>(
      "linattn-to-nvvm",
      "Lower linattn ops to NVVM kernels in a gpu.binary plus host code "
      "calling the mgpu* runtime ABI, in the LLVM dialect",
      buildLinAttnToNVVMPipeline);
  PassPipelineRegistration<LinAttnToCPUOptions>(
      "linattn-to-cpu",
      "Lower linattn ops to the LLVM dialect for the host CPU (chosen "
      "algorithm as loops, bufferized, C interface on public functions)",
      buildLinAttnToCPUPipeline);
}
