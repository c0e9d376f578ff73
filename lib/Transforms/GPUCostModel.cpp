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
// from the H200 grid (402 calls; bench/NOTES.md f1). test/Transforms/
// gpu-cost-model-fit.test checks these against that file.
constexpr RecurrentFit kRecurrentFits[] = {
    {"recurrent", 4.278e-06, 2.756e-06, 1.12e-10, 2.17e-13, 0},
    {"recurrent_delta", 4.077e-06, 8.008e-07, 8.228e-11, 2.158e-13, 1.287e-07},
    {"recurrent_keygates", 4.064e-06, 3.221e-06, 1.926e-10, 2.012e-13, 0},
    {"recurrent_delta_keygates", 4.233e-06, 1.739e-06, 1.564e-10, 2.169e-13, 0},
};
constexpr ChunkedFit kChunkedFits[] = {
    {"chunked", 9.577e-06, 3.758e-13, 4.05e-13, 9.25e-07},
    {"chunked_delta", 1.608e-05, 1.183e-12, 7.374e-13, 2.113e-06},
    {"chunked_keygates", 1.404e-05, 1.145e-12, 5.333e-13, 1.08e-06},
    {"chunked_delta_keygates", 2.685e-05, 2.22e-12, 9.041e-13, 2.35e-06},
};
// END FITTED CONSTANTS

/// The family's index: rank-1 term, then per-key gates (the tables' order).
int familyOf(const GPUCallShape &s) {
  return (s.perKeyGates ? 2 : 0) + (s.deltaRule ? 1 : 0);
}

std::string microseconds(double seconds) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.1f us", seconds * 1e6);
  return text;
}

double stateBytes(const GPUCallShape &s) {
  return 8.0 * s.batch * s.numVHeads * s.keyDim * s.valueDim;
}

} // namespace

GPUPathEstimate estimateRecurrentCall(const GPUCallShape &s) {
  const RecurrentFit &f = kRecurrentFits[familyOf(s)];
  double perToken =
      f.tokenStep +
      f.tokenStepPerStateElement * s.batch * s.numVHeads * s.keyDim *
          s.valueDim / s.smCount +
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

GPUPathEstimate estimateChunkedCall(const GPUCallShape &s) {
  const ChunkedFit &f = kChunkedFits[familyOf(s)];
  double streamed = f.streamedByte * s.batch * s.seqLen *
                    (2.0 * s.numQKHeads * s.keyDim +
                     2.0 * s.numVHeads * s.valueDim) *
                    s.elementBytes;
  double state = f.stateByte * stateBytes(s);
  int64_t chunks = (s.seqLen + 63) / 64;
  int64_t waves = (s.batch * s.numVHeads * s.valueDim / 32 + s.smCount - 1) /
                  s.smCount;
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

int64_t lastRecurrentSeqLen(GPUCallShape shape) {
  int64_t last = 0;
  for (int64_t t = 1; t <= kMaxRecurrentSeqLen; ++t) {
    shape.seqLen = t;
    if (estimateRecurrentCall(shape).seconds >=
        estimateChunkedCall(shape).seconds)
      break;
    last = t;
  }
  return last;
}

} // namespace mlir::linattn
