//===- GPUCostModel.h - The GPU kernels' fitted times -----------*- C++ -*-===//
//
// What linattn-select-strategy{gpu-kernels=true} chooses by: the time of a
// call through the recurrent kernel and through the chunked kernels, as
// formulas whose constants are fitted to the kernels' measured times on
// the H200 (bench/gpu/fit_cost_model.py on bench/gpu/strategy_grid.py's
// grid; docs/gpu-strategy.md shows the fit against the measurements):
//
//   recurrent  r0 + T (max(r1 + r5 n, r6 + r2 B HV K V_b / SMs) + r4 l2)
//                 + r3 8 B HV K V
//   chunked    c0 + c1 B T (2 H K' + 2 HV V') e + c2 8 B HV K' V'
//                 + c3 ceil(T / 64) ceil(B HV V' / 32 / SMs) K' / 128
//                   (or c4 ceil(T / 64) ceil(B HV V' / 64 / SMs) K' / 128
//                    where the state pass runs 64-column blocks)
//                 + p0 + p1 (the padding copies' bytes)
//
// (n the multiply-adds a thread chains in a token step,
// recurrent_kernel::chainedKeysPerStep; V_b V rounded up to the recurrent
// kernel's blocks of recurrent_kernel::columnsPerBlock columns; l2 = 1
// with {qk_l2norm}; e the bytes of a q, k, v element; 8 B HV K V the f32
// state read and written; K' and V' the sizes the chunked kernels
// run, K and V padded to chunked_kernels::paddedHeadDim; p0 and p1 the
// launches and bytes of linattn-pad-head-dims' copies where they differ.)
// Each family -- with or without the rank-1 term, row or per-key gates,
// 16-bit or f32 inputs -- has its own r and c; p0 and p1 are one pair for
// all.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_TRANSFORMS_GPUCOSTMODEL_H
#define LINATTN_TRANSFORMS_GPUCOSTMODEL_H

#include "LinAttn/Transforms/CostModel.h"

#include <cstdint>
#include <string>

namespace mlir::linattn {

/// One path's estimated time and the terms it adds up.
struct GPUPathEstimate {
  double seconds = 0.0;
  std::string detail;
};

/// A call of `shape` on a GPU of `smCount` SMs through each path.
GPUPathEstimate estimateRecurrentCall(const ProblemShape &shape,
                                      int64_t smCount);
GPUPathEstimate estimateChunkedCall(const ProblemShape &shape,
                                    int64_t smCount);

/// The largest T (up to kMaxRecurrentSeqLen) at which the recurrent kernel
/// is estimated faster than the chunked ones at `shape`'s batch (its time
/// under `margin` times theirs); 0 if at none. The two cross once: the
/// recurrent time grows by a token step per token, the chunked one by a
/// chunk step per 64.
int64_t lastRecurrentSeqLen(ProblemShape shape, int64_t smCount,
                            double margin = 1.0);
/// The margin a dynamic B's per-batch limits ask of the model past the
/// limit every planned batch shares: there the recurrent kernel runs only
/// where its estimate is under this fraction of the chunked one's. The
/// chunked families' 90th-percentile error is 8-18% (docs/gpu-strategy.md),
/// and the ranges past B = 256 and T = 128 are extrapolated (the grid's
/// B T <= 32768).
constexpr double kPerBatchLimitMargin = 0.85;
constexpr int64_t kMaxRecurrentSeqLen = 256;

} // namespace mlir::linattn

#endif // LINATTN_TRANSFORMS_GPUCOSTMODEL_H
