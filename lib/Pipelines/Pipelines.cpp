//===- Pipelines.cpp - LinAttn lowering pipelines -------------------------===//

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

/// The algorithm passes for `strategy`: forced, every recurrence takes it;
/// auto, the selector records a choice per recurrence and each algorithm
/// pass rewrites the ones that name it.
static void addAlgorithmPasses(OpPassManager &pm, linattn::Strategy strategy,
                               int64_t chunkSize, int64_t smCount,
                               bool gpuKernels, StringRef chip = "") {
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
                  chunkSize, /*forwardWForm=*/gpuKernels}));
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
      pm.addPass(linattn::createLinAttnFitChunkedKernels(
          linattn::LinAttnFitChunkedKernelsOptions{chip.str(), chunkSize}));
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
                  chunkSize, /*forwardWForm=*/true}));
    pm.addNestedPass<func::FuncOp>(linattn::createLinAttnStatePassToScan());
    break;
  }
  }
}

/// The state pass in segments of `segmentChunks` chunks where its
/// transitions are scalars; none for 0 (the pass rejects a negative count).
static void addSegmentPass(OpPassManager &pm, int64_t segmentChunks) {
  if (segmentChunks != 0)
    pm.addNestedPass<func::FuncOp>(linattn::createLinAttnSegmentChunkStates(
        linattn::LinAttnSegmentChunkStatesOptions{
            segmentChunks, /*maxStateColumns=*/0, /*maxDenseStateColumns=*/0}));
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

/// Tensors to buffers, across function boundaries, with plain (identity
/// layout) memrefs in signatures so C callers pass dense descriptors.
/// Buffers are not freed here: each pipeline frees the intermediates its
/// own way (without that every call leaks them, the chunk states among
/// them).
static void addBufferization(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  // A scan's accumulator is a fresh value every step (the combiner's
  // result), not an in-place update of the loop-carried buffer.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
}

void linattn::buildLinAttnToCPUPipeline(OpPassManager &pm,
                                        const LinAttnToCPUOptions &options) {
  addAlgorithmPasses(pm, options.strategy, options.chunkSize, options.smCount,
                     /*gpuKernels=*/false);
  addSegmentPass(pm, options.segmentChunks);
  // Every algorithm op to loops; elementwise tensor math (scan combiners)
  // to linalg so that it bufferizes.
  pm.addNestedPass<func::FuncOp>(createConvertLinAttnToLoops());
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());

  addBufferization(pm);
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
  addAlgorithmPasses(pm, options.strategy, options.chunkSize, smCount,
                     /*gpuKernels=*/true, options.chip);
  // auto without a forced segment length: segments and narrow or wide
  // state-pass blocks are chosen at run time from B (and T).
  bool shapeAtRunTime =
      options.segmentChunks == 0 && options.strategy == linattn::Strategy::Auto;
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
    addSegmentPass(pm, options.segmentChunks);
  if (shapeAtRunTime) {
    addRuntimeNarrowStatePass(pm, smCount);
    addRuntimeWideStatePass(pm, smCount);
  }
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
  addBufferization(pm);
  pm.addNestedPass<func::FuncOp>(createConvertLinAttnLinalgToGPU());
  // (convert-linattn-to-gpu frees the device intermediates.)
  pm.addPass(createConvertLinAttnToGPU(
      ConvertLinAttnToGPUOptions{options.maxUnroll}));
  pm.addPass(createCanonicalizerPass());
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
