//===- GPUCostModel.cpp - The GPU kernels' fitted times -------------------===//

#include "LinAttn/Transforms/GPUCostModel.h"

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

// BEGIN FITTED CONSTANTS: bench/results/gpu_cost_model_fit.json, made by
//   /usr/bin/python3 bench/gpu/fit_cost_model.py \
//       bench/results/gpu_strategy_grid_h200.jsonl --json bench/results/gpu_cost_model_fit.json
// from the H200 grid (402 calls; bench/NOTES.md f1, d4). test/Transforms/
// gpu-cost-model-fit.test checks these against that file.
constexpr RecurrentFit kRecurrentFits[] = {
    {"recurrent", 4.332e-06, 5.203e-07, 3.789e-11, 2.3e-13, 0},
    {"recurrent_delta", 4.091e-06, 5.661e-07, 6.464e-11, 2.088e-13, 2.103e-08},
    {"recurrent_keygates", 4.08e-06, 9.908e-07, 8.794e-11, 2.526e-13, 0},
    {"recurrent_delta_keygates", 4.371e-06, 8.681e-07, 9.502e-11, 2.303e-13, 0},
};
constexpr ChunkedFit kChunkedFits[] = {
    {"chunked", 9.519e-06, 3.734e-13, 4.007e-13, 9.2e-07},
    {"chunked_delta", 1.597e-05, 1.174e-12, 7.283e-13, 2.101e-06},
    {"chunked_keygates", 1.401e-05, 1.153e-12, 5.386e-13, 1.051e-06},
    {"chunked_delta_keygates", 2.66e-05, 2.178e-12, 8.817e-13, 2.413e-06},
};
// END FITTED CONSTANTS

/// The family's index: rank-1 term, then per-key gates (the tables' order).
int familyOf(const ProblemShape &s) {
  return (s.perKeyGates ? 2 : 0) + (s.deltaRule ? 1 : 0);
}

std::string microseconds(double seconds) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.1f us", seconds * 1e6);
  return text;
}

double stateBytes(const ProblemShape &s) {
  return 8.0 * s.batch * s.numVHeads * s.keyDim * s.valueDim;
}

} // namespace

GPUPathEstimate estimateRecurrentCall(const ProblemShape &s,
                                      int64_t smCount) {
  const RecurrentFit &f = kRecurrentFits[familyOf(s)];
  double perToken =
      f.tokenStep +
      f.tokenStepPerStateElement * s.batch * s.numVHeads * s.keyDim *
          s.valueDim / smCount +
      (s.qkL2Norm ? f.l2NormStep : 0.0);
  double state = f.stateByte * stateBytes(s);
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
  const ChunkedFit &f = kChunkedFits[familyOf(s)];
  double streamed = f.streamedByte * s.batch * s.seqLen *
                    (2.0 * s.numQKHeads * s.keyDim +
                     2.0 * s.numVHeads * s.valueDim) *
                    s.elementBytes;
  double state = f.stateByte * stateBytes(s);
  int64_t chunks = (s.seqLen + 63) / 64;
  int64_t waves =
      (s.batch * s.numVHeads * s.valueDim / 32 + smCount - 1) / smCount;
  double chain = f.chunkStep * chunks * waves * s.keyDim / 128.0;
  GPUPathEstimate e;
  e.seconds = f.launches + streamed + state + chain;
  e.detail = "launches " + microseconds(f.launches) + " + streamed " +
             microseconds(streamed) + " + state " + microseconds(state) +
             " + " + std::to_string(chunks) + " chunk steps x " +
             std::to_string(waves) + " wave(s) " + microseconds(chain) + " (" +
             f.family + ")";
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
