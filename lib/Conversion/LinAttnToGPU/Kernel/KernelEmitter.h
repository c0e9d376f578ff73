//===- KernelEmitter.h - The body of one generated kernel -------*- C++ -*-===//
//
// What every kernel body needs, whatever it computes: its thread indices,
// shared memory carved from one dynamic byte buffer, block-strided loops,
// cooperative tile loads (through registers, or cp.async straight into
// shared memory), 16-byte row copies out, barriers; and the gpu.launch that
// holds it. Tensor-core fragments build on it (MmaEmitter.h).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_KERNEL_KERNELEMITTER_H
#define LIB_CONVERSION_LINATTNTOGPU_KERNEL_KERNELEMITTER_H

#include "ChunkGeometry.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::linattn::kernel {

/// Threads of a kernel block unless a kernel says otherwise: four warps.
constexpr int64_t kThreads = 128;
constexpr int64_t kWarps = kThreads / 32;
/// Row padding of 16-bit shared tiles, in elements: a row stride of
/// (n + 8) * 2 bytes puts the 8 rows a fragment load touches in distinct
/// banks.
constexpr int64_t kPad = 8;

/// exp(x) = 2^(x log2 e) by ex2.approx.ftz (two instructions; the kernels
/// never need a subnormal result).
Value approxExp(ImplicitLocOpBuilder &b, Value x);

/// Emits the body of one kernel: thread indices, shared memory carved from
/// one byte buffer, cooperative tile loads and copies.
class KernelEmitter {
public:
  KernelEmitter(ImplicitLocOpBuilder &b, gpu::LaunchOp launch, Value smem,
                int64_t threads);

  /// A [rows, cols] view of `type` at byte `offset` of the shared buffer.
  Value tile(int64_t offset, int64_t rows, int64_t cols, Type elem);
  Value tile(Value offset, int64_t rows, int64_t cols, Type elem);
  /// A [n] view of `elem` at byte `offset` of the shared buffer.
  Value vec(int64_t offset, int64_t n, Type elem);

  /// Asks linattn-gpu-occupancy-hints to leave each thread at least
  /// `registers` registers (kMinRegistersAttrName on the kernel's dynamic
  /// shared memory, which the hint's block count is planned from).
  void requireRegistersPerThread(int64_t registers);

  static Attribute workgroupSpace(MLIRContext *ctx);

  /// Calls body(i) for i = tid, tid + threads, ... below `total` (a
  /// multiple of the block's threads): a loop of constant trip count,
  /// unrolled later.
  void forEachOfBlock(int64_t total, function_ref<void(Value)> body);

  /// Copies rows [row0, row0 + rows) of a staged shared tile out in
  /// 16-byte pieces: dst(dstIndices(r, c)) = src[r][c .. c + 16 bytes)
  /// for r < valid (every row without `valid`), spread over the block's
  /// threads, or with `byWarp` over the lanes of the calling warp (its
  /// own rows). Whole rows per instruction, where accumulator pairs
  /// would write 4 or 8 bytes 8 rows apart. With `validCols`, the pieces
  /// at or past that column stay (a block's columns past the tensor's).
  void copyRowsOut(Value src, Value row0, int64_t rows, int64_t cols,
                   Value valid, Value dst,
                   function_ref<SmallVector<Value>(Value, Value)> dstIndices,
                   bool byWarp = false, Value validCols = Value());

  /// Fills a [rows, cols] 16-bit tile from rows [0, valid) of a source,
  /// 8 columns per thread and step: dst(r, c..c+7) = load(r, c) (a
  /// vector<8xf32>), one 16-byte store per step; rows at or past `valid`
  /// (when given) are zero. Tiles are stored as they are read; an operand
  /// needed transposed is read by ldmatrix .trans. With `loDst`, dst gets
  /// the high 16-bit part and loDst the remainder.
  void fillTile(Value dst, int64_t rows, int64_t cols, Value valid,
                function_ref<Value(Value, Value)> load, Value loDst = Value());

  /// load(r) for r < valid, else zero: the load reads row min(r, valid - 1)
  /// (valid >= 1 in every chunk) and a select drops it. Branch-free, so the
  /// unrolled loads of a tile issue back to back instead of one guarded
  /// block (and one memory latency) after another.
  Value loadRowOrZero(Value r, Value valid, Type type,
                      function_ref<Value(Value)> load);

