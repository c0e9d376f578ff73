//===- CostModel.cpp - Estimated run time of each strategy ----------------===//
//
// N = B * HV independent (sequence, value head) lanes, P SMs.
//
//   memory floor   t_mem = (B T (2 H K + 2 HV V) e + 2 N K V 4) / BW
//   recurrent      t = T * (c_rec K) * ceil(N ceil(V / BV_r) / P) + launch
//   scan (tokens)  t = (2 N T K V 4) / BW + 2 launch      (diagonal kinds)
//   chunked C      t = max(t_mem, F / (R util)) + NC (a + b C) waves + 3 launch
//   segment-scan   t = max(t_mem, (F + F_M) / (R util))
//                      + ceil(NC / S) (a + b C) waves + log2(S) t_combine
//                      + 4 launch,  S = max(1, floor(P / (N ceil(V / BV_c))))
//
// with F the intra-chunk matrix FLOPs, F_M the extra FLOPs of dense chunk
// transitions, R the tensor-core rate and util = min(1, N NC / P).
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/CostModel.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

namespace mlir::linattn {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string microseconds(double seconds) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.1f us", seconds * 1e6);
  return s;
}

} // namespace

TargetModel TargetModel::of(const GPUTargetInfo &target) {
  TargetModel model;
  model.smCount = target.smCount();
  return model;
}

std::string describe(const StrategyEstimate &e) {
  std::string s = stringifyStrategy(e.strategy).str();
  if (e.chunkSize)
    s += " C=" + std::to_string(e.chunkSize);
  if (e.segments)
    s += " S=" + std::to_string(e.segments);
  return s;
}

llvm::SmallVector<StrategyEstimate>
estimateStrategies(const ProblemShape &p, const TargetModel &t) {
  llvm::SmallVector<StrategyEstimate> out;
  const int64_t N = p.batch * p.numVHeads, T = std::max<int64_t>(p.seqLen, 1);
  const double K = p.keyDim, V = p.valueDim;
  const double ioBytes =
      double(p.batch) * T *
          (2.0 * p.numQKHeads * K + 2.0 * p.numVHeads * V) * p.elementBytes +
      2.0 * N * K * V * 4.0;
  const double tMem = ioBytes / t.memoryBandwidth;

  // Recurrent: N ceil(V / BV) blocks, each a chain of T token steps.
  {
    StrategyEstimate e;
    e.strategy = Strategy::Recurrent;
    int64_t blocks = N * ceilDiv(p.valueDim, t.recurrentBlockV);
    int64_t waves = ceilDiv(blocks, t.smCount);
    double step = t.recurrentStepPerKey * K * (p.deltaRule ? 1.0 : 0.6);
    e.seconds = T * step * waves + t.launchSeconds;
    e.detail = std::to_string(T) + " token steps x " + microseconds(step) +
               " x " + std::to_string(waves) + " wave(s) of " +
               std::to_string(blocks) + " blocks";
    out.push_back(e);
  }

  // Token scan: every S_t is materialised (written, then read back).
  {
    StrategyEstimate e;
    e.strategy = Strategy::Scan;
    if (p.deltaRule) {
      e.applicable = false;
      e.detail = "not applicable: a delta rule's composed transition is a "
                 "dense K x K matrix";
    } else {
      double bytes = 2.0 * N * T * K * V * 4.0;
      e.seconds = std::max(tMem, bytes / t.memoryBandwidth) +
                  2 * t.launchSeconds;
      e.detail = "materialises N T K V states: " + microseconds(e.seconds);
    }
    out.push_back(e);
  }

  for (bool segmented : {false, true}) {
    for (int64_t C : {16, 32, 64}) {
      StrategyEstimate e;
      e.strategy = segmented ? Strategy::SegmentScan : Strategy::Chunked;
      e.chunkSize = C;
      int64_t NC = ceilDiv(T, C);
      // Per token: Q K^T and the masked scores times D (2 C (K + V)), the
      // UT products for delta rules (2 C (K + V) more), and the state
      // products Q S, K^T D (and W S): 2 K V each.
      double perToken = 2.0 * C * (K + V) * (p.deltaRule ? 2.0 : 1.0) +
                        2.0 * K * V * (p.deltaRule ? 3.0 : 2.0);
      double flops = double(N) * T * perToken;
      double util = std::min(1.0, double(N) * NC / t.smCount);
      double stepSeconds = t.chunkStepBase + t.chunkStepPerToken * C;
      int64_t stateBlocks = N * ceilDiv(p.valueDim, t.chunkBlockV);
      int64_t segments = 1;
      double extra = 0.0;
      if (segmented) {
        segments = std::max<int64_t>(
            1, std::min<int64_t>(NC, t.smCount / std::max<int64_t>(
                                                      stateBlocks, 1)));
        e.segments = segments;
        // Dense chunk transitions: K^T W per chunk (2 C K K), and each
        // combine level composes K x K maps and K x V offsets per lane.
        double transitionFlops =
            p.deltaRule ? double(N) * NC * 2.0 * C * K * K : 0.0;
        double combineFlops =
            double(N) * segments * 2.0 * K * (p.deltaRule ? K + V : V);
        double combineSeconds =
            combineFlops / t.tensorFlops + t.chunkStepBase;
        flops += transitionFlops;
        extra = std::ceil(std::log2(double(segments))) * combineSeconds +
                t.launchSeconds;
      }
      int64_t waves = ceilDiv(stateBlocks * segments, t.smCount);
      int64_t chain = ceilDiv(NC, segments);
      double tFlops = flops / (t.tensorFlops * util);
      e.seconds = std::max(tMem, tFlops) + chain * stepSeconds * waves +
                  extra + 3 * t.launchSeconds;
      e.detail = "max(memory " + microseconds(tMem) + ", tensor cores " +
                 microseconds(tFlops) + ") + " + std::to_string(chain) +
                 " chunk steps x " + microseconds(stepSeconds) + " x " +
                 std::to_string(waves) + " wave(s)";
      if (segmented)
        e.detail += " + " + std::to_string(segments) +
                    "-segment combine " + microseconds(extra);
      if (segmented && segments == 1) {
        e.applicable = false;
        e.detail = "not useful: the state pass already fills the SMs "
                   "(1 segment)";
      }
      out.push_back(e);
    }
  }
  return out;
}

StrategyEstimate chooseStrategy(const ProblemShape &shape,
                                const TargetModel &target) {
  llvm::SmallVector<StrategyEstimate> all = estimateStrategies(shape, target);
  const StrategyEstimate *best = nullptr;
  for (const StrategyEstimate &e : all)
    if (e.applicable && (!best || e.seconds < best->seconds))
      best = &e;
  return *best;
}

} // namespace mlir::linattn
