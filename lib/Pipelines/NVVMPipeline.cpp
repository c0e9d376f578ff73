//===- NVVMPipeline.cpp - linattn-to-nvvm ---------------------------------===//
//
// The GPU lowering: the shared stages (PipelineStages.h) planned for the
// tensor-core kernels, then the run-time shape passes, the conversions to
// kernels and the NVVM pipeline.
//
//===----------------------------------------------------------------------===//

#include "PipelineStages.h"

#include "LinAttn/Pipelines/Pipelines.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Conversion/Passes.h"
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
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace {
/// Fails the pipeline at once with `message`: what a pipeline builder,
/// which cannot fail itself, adds for options it cannot honour.
struct RejectOptions : PassWrapper<RejectOptions, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RejectOptions)
  explicit RejectOptions(std::string message) : message(std::move(message)) {}
  StringRef getArgument() const override { return "linattn-reject-options"; }
  void runOnOperation() override {
    getOperation()->emitError() << message;
    signalPassFailure();
  }
  std::string message;
};
} // namespace

/// Why linattn-to-nvvm cannot make GPU code with `options`, or "".
static std::string checkNVVMOptions(const linattn::LinAttnToNVVMOptions &o) {
  if (std::string why = linattn::chunked_kernels::checkChip(o.chip); !why.empty())
    return why;
  if (o.format != "isa" && o.format != "bin" && o.format != "fatbin")
    return "format must be 'isa' (PTX), 'bin' (cubin) or 'fatbin', got '" +
           o.format + "'";
  StringRef features = o.features;
  unsigned ptx = 0;
  if (!features.consume_front("+ptx") || features.getAsInteger(10, ptx) ||
      ptx < 80)
    return "features must be '+ptxNN' with PTX ISA NN >= 80 (the kernels' "
           "instructions), got '" + o.features + "'";
  if (o.optLevel < 0 || o.optLevel > 3)
    return "opt-level must be 0 to 3, got " + std::to_string(o.optLevel);
  return "";
}

using linattn::chunked_kernels::fewChainsStateColumns;

/// The GPU's automatic segments, chosen at run time: kAutoSegmentChunks
/// (16) chunks a segment where B * HV * V <= fewChainsStateColumns
/// (TargetInfo.h) and T spans more than one
/// segment. On the H200 (bench/results/
/// gpu_bench_segments_B{1,2,4}.json, NOTES c27) 16 chunks a segment took
/// simple GLA from 0.084 to 0.054 ms at B = 1, T = 4096 and from 0.349 to
/// 0.293 at B = 2, T = 16384, within 9% of the best segment length
/// measured at T >= 4096 (8% off for linear attention at B = 1, T =
/// 16384); B = 4 (HV = 8, V = 128: 128 blocks) was slower
/// with every length, and a single segment only adds the carries.
static void addRuntimeSegmentPass(OpPassManager &pm, int64_t smCount) {
  pm.addNestedPass<func::FuncOp>(linattn::createLinAttnSegmentChunkStates(
      linattn::LinAttnSegmentChunkStatesOptions{
          /*segmentChunks=*/linattn::chunked_kernels::kAutoSegmentChunks,
          /*maxStateColumns=*/fewChainsStateColumns(smCount),
          /*maxDenseStateColumns=*/
          linattn::chunked_kernels::denseSegmentStateColumns(smCount)}));
}

/// The GPU's narrow state-pass blocks, chosen at run time where B * HV * V
/// <= fewChainsStateColumns, for the state passes segments do not cut (a
/// rank-1 term or per-key gates), the backward's recomputed forward among
/// them. On the H200 (NOTES w1): Gated DeltaNet B = 1, H = 8, T = 32768
/// 1.254 -> 1.106 ms; with the SMs full (B = 4) narrow blocks were 25-85%
/// slower (e1), hence the branch.
static void addRuntimeNarrowStatePass(OpPassManager &pm, int64_t smCount) {
  pm.addNestedPass<func::FuncOp>(linattn::createLinAttnNarrowStateBlocks(
      linattn::LinAttnNarrowStateBlocksOptions{fewChainsStateColumns(smCount)}));
}

/// The GPU's wide state-pass blocks, chosen at run time where B * HV * V >
/// manyChainsStateColumns (the 32-column blocks take more than one wave),
/// after the narrow ones (which mark their passes). Where the 32-column
/// blocks fit one wave the wide ones are slower (bench/NOTES.md w3), hence
/// the branch.
static void addRuntimeWideStatePass(OpPassManager &pm, int64_t smCount) {
  pm.addNestedPass<func::FuncOp>(linattn::createLinAttnWidenStateBlocks(
      linattn::LinAttnWidenStateBlocksOptions{
          linattn::chunked_kernels::manyChainsStateColumns(smCount)}));
}

