//===- GPUCostModel.cpp - The GPU kernels' fitted times -------------------===//

#include "LinAttn/Transforms/GPUCostModel.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

namespace mlir::linattn {
namespace {

/// One kernel family's fitted constants (seconds; per byte, per token, per
/// chunk step as the formula in GPUCostModel.h has them).
struct RecurrentFit {
  const char *family;
  double launch, tokenStep, tokenStepPerStateElement, stateByte, l2NormStep,
      tokenStepPerChainedKey, tokenStepAtThroughput;
};
struct ChunkedFit {
  const char *family;
  double launches, streamedByte, stateByte, chunkStep, wideChunkStep;
};
/// The padding copies' constants, every family's (linattn-pad-head-dims).
struct PaddingFit {
  const char *name;
  double launches, byte;
};

// BEGIN FITTED CONSTANTS: bench/results/gpu_cost_model_fit.json, made by
//   /usr/bin/python3 bench/gpu/fit_cost_model.py \
//       bench/results/gpu_strategy_grid_h200.jsonl --json
//       bench/results/gpu_cost_model_fit.json
// from the H200 grid (890 calls: the recurrent rows from one lease, the
// chunked ones, on the run-time state-pass forms, and the T = 128 rows from
// two more; bench/NOTES.md f1, p3, g2, g4, g5).
// test/Transforms/gpu-cost-model-fit.test checks these against that file,
// and the estimates below (paddingBytes included) against
// fit_cost_model.py --predict.
constexpr RecurrentFit kRecurrentFits[] = {
    {"recurrent_delta", 4.822e-06, 9.08e-08, 2.791e-11, 2.195e-13, 2.629e-08,
     5.409e-09, 1.798e-07},
    {"recurrent", 4.947e-06, 2.85e-07, 1.924e-11, 2.32e-13, 0, 0, 1.448e-07},
    {"recurrent_keygates", 5.177e-06, 3.374e-07, 2.681e-11, 2.182e-13, 0, 0,
     1.368e-07},
    {"recurrent_delta_keygates", 5.324e-06, 4.909e-07, 3.273e-11, 2.233e-13, 0,
     0, 2.175e-07},
    {"recurrent_delta_f32", 5.166e-06, 4.373e-07, 2.527e-11, 2.21e-13, 0, 0,
     2.196e-07},
    {"recurrent_f32", 4.976e-06, 2.785e-07, 1.909e-11, 2.348e-13, 0, 0,
     1.466e-07},
    {"recurrent_keygates_f32", 5.162e-06, 3.309e-07, 2.64e-11, 2.282e-13, 0, 0,
     1.467e-07},
    {"recurrent_delta_keygates_f32", 5.192e-06, 4.874e-07, 3.152e-11, 2.249e-13,
     0, 0, 2.292e-07},
};
constexpr ChunkedFit kChunkedFits[] = {
    {"chunked_delta", 1.555e-05, 1.013e-12, 7.103e-13, 1.41e-06, 2.151e-06},
    {"chunked", 1.096e-05, 2.683e-13, 3.815e-13, 5.59e-07, 2.158e-06},
    {"chunked_keygates", 1.273e-05, 8.794e-13, 3.35e-13, 8.288e-07, 4.126e-06},
    {"chunked_delta_keygates", 2.604e-05, 1.617e-12, 4.831e-13, 1.599e-06,
     6.381e-06},
    {"chunked_delta_f32", 2.228e-05, 5.702e-13, 4.835e-13, 4.428e-06,
     1.183e-05},
    {"chunked_f32", 1.4e-05, 3.31e-13, 3.364e-13, 1.803e-06, 6.614e-06},
    {"chunked_keygates_f32", 1.607e-05, 8.725e-13, 3.242e-13, 3.236e-06,
     1.353e-05},
    {"chunked_delta_keygates_f32", 3.329e-05, 1.929e-12, 9.169e-13, 4.944e-06,
     1.474e-05},
};
constexpr PaddingFit kPaddingFit = {"padding", 5.483e-06, 3.435e-13};
// END FITTED CONSTANTS

/// The family's name as the fit has it: the path, then "_delta" (rank-1
/// term), "_keygates" (per-key gates), "_f32" (f32 inputs).
std::string familyName(StringRef path, const ProblemShape &s) {
  return (path + (s.deltaRule ? "_delta" : "") +
          (s.perKeyGates ? "_keygates" : "") +
          (s.elementBytes == 4 ? "_f32" : ""))
      .str();
}

/// The fit of `path`'s family for `s`: the grid has rows of every
/// combination (bench/NOTES.md f4 added f32 with per-key gates).
template <typename Fit, size_t N>
const Fit &fitFor(const Fit (&fits)[N], StringRef path, const ProblemShape &s) {
  std::string name = familyName(path, s);
  for (const Fit &f : fits)
    if (name == f.family)
      return f;
  llvm_unreachable("every family is fitted");
}

std::string microseconds(double seconds) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.1f us", seconds * 1e6);
  return text;
}

double stateBytes(const ProblemShape &s, int64_t keyDim, int64_t valueDim) {
  return 8.0 * s.batch * s.numVHeads * keyDim * valueDim;
}

/// Bytes linattn-pad-head-dims' copies read and write where the kernels
/// run K' x V' for K x V: q and k (and per-key gates, f32) to K', v to V'
/// and o back, the initial and final states (f32) both ways.
double paddingBytes(const ProblemShape &s, int64_t paddedK, int64_t paddedV) {
  if (paddedK == s.keyDim && paddedV == s.valueDim)
    return 0.0;
  double tokens = static_cast<double>(s.batch) * s.seqLen;
  double bytes = 2.0 * s.batch * s.numVHeads *
                 (s.keyDim * s.valueDim + paddedK * paddedV) * 4;
  if (paddedK != s.keyDim) {
    bytes += 2.0 * tokens * s.numQKHeads * (s.keyDim + paddedK) * s.elementBytes;
    if (s.perKeyGates)
      bytes += tokens * s.numVHeads * (s.keyDim + paddedK) * 4;
  }
  if (paddedV != s.valueDim)
    bytes += 2.0 * tokens * s.numVHeads * (s.valueDim + paddedV) * s.elementBytes;
  return bytes;
}

} // namespace

