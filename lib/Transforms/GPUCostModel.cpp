//===- GPUCostModel.cpp - The GPU kernels' fitted times -------------------===//

#include "LinAttn/Transforms/GPUCostModel.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace mlir::linattn {
namespace {

/// One kernel family's fitted constants (seconds; per byte, per token, per
/// chunk step as the formula in GPUCostModel.h has them).
struct RecurrentFit {
  const char *family;
  double launch, tokenStep, tokenStepPerStateElement, stateByte, l2NormStep,
      tokenStepPerChainedKey;
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
// from the H200 grid (890 calls; the chunked rows at B >= 16 and the T = 128
// rows from a second lease, on the run-time state-pass forms: bench/NOTES.md
// f1, p3, g2, g4).
// test/Transforms/gpu-cost-model-fit.test checks these against that file,
// and the estimates below (paddingBytes included) against
// fit_cost_model.py --predict.
constexpr RecurrentFit kRecurrentFits[] = {
    {"recurrent_delta", 4.791e-06, 1.209e-07, 2.525e-11, 2.248e-13, 1.87e-08,
     3.531e-09},
    {"recurrent", 4.931e-06, 2.465e-07, 1.668e-11, 2.373e-13, 0, 0},
    {"recurrent_keygates", 5.126e-06, 2.869e-07, 2.292e-11, 2.252e-13, 0, 0},
    {"recurrent_delta_keygates", 5.289e-06, 4.164e-07, 2.778e-11, 2.31e-13, 0,
     0},
    {"recurrent_delta_f32", 5.151e-06, 3.741e-07, 2.157e-11, 2.273e-13, 0, 0},
    {"recurrent_f32", 4.958e-06, 2.421e-07, 1.671e-11, 2.397e-13, 0, 0},
    {"recurrent_keygates_f32", 5.116e-06, 2.857e-07, 2.239e-11, 2.366e-13, 0,
     0},
    {"recurrent_delta_keygates_f32", 5.159e-06, 4.176e-07, 2.658e-11, 2.332e-13,
     0, 0},
};
constexpr ChunkedFit kChunkedFits[] = {
    {"chunked_delta", 1.553e-05, 9.843e-13, 6.933e-13, 1.709e-06, 2.321e-06},
    {"chunked", 1.053e-05, 2.633e-13, 3.841e-13, 8.944e-07, 2.2e-06},
    {"chunked_keygates", 1.275e-05, 8.77e-13, 3.335e-13, 1.021e-06, 4.137e-06},
    {"chunked_delta_keygates", 2.615e-05, 1.619e-12, 4.829e-13, 1.965e-06,
     6.367e-06},
    {"chunked_delta_f32", 2.229e-05, 5.707e-13, 4.838e-13, 4.199e-06,
     1.183e-05},
    {"chunked_f32", 1.306e-05, 3.245e-13, 3.43e-13, 2.549e-06, 6.735e-06},
    {"chunked_keygates_f32", 1.615e-05, 8.732e-13, 3.238e-13, 3.027e-06,
     1.352e-05},
    {"chunked_delta_keygates_f32", 3.296e-05, 1.93e-12, 9.242e-13, 5.25e-06,
     1.475e-05},
};
constexpr PaddingFit kPaddingFit = {"padding", 5.556e-06, 3.296e-13};
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
  double perToken =
      f.tokenStep +
      f.tokenStepPerChainedKey *
          recurrent_kernel::chainedKeysPerStep(s.keyDim, s.valueDim) +
      f.tokenStepPerStateElement * s.batch * s.numVHeads * s.keyDim *
          blockColumns / smCount +
      (s.qkL2Norm ? f.l2NormStep : 0.0);
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