  /// Starts cp.async copies of a [rows][cols] slab (a chunk's 64 rows
  /// unless given) into rows [dstRow0, + rows) of `dst`: dst(dstRow0 + r,
  /// c) = src(srcIndices(t0 + r, c)) for r < valid, zero for the other
  /// rows (copied with a source size of 0 from row min(t0 + r, seqLen -
  /// 1), in bounds). Each copy moves 16 bytes (or one element when
  /// a row is narrower), so a tile is in flight after a few instructions
  /// and lands while the block computes; `waitCopies` then a barrier makes
  /// it visible.
  /// With `narrowRows` the row and the source size are computed in 32-bit
  /// arithmetic: index math is 64-bit, where each add, min and compare of
  /// a copy takes two to four instructions instead of one. T < 2^31 holds
  /// for any input that fits in memory (the chunked kernels' rows hold at
  /// least 64 16-bit keys). Measured (bench/NOTES.md c32), it speeds up the
  /// delta rule's state pass but slows the state pass without W, so only
  /// the former asks for it.
  /// With `validCols` (a multiple of a copy's elements), columns at or past
  /// it arrive as zeros too (copied with a source size of 0 from column 0).
  void copyRowsAsync(Value dst, Value dstRow0, int64_t cols, Value t0,
                     Value valid, Value seqLen, Value src,
                     function_ref<SmallVector<Value>(Value, Value)> srcIndices,
                     int64_t rows = kChunk, bool narrowRows = false,
                     Value validCols = Value());
  /// copyRowsAsync of chunk `rows`' tokens of a [B, T, heads, cols] input,
  /// src[batch, t, head, :], to dst's rows from 0.
  void copyTokenRowsAsync(Value dst, int64_t cols, ChunkRows rows, Value seqLen,
                          Value src, Value batch, Value head,
                          bool narrowRows = false);
  /// The same for a [B, T, heads, 2, cols] input held in two parts (a
  /// split W's hi and lo): src[batch, t, head, 0, :] to `hi`, [..., 1, :]
  /// to `lo`.
  void copyTokenRowPartsAsync(Value hi, Value lo, int64_t cols, ChunkRows rows,
                              Value seqLen, Value src, Value batch, Value head,
                              bool narrowRows = false);

  /// Closes the group of the copies this thread started since the last
  /// commit (cp.async.commit_group).
  Value commitCopies();
  /// Waits until at most `pending` of this thread's groups are in flight
  /// (cp.async.wait_group).
  void waitCopies(Value group, int64_t pending);

  /// (hi, lo) = (round(x), round(x - hi)) in `narrow` (16-bit scalar or
  /// vector type).
  std::pair<Value, Value> split(Value x, Type narrow);
  /// Element `indices` of a 16-bit tile as f32, plus the same element of
  /// its lo tile where it is split (`lo` non-null): the value hi + lo.
  Value loadJoined(Value hi, Value lo, ValueRange indices);

  /// vector<width x f32> of memref[indices..., c .. c + width - 1]
  /// (widened).
  Value loadWidened(Value memref, ValueRange indices, int64_t width);
  /// The same of a split tile: hi's elements plus lo's where `lo` is
  /// non-null (loadJoined's vector form).
  Value loadWidenedJoined(Value hi, Value lo, ValueRange indices,
                          int64_t width);
  Value load8(Value memref, ValueRange indices);

  /// The shared-memory pointer (!llvm.ptr<3>) of buf[row][col], for the
  /// NVVM ops that take one (nvgpu has no stmatrix).
  Value sharedPointer(Value buf, Value row, Value col);

  /// exp(x) = 2^(x log2 e) by ex2.approx.ftz (a few ulp) instead of
  /// libdevice's expf (about eight instructions): the kernels take one per
  /// element of a decayed tile. The product's rounding adds |x| 2^-24 of
  /// relative error; the gate differences a kernel exponentiates stay
  /// within one chunk's cumulative decay. The flush-to-zero form is two
  /// instructions (FMUL, MUFU.EX2); plain ex2.approx (what math.exp2
  /// becomes) wraps MUFU.EX2 in a rescaling for subnormal results, three
  /// more (bench/NOTES.md c31). Results below 2^-126 become 0, which every
  /// use (a decay factor <= 1 multiplying an operand) tolerates.
  Value exp(Value x) { return approxExp(b, x); }
  /// exp of both elements of a vector<2xf32>.
  Value expPair(Value x);