GPUPathEstimate estimateRecurrentCall(const ProblemShape &s,
                                      int64_t smCount) {
  const RecurrentFit &f = fitFor(kRecurrentFits, "recurrent", s);
  // The step's throughput is the blocks' columns', idle ones included.
  int64_t columns = recurrent_kernel::columnsPerBlock(s.keyDim, s.valueDim);
  int64_t blockColumns = (s.valueDim + columns - 1) / columns * columns;
  // A token step takes the longer of its dependent chain and, where the
  // state elements an SM steps are many, their throughput.
  double chained = f.tokenStep + f.tokenStepPerChainedKey *
                                     recurrent_kernel::chainedKeysPerStep(
                                         s.keyDim, s.valueDim);
  double throughput = f.tokenStepAtThroughput +
                      f.tokenStepPerStateElement * s.batch * s.numVHeads *
                          s.keyDim * blockColumns / smCount;
  double perToken =
      std::max(chained, throughput) + (s.qkL2Norm ? f.l2NormStep : 0.0);
  double state = f.stateByte * stateBytes(s, s.keyDim, s.valueDim);
  GPUPathEstimate e;
  e.seconds = f.launch + s.seqLen * perToken + state;
  e.detail = "launch " + microseconds(f.launch) + " + " +
             std::to_string(s.seqLen) + " token steps x " +
             microseconds(perToken) + " + state " + microseconds(state) +
             " (" + f.family + ")";
  return e;
}

GPUPathEstimate estimateChunkedCall(const ProblemShape &s,
                                    int64_t smCount) {
  const ChunkedFit &f = fitFor(kChunkedFits, "chunked", s);
  int64_t K = chunked_kernels::paddedHeadDim(s.keyDim);
  int64_t V = chunked_kernels::paddedHeadDim(s.valueDim);
  double streamed = f.streamedByte * s.batch * s.seqLen *
                    (2.0 * s.numQKHeads * K + 2.0 * s.numVHeads * V) *
                    s.elementBytes;
  double state = f.stateByte * stateBytes(s, K, V);
  int64_t chunks = (s.seqLen + 63) / 64;
  // The state pass's blocks as linattn-widen-state-blocks chooses them at
  // run time: 64 columns past one wave of 32-column blocks, where V takes
  // them.
  int64_t stateColumns = s.batch * s.numVHeads * V;
  bool wide = chunked_kernels::hasWideStateBlocks(V) &&
              stateColumns > chunked_kernels::manyChainsStateColumns(smCount);
  int64_t blockColumns = wide ? chunked_kernels::kWideStateColumns
                              : chunked_kernels::kStateColumns;
  int64_t blocks =
      s.batch * s.numVHeads * ((V + blockColumns - 1) / blockColumns);
  int64_t waves = (blocks + smCount - 1) / smCount;
  double chain =
      (wide ? f.wideChunkStep : f.chunkStep) * chunks * waves * K / 128.0;
  double paddedBytes = paddingBytes(s, K, V);
  double padding =
      paddedBytes > 0.0 ? kPaddingFit.launches + kPaddingFit.byte * paddedBytes
                        : 0.0;
  GPUPathEstimate e;
  e.seconds = f.launches + streamed + state + chain + padding;
  e.detail = "launches " + microseconds(f.launches) + " + streamed " +
             microseconds(streamed) + " + state " + microseconds(state) +
             " + " + std::to_string(chunks) + " chunk steps x " +
             std::to_string(waves) + " wave(s)" +
             (wide ? " of 64-column blocks " : " ") + microseconds(chain);
  if (padding > 0.0)
    e.detail += " + padding to K = " + std::to_string(K) + ", V = " +
                std::to_string(V) + " " + microseconds(padding);
  e.detail += " (" + std::string(f.family) + ")";
  return e;
}

int64_t lastRecurrentSeqLen(ProblemShape shape, int64_t smCount,
                            double margin) {
  int64_t last = 0;
  for (int64_t t = 1; t <= kMaxRecurrentSeqLen; ++t) {
    shape.seqLen = t;
    if (estimateRecurrentCall(shape, smCount).seconds >=
        margin * estimateChunkedCall(shape, smCount).seconds)
      break;
    last = t;
  }
  return last;
}

} // namespace mlir::linattn
