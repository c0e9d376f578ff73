//===- CostModel.h - Estimated run time of each strategy --------*- C++ -*-===//
//
// The model linattn-select-strategy ranks algorithms with. Every estimate
// is max(memory floor, tensor-core floor) plus the latency of the
// algorithm's sequential chain plus kernel launches; docs/algorithms.md
// derives the formulas and says where each constant comes from.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_TRANSFORMS_COSTMODEL_H
#define LINATTN_TRANSFORMS_COSTMODEL_H

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Transforms/Strategy.h"

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace mlir::linattn {

/// What the model knows of the target (defaults: one NVIDIA H200; the GPU
/// facts are TargetInfo.h's).
struct TargetModel {
  /// The model of `target`: its SMs, the kernels' block widths.
  static TargetModel of(const GPUTargetInfo &target);

  int64_t smCount = kHopperSMs;
  /// Device copy bandwidth, bytes read + written per second (PEERS.md).
  double memoryBandwidth = 4.27e12;
  /// Dense bf16 tensor-core rate, FLOP/s (8192^3 matmul, PEERS.md).
  double tensorFlops = 700e12;
  /// Launch cost of one kernel replayed from a CUDA graph, seconds.
  double launchSeconds = 2.5e-6;
  /// One token step of the recurrent kernel per key row, seconds: fla's
  /// fused recurrent gated delta (K = V = 128, one wave) takes 1.31 us per
  /// token (PEERS.md), 10.2 ns per key row.
  double recurrentStepPerKey = 10.2e-9;
  /// One chunk step of the inter-chunk state pass: a + b * C seconds
  /// (a state tile update K x C x BV on tensor cores plus its barrier).
  double chunkStepBase = 1.0e-6;
  double chunkStepPerToken = 20e-9;
  /// Value columns one block of the recurrent kernel owns, and of the
  /// chunked state pass.
  int64_t recurrentBlockV = 32;
  int64_t chunkBlockV = chunked_kernels::kStateColumns;
};

/// The problem a recurrence poses.
struct ProblemShape {
  int64_t batch = 1;         ///< B
  int64_t seqLen = 1;        ///< T
  int64_t numQKHeads = 1;    ///< H
  int64_t numVHeads = 1;     ///< HV
  int64_t keyDim = 1;        ///< K
  int64_t valueDim = 1;      ///< V
  int64_t elementBytes = 2;  ///< bytes of q, k, v and o elements
  bool deltaRule = false;    ///< M_t has the rank-1 term
  bool perKeyGates = false;  ///< gates [B, T, HV, K]
  bool qkL2Norm = false;     ///< q and k normalised in the op
};

/// One candidate and its estimate.
struct StrategyEstimate {
  Strategy strategy = Strategy::Recurrent;
  int64_t chunkSize = 0;     ///< chunked and segment-scan
  int64_t segments = 0;      ///< segment-scan: segments the chunks split into
  bool applicable = true;
  double seconds = 0.0;
  std::string detail;        ///< the terms of the formula, for --linattn-explain
};

/// Every candidate (recurrent, scan, chunked and segment-scan at chunk sizes
/// 16, 32 and 64), applicable or not, in a fixed order.
llvm::SmallVector<StrategyEstimate> estimateStrategies(const ProblemShape &shape,
                                                       const TargetModel &target);

/// The fastest applicable candidate.
StrategyEstimate chooseStrategy(const ProblemShape &shape,
                                const TargetModel &target);

/// "segment-scan C=64", "recurrent", ...
std::string describe(const StrategyEstimate &estimate);

} // namespace mlir::linattn

#endif // LINATTN_TRANSFORMS_COSTMODEL_H