  /// Stores (x0, x1) at memref[indices..] (the pair's first element at the
  /// last index), narrowed to the memref's element type, when `pred`
  /// holds (always without it).
  void storePair(Value x0, Value x1, Value memref, SmallVector<Value> indices,
                 Value pred);

  Value ult(Value x, Value y);
  Value select(Value c, Value x, Value y);
  /// A barrier of the block's threads, or, where `barrierThreads` is set,
  /// of its first barrierThreads threads alone (named barrier 1: the
  /// compute warps of a block whose last warp does something else).
  void barrier();

  /// mbarriers (sm_80+) at shared pointers (sharedPointer of an i64 tile):
  /// initialised to `count` arrivals; an arrival of this thread (release);
  /// a wait for the completion of the phase of `parity` (acquire); an
  /// arrival once this thread's cp.async copies so far have landed
  /// (cp.async.mbarrier.arrive.noinc: one of the `count`).
  void mbarrierInit(Value bar, int64_t count);
  void mbarrierArrive(Value bar);
  void mbarrierWait(Value bar, Value parity);
  void copiesArrive(Value bar);
  /// Waits for every cp.async copy this thread started.
  void waitAllCopies();
  /// x from the lane `offset` away in `mode` (gpu.shuffle over the warp's
  /// 32 lanes); an f64 x moves as its two 32-bit halves. Every lane must
  /// take part.
  Value shuffle(Value x, int32_t offset, gpu::ShuffleMode mode);
  /// The 32-bit x of lane `source` (an index), in every lane that asks
  /// (gpu.shuffle idx). Every lane must take part.
  Value shuffleFrom(Value x, Value source);
  /// The sum of x (f32 or f64) over the warp's 32 lanes, in every lane: a
  /// butterfly of shuffles (offsets 16, 8, 4, 2, 1).
  Value warpSum(Value x);
  /// sum_{l' >= lane} x_l' over the warp's lanes (f32 or f64): a
  /// Kogge-Stone scan by shuffles down.
  Value warpSuffixSum(Value x);

  ImplicitLocOpBuilder &b;
  LoopEmitter e;
  Value tid, warp, lane, smem;
  int64_t threads;
  int64_t barrierThreads = 0;
};

/// A kernel's shared-memory layout, laid out in the order asked for: each
/// region at a 16-byte aligned offset (the alignment of the kernels'
/// vector and cp.async accesses).
class SharedLayout {
public:
  /// The offset of a new region of `bytes`.
  int64_t take(int64_t bytes) {
    int64_t at = end;
    end += (bytes + 15) / 16 * 16;
    return at;
  }
  /// Regions taken after `rewind(at)` overlap those taken after `at`: for
  /// tiles whose lives do not meet. The layout's size stays the largest.
  void rewind(int64_t at) {
    high = std::max(high, end);
    end = at;
  }
  int64_t current() const { return end; }
  int64_t size() const { return std::max(high, end); }

private:
  int64_t end = 0, high = 0;
};

/// Creates `gpu.launch` over `grid` blocks of `threads` threads with
/// `smemBytes` bytes of dynamic shared memory (none for 0) and calls
/// body(launch, smem) with the builder inside it, before its terminator.
void emitLaunchBody(ImplicitLocOpBuilder &b, ArrayRef<Value> grid,
                    int64_t smemBytes, int64_t threads,
                    function_ref<void(gpu::LaunchOp, Value)> body);

/// The same, with body(emitter) filling it.
void emitLaunch(ImplicitLocOpBuilder &b, ArrayRef<Value> grid, int64_t smemBytes,
                function_ref<void(KernelEmitter &)> body,
                int64_t threads = kThreads);

/// A kernel with one warp per row (b, t, h) of a [B, T, H, ...] operand of
/// `sizes` (B, T, H), kWarps rows a block: body(k, b, t, h) runs where t <
/// T, for the whole warp (so its shuffles see 32 lanes).
void emitRowWarpLaunch(
    ImplicitLocOpBuilder &b, ArrayRef<Value> sizes,
    function_ref<void(KernelEmitter &, Value, Value, Value)> body);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_KERNEL_KERNELEMITTER_H