void linattn::buildLinAttnToNVVMPipeline(OpPassManager &pm,
                                         const LinAttnToNVVMOptions &options) {
  if (std::string why = checkNVVMOptions(options); !why.empty()) {
    pm.addPass(std::make_unique<RejectOptions>("linattn-to-nvvm: " + why));
    return;
  }
  pm.addPass(linattn::createLinAttnCheckGPULimits());
  // The arguments' roles, for the library's record of them (a runner's
  // input check), while the recurrences are there.
  pm.addPass(linattn::createLinAttnRecordArgumentRoles());
  // auto: chunked wherever its kernels apply, else recurrent (the GPU
  // selection, from the H200 measurements in docs/gpu-strategy.md). A chip
  // name that is none is reported by the conversion; plan for an H200.
  int64_t smCount = linattn::GPUTargetInfo::forChip(options.chip)
                        .value_or(linattn::GPUTargetInfo::h200())
                        .smCount();
  linattn::addAlgorithmPasses(
      pm, options.strategy, options.chunkSize, smCount,
      [&](OpPassManager &nested) {
        nested.addPass(linattn::createLinAttnFitChunkedKernels(
            linattn::LinAttnFitChunkedKernelsOptions{
                options.chip, options.chunkSize, /*explain=*/false,
                /*narrowStates=*/!options.exactBackwardStates}));
      },
      /*narrowBackwardStates=*/!options.exactBackwardStates);
  // The chunked algorithm, chosen (auto) or forced, without a forced
  // segment length: segments and narrow or wide state-pass blocks are
  // chosen at run time from B (and T). Forced chunked runs what auto's
  // chunked branch runs, so that the strategy grid's chunked rows, which
  // the cost model's decode limits are fitted to, time that path (forced
  // with one form it was 7% slower at B = 256: bench/NOTES.md g3).
  bool shapeAtRunTime =
      options.runTimeForms && options.segmentChunks == 0 &&
      (options.strategy == linattn::Strategy::Auto ||
       options.strategy == linattn::Strategy::Chunked);
  // Chunked-state ops become tensor-core kernels, each kernel computing
  // what linattn-fuse-chunk-cumsum folded into its op; what is left (the
  // recurrence, scans) becomes loops, mapped to blocks and threads before
  // anything canonicalises the parallel nests together. The segments come
  // after the fusion, so that the segment maps and the state pass entered
  // from them take the keys the cumsum decayed (per-key gates) as the
  // unsegmented pass does.
  pm.addNestedPass<func::FuncOp>(linattn::createLinAttnFuseChunkCumsum());
  if (shapeAtRunTime)
    addRuntimeSegmentPass(pm, smCount);
  else
    linattn::addSegmentPass(pm, options.segmentChunks);
  if (shapeAtRunTime) {
    addRuntimeNarrowStatePass(pm, smCount);
    addRuntimeWideStatePass(pm, smCount);
  }
  // qk_l2norm's row norms formed in the kernels that stage the rows.
  pm.addNestedPass<func::FuncOp>(linattn::createLinAttnFuseRowNorms());
  // The delta rules' chunk outputs formed in the state pass (after the
  // segments and block widths: it takes the unsegmented 32-column pass).
  if (!options.separateChunkOutput)
    pm.addNestedPass<func::FuncOp>(linattn::createLinAttnFuseChunkOutput());
  pm.addNestedPass<func::FuncOp>(
      createConvertLinAttnChunkedToGPU(ConvertLinAttnChunkedToGPUOptions{
          options.chip, options.explainKernels}));
  pm.addNestedPass<func::FuncOp>(createConvertLinAttnScanToGPU());
  pm.addNestedPass<func::FuncOp>(createConvertLinAttnRecurrenceToGPU());
  pm.addNestedPass<func::FuncOp>(createConvertLinAttnToLoops());
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  // Elementwise tensor math (casts of the scan forms) to linalg, and after
  // bufferization every host linalg op to a mapped loop nest.
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  linattn::addBufferization(pm);
  pm.addNestedPass<func::FuncOp>(createConvertLinAttnLinalgToGPU());
  // (convert-linattn-to-gpu frees the device intermediates.)
  pm.addPass(createConvertLinAttnToGPU(
      ConvertLinAttnToGPUOptions{options.maxUnroll}));
  pm.addPass(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(createLinAttnFuseIndependentLaunches());
  pm.addPass(createLinAttnInsertAlignmentChecks());
  if (options.checkInputs)
    pm.addPass(createLinAttnInsertInputChecks());
  pm.addPass(createLinAttnEmitCInterface());
  pm.addPass(createLinAttnEmitSignatures());
  // Canonicalization hoists constants out of the (not isolated) launch
  // bodies, and gpu-kernel-outlining would pass each one as a kernel
  // argument: divisions and strides by run-time values, addresses that
  // cannot fold offsets, registers held for all of them. Sink them back.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  // Outlined here (the NVVM pipeline's own outlining then finds nothing
  // left) so that kernels are named after the spec function, not after the
  // body the entry points wrap.
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createLinAttnGpuOccupancyHints());
  pm.addPass(createLinAttnEmitStreamEntries());
  pm.addPass(createLinAttnReportCheckFailures());

  // Kernels to NVVM and a gpu.binary; host code to LLVM with mgpu* calls.
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = options.chip;
  nvvm.cubinFeatures = options.features;
  nvvm.cubinFormat = options.format;
  nvvm.optLevel = options.optLevel;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
}
