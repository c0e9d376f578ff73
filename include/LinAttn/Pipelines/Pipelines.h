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

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Transforms/Strategy.h"

namespace mlir::linattn {

/// The strategy names accepted on command lines, with their meaning.
inline llvm::cl::ValuesClass strategyOptionValues() {
  return llvm::cl::values(
      clEnumValN(Strategy::Auto, "auto",
                 "let linattn-select-strategy choose by shape (CPU: cost "
                 "model; GPU: the kernels' measured H200 times)"),
      clEnumValN(Strategy::Recurrent, "recurrent",
                 "the sequential loop over tokens"),
      clEnumValN(Strategy::Scan, "scan",
                 "associative scan of affine maps over tokens (kinds "
                 "without a rank-1 term)"),
      clEnumValN(Strategy::Chunked, "chunked",
                 "chunkwise two-pass (WY/UT form for delta rules)"),
      clEnumValN(Strategy::SegmentScan, "segment-scan",
                 "chunkwise, with a scan of chunk transitions instead of the "
                 "sequential state pass"));
}

/// Options of the `linattn-to-cpu` pipeline.
struct LinAttnToCPUOptions : public PassPipelineOptions<LinAttnToCPUOptions> {
  PassOptions::Option<Strategy> strategy{
      *this, "strategy", llvm::cl::desc("Algorithm for linattn.recurrence"),
      llvm::cl::init(Strategy::Auto), strategyOptionValues()};
  PassOptions::Option<int64_t> chunkSize{
      *this, "chunk-size",
      llvm::cl::desc("Tokens per chunk for the chunked strategies when forced "
                     "(auto takes the selector's)"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> segmentChunks{
      *this, "segment-chunks",
      llvm::cl::desc("Chunks per segment of the state pass where transitions "
                     "are scalars (linattn-segment-chunk-states; 0: one "
                     "segment)"),
      llvm::cl::init(0)};
  PassOptions::Option<int64_t> smCount{
      *this, "sm-count",
      llvm::cl::desc("SMs of the target the selector plans for (auto)"),
      llvm::cl::init(kHopperSMs)};
  PassOptions::Option<bool> emitCInterface{
      *this, "emit-c-interface",
      llvm::cl::desc("Emit _mlir_ciface_ wrappers for public functions"),
      llvm::cl::init(true)};
};

/// Options of the `linattn-to-nvvm` pipeline.
struct LinAttnToNVVMOptions : public PassPipelineOptions<LinAttnToNVVMOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip", llvm::cl::desc("GPU architecture (sm_90a for Hopper)"),
      llvm::cl::init("sm_90a")};
  PassOptions::Option<std::string> features{
      *this, "features", llvm::cl::desc("PTX features"),
      llvm::cl::init("+ptx80")};
  PassOptions::Option<int> optLevel{
      *this, "opt-level", llvm::cl::desc("Device code optimisation level"),
      llvm::cl::init(3)};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Kernel binary: 'isa' (PTX, needs no CUDA) or 'bin' "
                     "(cubin, needs ptxas)"),
      llvm::cl::init("bin")};
  PassOptions::Option<Strategy> strategy{
      *this, "strategy", llvm::cl::desc("Algorithm for linattn.recurrence"),
      llvm::cl::init(Strategy::Auto), strategyOptionValues()};
  PassOptions::Option<int64_t> chunkSize{
      *this, "chunk-size",
      llvm::cl::desc("Tokens per chunk for the chunked strategies"),
      llvm::cl::init(64)};
  PassOptions::Option<int64_t> segmentChunks{
      *this, "segment-chunks",
      llvm::cl::desc("Chunks per segment of the state pass where transitions "
                     "are scalars, in every call (linattn-segment-chunk-"
                     "states; 0: with strategy=auto or chunked, 16 where B * HV * V "
                     "<= 16 x 132 SMs and T spans several segments, chosen "
                     "at run time; else one segment)"),
      llvm::cl::init(0)};
  PassOptions::Option<bool> runTimeForms{
      *this, "run-time-forms",
      llvm::cl::desc("With strategy=auto or chunked and segment-chunks=0, "
                     "keep the chunked state pass's forms that each call "
                     "chooses from B and T (segments, narrow and wide "
                     "blocks); false: one form, the 32-column blocks"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> maxUnroll{
      *this, "max-unroll",
      llvm::cl::desc("Fully unroll constant loops of at most this many trips "
                     "in kernels (0: none)"),
      llvm::cl::init(256)};
  PassOptions::Option<bool> checkInputs{
      *this, "check-inputs",
      llvm::cl::desc("Each call first reports its first input element that "
                     "is not finite, a log gate above 0 or a beta outside "
                     "[0, 1] (linattn-insert-input-checks; copies the "
                     "inputs to the host and waits: for debugging)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> exactBackwardStates{
      *this, "exact-backward-states",
      llvm::cl::desc("The backward's recomputed chunk states stay f32 "
                     "(linattn-recurrence-grad-to-chunked{narrow-states="
                     "false}): dgate as exact where a chunk ends in one "
                     "token as elsewhere, the backward 4-7% slower "
                     "(bench/NOTES.md b22)"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> separateChunkOutput{
      *this, "separate-chunk-output",
      llvm::cl::desc("Keep the chunk outputs a kernel of their own, reading "
                     "the stored chunk states and new values, instead of "
                     "forming them in the state pass where its kernel can "
                     "(linattn-fuse-chunk-output): for measuring the fused "
                     "kernel against it"),
      llvm::cl::init(false)};
  PassOptions::Option<bool> explainKernels{
      *this, "explain-kernels",
      llvm::cl::desc("Remark on each chunked GPU kernel (UT transform, "
                     "state passes, output; the backward's reverse pass, "
                     "chunk_grad and qk_grad): "
                     "blocks, warps, stages, splits, shared memory "
                     "(convert-linattn-chunked-to-gpu{explain})"),
      llvm::cl::init(false)};
};

/// linattn ops on tensors -> (chosen algorithm) -> loops -> bufferized memrefs -> the
/// LLVM dialect, ready for mlir-translate --mlir-to-llvmir or the
/// ExecutionEngine.
void buildLinAttnToCPUPipeline(OpPassManager &pm,
                               const LinAttnToCPUOptions &options);

/// linattn ops on tensors -> (chosen algorithm) -> parallel loops mapped to
/// blocks and threads -> gpu.launch on device buffers -> NVVM kernels in a
/// gpu.binary plus host code calling the mgpu* runtime ABI, in the LLVM
/// dialect. Public functions get the C interface and take device pointers.
void buildLinAttnToNVVMPipeline(OpPassManager &pm,
                                const LinAttnToNVVMOptions &options);

/// Registers every LinAttn pipeline by name.
void registerLinAttnPipelines();

} // namespace mlir::linattn

#endif // LINATTN_PIPELINES_PIPELINES_H
