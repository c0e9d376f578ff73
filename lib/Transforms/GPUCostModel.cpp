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
  double launch, tokenStep, tokenStepPerStateElement, stateByte, l2NormStep;
};
struct ChunkedFit {
  const char *family;
  double launches, streamedByte, stateByte, chunkStep;
};
/// The padding copies' constants, every family's (linattn-pad-head-dims).
struct PaddingFit {
  const char *name;
  double launches, byte;
};

// BEGIN FITTED CONSTANTS: bench/results/gpu_cost_model_fit.json, made by
//   /usr/bin/python3 bench/gpu/fit_cost_model.py \
//       bench/results/gpu_strategy_grid_h200.jsonl --json bench/results/gpu_cost_model_fit.json
// from the H200 grid (804 calls; bench/NOTES.md f1, d4, p3, p4, f4). test/Transforms/
// gpu-cost-model-fit.test checks these against that file, and the estimates
// below (paddingBytes included) against fit_cost_model.py --predict.
constexpr RecurrentFit kRecurrentFits[] = {
    {"recurrent_delta", 4.133e-06, 5.598e-07, 6.705e-11, 2.131e-13, 7.819e-09},
    {"recurrent", 4.332e-06, 5.203e-07, 3.789e-11, 2.3e-13, 0},
    {"recurrent_keygates", 4.08e-06, 9.908e-07, 8.794e-11, 2.526e-13, 0},
    {"recurrent_delta_keygates", 4.371e-06, 8.681e-07, 9.502e-11, 2.303e-13, 0},
    {"recurrent_delta_f32", 4.442e-06, 7.25e-07, 1.151e-10, 2.363e-13, 0},
    {"recurrent_f32", 4.099e-06, 9.616e-07, 1.114e-10, 2.601e-13, 0},
    {"recurrent_keygates_f32", 3.905e-06, 1.286e-06, 1.652e-10, 2.726e-13, 0},
    {"recurrent_delta_keygates_f32", 4.047e-06, 1.155e-06, 1.707e-10, 2.526e-13, 0},
};
constexpr ChunkedFit kChunkedFits[] = {
    {"chunked_delta", 1.597e-05, 1.174e-12, 7.283e-13, 2.101e-06},
    {"chunked", 9.519e-06, 3.734e-13, 4.007e-13, 9.2e-07},
    {"chunked_keygates", 1.401e-05, 1.153e-12, 5.386e-13, 1.051e-06},
    {"chunked_delta_keygates", 2.66e-05, 2.178e-12, 8.817e-13, 2.413e-06},
    {"chunked_delta_f32", 2.015e-05, 8.483e-13, 1.018e-12, 6.181e-06},
    {"chunked_f32", 1.133e-05, 5.521e-13, 1.001e-12, 3.34e-06},
    {"chunked_keygates_f32", 1.82e-05, 1.312e-12, 1.165e-12, 3.758e-06},
    {"chunked_delta_keygates_f32", 3.484e-05, 2.159e-12, 1.626e-12, 5.728e-06},
};
constexpr PaddingFit kPaddingFit = {"padding", 5.733e-06, 3.232e-13};
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
  double perToken =
      f.tokenStep +
      f.tokenStepPerStateElement * s.batch * s.numVHeads * s.keyDim *
          s.valueDim / smCount +
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
  int64_t waves = (s.batch * s.numVHeads * V / 32 + smCount - 1) / smCount;
  double chain = f.chunkStep * chunks * waves * K / 128.0;
  double paddedBytes = paddingBytes(s, K, V);
  double padding =
      paddedBytes > 0.0 ? kPaddingFit.launches + kPaddingFit.byte * paddedBytes
                        : 0.0;
  GPUPathEstimate e;
  e.seconds = f.launches + streamed + state + chain + padding;
  e.detail = "launches " + microseconds(f.launches) + " + streamed " +
             microseconds(streamed) + " + state " + microseconds(state) +
             " + " + std::to_string(chunks) + " chunk steps x " +
             std::to_string(waves) + " wave(s) " + microseconds(chain);
  if (padding > 0.0)
    e.detail += " + padding to K = " + std::to_string(K) + ", V = " +
                std::to_string(V) + " " + microseconds(padding);
  e.detail += " (" + std::string(f.family) + ")";
  return e;
}

int64_t lastRecurrentSeqLen(ProblemShape shape, int64_t smCount) {
  int64_t last = 0;
  for (int64_t t = 1; t <= kMaxRecurrentSeqLen; ++t) {
    shape.seqLen = t;
    if (estimateRecurrentCall(shape, smCount).seconds >=
        estimateChunkedCall(shape, smCount).seconds)
      break;
    last = t;
  }
  return last;
}

} // namespace mlir::linattn
