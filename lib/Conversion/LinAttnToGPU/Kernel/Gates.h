//===- Gates.h - Log gates inside a chunked kernel --------------*- C++ -*-===//
//
// Reading raw and cumulative log gates, summing a chunk's gates, and
// decaying staged rows by them: what every gated kernel shares. Gates stay
// in log space; only differences G_i - G_j with i >= j (<= 0) and G itself
// are exponentiated.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_KERNEL_GATES_H
#define LIB_CONVERSION_LINATTNTOGPU_KERNEL_GATES_H

#include "KernelEmitter.h"

namespace mlir::linattn::kernel {

/// Reads the gate at (b, t, hv[, key]): from its buffer, or, for a gate made
/// by `tensor.generate` (constant decays), by inlining the generator; a 1-D
/// constant tensor it extracts from becomes a constant vector so that the
/// kernel does not read host memory.
class GateReader {
public:
  GateReader(LoopEmitter &e, Value gate);

  Value read(ImplicitLocOpBuilder &b, ValueRange indices);

  /// Size of dimension d of the gate (a generator's extents are read from
  /// its operands, so that nothing keeps it alive).
  Value size(int64_t d);

private:
  /// Pure arithmetic on indices and 1-D constant tensors only.
  static bool inlinable(tensor::GenerateOp op);

  LoopEmitter &e;
  tensor::GenerateOp generator;
  Value buffer;
};

/// Copies per-row gate values G[b, t0 + r, hv] (0 at or past `valid`, and
/// without gates) into a shared vector of `numRows` (at most the block's
/// threads).
void fillRowGates(KernelEmitter &k, Value dst, Value gates, Value bIdx,
                  ChunkRows rows, Value hv, int64_t numRows = kChunk);
/// The same for per-row values read by `row(t)` (t a token of the chunk
/// below `valid`; 0 beyond): thread r writes row r, so that it may read
/// its own row back without a barrier.
void fillRowScalars(KernelEmitter &k, Value dst, ChunkRows rows,
                    function_ref<Value(Value)> row, int64_t numRows = kChunk);

/// fillRowScalars in two halves, so that a kernel can issue the read ahead
/// of its tiles' loads and store it once they are in flight: the calling
/// thread's value of row tid (0 at or past `valid`; the threads past the
/// chunk's rows read its last valid row, in bounds, and get 0)...
Value readRowScalar(KernelEmitter &k, ChunkRows rows,
                    function_ref<Value(Value)> row);
/// ... and their stores, each (x, dst) as dst[tid] = x by the threads
/// below `numRows` (one branch for them all).
void storeRowScalars(KernelEmitter &k,
                     ArrayRef<std::pair<Value, Value>> valuesAndDsts,
                     int64_t numRows = kChunk);

/// One chunk's cumulative scalar log gates, summed by the calling warp:
///   G_t = sum_{s <= t} g_s   (t within the chunk of `rowsPerChunk`),
/// lane l gets G_{jl}, ..., G_{jl + j - 1} for j = rowsPerChunk / 32 (2
/// or 4) from its j raw gates (0 at or past `rows.valid`, which must be at
/// least 1: the last valid row is read in place of the others). A
/// Hillis-Steele scan over the 32 lanes' sums (shuffles up by 1, 2, 4, 8,
/// 16), then each lane's own prefix: the 32 lanes share what one thread
/// per chunk did as 64 dependent adds and 64 guarded stores.
SmallVector<Value> warpChunkCumsum(KernelEmitter &k, GateReader &gate, Value bIdx,
                                   ChunkRows rows, Value hv,
                                   int64_t rowsPerChunk = kChunk);
/// warpChunkCumsum in two halves (as readRowScalar and storeRowScalars):
/// the lane's raw gates, then their sums.
SmallVector<Value> readChunkGates(KernelEmitter &k, GateReader &gate, Value bIdx,
                                  ChunkRows rows, Value hv,
                                  int64_t rowsPerChunk = kChunk);
SmallVector<Value> sumChunkGates(KernelEmitter &k, ArrayRef<Value> raw);

/// Stores the calling warp's G_{jl}, ..., G_{jl + j - 1} of a chunk (j =
/// sums.size()): into `dst` at G[b, t0 + r, hv] for rows r below
/// `rows.valid`, and into the shared vector `rowShared` (when given) at r,
/// 0 at or past `rows.valid`.
void storeChunkCumsum(KernelEmitter &k, ArrayRef<Value> sums, Value dst,
                      Value rowShared, Value bIdx, ChunkRows rows, Value hv);

/// Decays a staged chunk's rows toward reference rows:
///   dst[r][c] = src[r][c] * exp(G[ref(r)][c] - G[r][c]) for r < valid,
///   0 beyond,
/// for [64][cols] tiles src and dst (16-bit or f32; the same tile for an
/// in-place update) and per-key log gates G ([64][cols] f32), 8 columns
/// per thread and step. With the in-chunk cumulative G and ref(r) >= r
/// the factor is <= 1 (gates <= 0), so nothing overflows. Without `ref`
/// the rows decay from the chunk's start instead (G = 0 before its first
/// row): dst[r][c] = src[r][c] * exp(G[r][c]), <= 1 as well. Rows past
/// `valid` are dropped by a select: their gates are staged zeros. A split
/// src (an f32 spec's keys, `srcLo` given) is read as hi + lo, and a split
/// dst (`dstLo` given) takes the decayed rows as hi and lo parts again.
/// With `sinceRef` the rows decay from reference rows ref(r) <= r instead:
/// dst[r][c] = src[r][c] * exp(G[r][c] - G[ref(r)][c]), <= 1 too.
void decayRows(KernelEmitter &k, Value src, Value dst, Value g, Value valid,
               function_ref<Value(Value)> ref, int64_t cols,
               Value srcLo = Value(), Value dstLo = Value(),
               bool sinceRef = false);

/// The sum of the chunk totals G_C(m) = G[b, min(chunk (m + 1), T) - 1,
/// hv] over the chunks m in [m0, m1), m1 - m0 <= maxChunks, in every lane
/// of each warp (its lanes take a chunk each, then a butterfly of
/// shuffles); 0 without gates.
Value sumChunkTotals(KernelEmitter &k, Value gates, Value bIdx, Value hv,
                     Value m0, Value m1, int64_t maxChunks, int64_t chunk,
                     Value seqLen);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_KERNEL_GATES_H
