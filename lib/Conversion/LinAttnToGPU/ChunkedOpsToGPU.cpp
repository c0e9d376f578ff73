//===- ChunkedOpsToGPU.cpp - Chunked algorithm ops to tensor-core kernels -===//
//
// The GPU mapping of the chunkwise algorithm (the formulas are those of the
// op descriptions in LinAttnOps.td). Every op becomes one gpu.launch of 128
// threads (4 warps); the products of a chunk run on tensor cores as
// nvvm.mma.sync m16n8k16 (bf16/f16 operands, fp32 accumulators). Fragment
// layouts follow the PTX ISA ("Matrix Fragments for mma.m16n8k16"): with
// lane = 4 * group + quad,
//   A (16x16, row-major): a0 = A[g][2q..2q+1],   a1 = A[g+8][2q..],
//                         a2 = A[g][2q+8..],     a3 = A[g+8][2q+8..]
//   B (16x8, by columns): b0 = B[2q..2q+1][g],   b1 = B[2q+8..2q+9][g]
//   C (16x8):             c0,c1 = C[g][2q..2q+1], c2,c3 = C[g+8][2q..]
// Fragments come from shared memory by `ldmatrix` (nvgpu.ldmatrix): each
// 8x8 16-bit tile it loads lands in one register per lane in exactly the
// a/b layout above (`.trans` for tiles stored transposed), one instruction
// for what took four to eight scalar or 32-bit shared loads. An fp32
// product that the next product consumes stays in registers: C's rows are
// A's rows, so two adjacent 16x8 accumulator tiles are one A fragment
// (fragmentAFromAcc), as the state pass's S^T and D^T and the output
// kernel's P are.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Conversion/Passes.h"

#include "../LinAttnToLoops/LoopEmitter.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace mlir::linattn {
#define GEN_PASS_DEF_CONVERTLINATTNCHUNKEDTOGPU
#include "LinAttn/Conversion/Passes.h.inc"

namespace {

/// Tokens per chunk: four warps of 16 rows each.
constexpr int64_t kChunk = 64;
/// The long chunk of the kinds without a rank-1 term and with one decay
/// per row (linear attention, RetNet, simple GLA): the state pass walks it
/// as two 64-row steps and stores one state, the output kernel runs eight
/// warps over its 128 rows. Chunk states are half the bytes, written once
/// and read once, for 1.5x the intra-chunk score work. Measured on the
/// H200 the state pass gains (-15%) and the output kernel loses more
/// (+14%), so the GPU selector keeps 64 (bench/NOTES.md c25).
constexpr int64_t kLongChunk = 128;
constexpr int64_t kThreads = 128;
constexpr int64_t kWarps = kThreads / 32;
/// Value columns per block of the output kernel. Every block recomputes
/// Q K^T and reloads Q and K, so wider blocks do less of both; with 16-bit
/// S and D tiles 64 columns fit 3 blocks per SM (62720 B) and measured
/// 0.33 ms against 32 columns' 0.51 ms (B = 4, T = 16384, K = V = 128 on
/// the H200; bench/NOTES.md c16). With f32 tiles (split in two) 64 columns
/// had measured slower, 2.89 vs 2.27 ms, when the shared tiles halved the
/// resident blocks.
constexpr int64_t kOutputColumns = 64;
static_assert(64 % kOutputColumns == 0,
              "every V the geometry check admits splits into output blocks");
/// The state pass: each warp carries S^T for 16 value columns (the m of
/// its products) and 1 / kStateKeySplit of the keys in registers, so the
/// state never goes through shared memory; the kStateKeySplit warps of a
/// column group add their partial W S^T products through shared memory.
/// kStateColumnGroups groups share a block and its staged inputs
/// (B * HV * V / 32 blocks of 4 warps); kStateStages stages keep two
/// chunks' copies in flight, kStateStagesWithoutW three where there is no
/// W S product and no per-key gate (fewer where they do not fit: f32 keys,
/// from linattn.l2norm, or an f32 W).
constexpr int64_t kStateColumnGroups = 2;
constexpr int64_t kStateKeySplit = 2;
constexpr int64_t kStateWarps = kStateColumnGroups * kStateKeySplit;
constexpr int64_t kStateColumns = 16 * kStateColumnGroups;
constexpr int64_t kStateStages = 3;
/// Without W the chunk loop is short (no W S product, no exchange) and a
/// fourth stage hides more of the loads' latency: measured -2% (simple
/// GLA) to -11% (linear attention) at T = 16384; with W it made no
/// difference (bench/results/state_pass_stages_ab_c24.log, NOTES c24).
constexpr int64_t kStateStagesWithoutW = 4;
/// Keys per row of the l2norm kernel: a warp per row, 32 per lane at most.
constexpr int64_t kMaxL2NormKeys = 1024;
/// Dynamic shared memory one block may opt in to on sm_90.
constexpr int64_t kMaxSharedBytes = 232448;
/// Row padding of 16-bit shared tiles, in elements: a row stride of
/// (n + 8) * 2 bytes puts the 8 rows a fragment load touches in distinct
/// banks.
constexpr int64_t kPad = 8;

/// exp(x) = 2^(x log2 e) by ex2.approx.ftz (two instructions; the kernels
/// never need a subnormal result).
Value approxExp(ImplicitLocOpBuilder &b, Value x) {
  Value scaled = arith::MulFOp::create(
      b, x, arith::ConstantOp::create(b, b.getF32FloatAttr(llvm::numbers::log2ef)));
  return LLVM::CallIntrinsicOp::create(
             b, b.getF32Type(), b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
             ValueRange{scaled})
      .getResult(0);
}

/// A 2-D shared tile seen as an operand: element (i, k) is buf[i][k], or
/// buf[k][i] when `transposed`. Fragments pair elements along k.
struct TileView {
  Value buf;
  bool transposed = false;
};

/// An operand of a tensor-core product. An fp32 matrix is held as two
/// 16-bit tiles, x ~= hi + lo with lo = round(x - hi): a product of split
/// operands (hi*hi + hi*lo + lo*hi) keeps about 16 mantissa bits, which the
/// chunked algorithm's cancellations need (D = U - W S with nearly parallel
/// keys loses what bf16 rounding of W and S leaves). Exact 16-bit inputs
/// (q, k, v) have no lo.
struct Operand {
  TileView hi;
  std::optional<TileView> lo;
};

/// Emits the body of one kernel: thread indices, shared memory carved from
/// one byte buffer, cooperative tile loads, mma fragments.
class KernelEmitter {
public:
  KernelEmitter(ImplicitLocOpBuilder &b, gpu::LaunchOp launch, Type mmaElem,
                Value smem, int64_t threads)
      : b(b), e(b), mmaElem(mmaElem), smem(smem), threads(threads) {
    tid = launch.getThreadIds().x;
    Value c32 = e.index(32);
    warp = arith::DivUIOp::create(b, tid, c32);
    lane = arith::RemUIOp::create(b, tid, c32);
    group = arith::DivUIOp::create(b, lane, e.index(4));
    quad = arith::RemUIOp::create(b, lane, e.index(4));
    // ldmatrix addressing: lane l gives the address of row l % 8 of tile
    // l / 8 = 2 * tileHi + tileLo.
    Value tileIdx = arith::DivUIOp::create(b, lane, e.index(8));
    tileRow = arith::RemUIOp::create(b, lane, e.index(8));
    tileLo = e.mulIndex(arith::RemUIOp::create(b, tileIdx, e.index(2)), e.index(8));
    tileHi = e.mulIndex(arith::DivUIOp::create(b, tileIdx, e.index(2)), e.index(8));
  }

  /// A [rows, cols] view of `type` at byte `offset` of the shared buffer.
  Value tile(int64_t offset, int64_t rows, int64_t cols, Type elem) {
    return tile(e.index(offset), rows, cols, elem);
  }
  Value tile(Value offset, int64_t rows, int64_t cols, Type elem) {
    auto type = MemRefType::get({rows, cols}, elem, MemRefLayoutAttrInterface(),
                                workgroupSpace(b.getContext()));
    return memref::ViewOp::create(b, type, smem, offset, ValueRange{});
  }
  Value vec(int64_t offset, int64_t n, Type elem) {
    auto type = MemRefType::get({n}, elem, MemRefLayoutAttrInterface(),
                                workgroupSpace(b.getContext()));
    return memref::ViewOp::create(b, type, smem, e.index(offset), ValueRange{});
  }

  static Attribute workgroupSpace(MLIRContext *ctx) {
    return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  }

  /// Calls body(i) for i = tid, tid + threads, ... below `total` (a
  /// multiple of the block's threads): a loop of constant trip count,
  /// unrolled later.
  void forEachOfBlock(int64_t total, function_ref<void(Value)> body) {
    assert(total % threads == 0 && "block-strided loop needs a multiple of the block");
    e.forEach(e.index(total / threads), [&](Value it) {
      body(e.addIndex(e.mulIndex(it, e.index(threads)), tid));
    });
  }

  /// Copies rows [row0, row0 + rows) of a staged shared tile out in
  /// 16-byte pieces: dst(dstIndices(r, c)) = src[r][c .. c + 16 bytes)
  /// for r < valid (every row without `valid`), spread over the block's
  /// threads, or with `byWarp` over the lanes of the calling warp (its
  /// own rows). Whole rows per instruction, where accumulator pairs
  /// would write 4 or 8 bytes 8 rows apart.
  void copyRowsOut(Value src, Value row0, int64_t rows, int64_t cols,
                   Value valid, Value dst,
                   function_ref<SmallVector<Value>(Value, Value)> dstIndices,
                   bool byWarp = false) {
    Type elem = cast<MemRefType>(src.getType()).getElementType();
    int64_t perPiece = 128 / elem.getIntOrFloatBitWidth();
    int64_t perRow = cols / perPiece;
    auto type = VectorType::get({perPiece}, elem);
    auto body = [&](Value idx) {
      Value r = e.addIndex(row0, arith::DivUIOp::create(b, idx, e.index(perRow)));
      Value c = e.mulIndex(arith::RemUIOp::create(b, idx, e.index(perRow)),
                           e.index(perPiece));
      OpBuilder::InsertionGuard guard(b);
      if (valid)
        b.setInsertionPointToStart(
            scf::IfOp::create(b, ult(r, valid), false).thenBlock());
      Value x = vector::LoadOp::create(b, type, src, ValueRange{r, c}, false,
                                       llvm::Align(16));
      vector::StoreOp::create(b, x, dst, dstIndices(r, c), false, llvm::Align(16));
    };
    if (!byWarp)
      return forEachOfBlock(rows * perRow, body);
    assert(rows * perRow % 32 == 0 && "a warp's rows split into whole lane steps");
    for (int64_t it = 0; it < rows * perRow / 32; ++it)
      body(e.addIndex(lane, e.index(32 * it)));
  }

  /// Fills a [rows, cols] 16-bit tile from rows [0, valid) of a source,
  /// 8 columns per thread and step: dst(r, c..c+7) = load(r, c) (a
  /// vector<8xf32>), one 16-byte store per step; rows at or past `valid`
  /// (when given) are zero. Tiles are stored as they are read; an operand needed
  /// transposed is read by ldmatrix .trans. With `loDst`, dst gets the
  /// high 16-bit part and loDst the remainder.
  void fillTile(Value dst, int64_t rows, int64_t cols, Value valid,
                function_ref<Value(Value, Value)> load, Value loDst = Value()) {
    constexpr int64_t kWidth = 8;
    auto f32x8 = VectorType::get({kWidth}, b.getF32Type());
    auto elemx8 = VectorType::get({kWidth}, mmaElem);
    int64_t perRow = cols / kWidth;
    forEachOfBlock(rows * perRow, [&](Value idx) {
      Value r = arith::DivUIOp::create(b, idx, e.index(perRow));
      Value c = e.mulIndex(arith::RemUIOp::create(b, idx, e.index(perRow)),
                           e.index(kWidth));
      Value x = valid ? loadRowOrZero(r, valid, f32x8,
                                      [&](Value row) { return load(row, c); })
                      : load(r, c);
      auto [hi, lo] = split(x, elemx8);
      for (auto [part, buf] : {std::pair{hi, dst}, std::pair{lo, loDst}})
        if (buf)
          vector::StoreOp::create(b, part, buf, ValueRange{r, c},
                                  /*nontemporal=*/false, llvm::Align(16));
    });
  }

  /// load(r) for r < valid, else zero: the load reads row min(r, valid - 1)
  /// (valid >= 1 in every chunk) and a select drops it. Branch-free, so the
  /// unrolled loads of a tile issue back to back instead of one guarded
  /// block (and one memory latency) after another.
  Value loadRowOrZero(Value r, Value valid, Type type,
                      function_ref<Value(Value)> load) {
    Value clamped = e.minIndex(r, e.subIndex(valid, e.index(1)));
    Value zero = arith::ConstantOp::create(b, type, b.getZeroAttr(type));
    return select(ult(r, valid), load(clamped), zero);
  }

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
  /// delta rule's state pass (negeig -11% at T = 1024) but slows the
  /// state pass without W (+3-4% at T = 16384), whose 64-bit rows the
  /// compiler most likely strength-reduces across chunks (not profiled).
  void copyRowsAsync(Value dst, Value dstRow0, int64_t cols, Value t0,
                     Value valid, Value seqLen, Value src,
                     function_ref<SmallVector<Value>(Value, Value)> srcIndices,
                     int64_t rows = kChunk, bool narrowRows = false) {
    auto srcType = cast<MemRefType>(src.getType());
    int64_t perCopy =
        std::min<int64_t>(cols, 128 / srcType.getElementTypeBitWidth());
    int64_t perRow = cols / perCopy;
    Type i32 = b.getI32Type();
    auto narrow = [&](Value x) -> Value {
      return arith::IndexCastUIOp::create(b, i32, x);
    };
    Value t0Narrow, validNarrow, lastRow;
    if (narrowRows) {
      t0Narrow = narrow(t0);
      validNarrow = narrow(valid);
      lastRow = arith::SubIOp::create(b, narrow(seqLen),
                                      arith::ConstantIntOp::create(b, i32, 1));
    }
    auto body = [&](Value idx) {
      Value r = arith::DivUIOp::create(b, idx, e.index(perRow));
      Value c = e.mulIndex(arith::RemUIOp::create(b, idx, e.index(perRow)),
                           e.index(perCopy));
      Value row, inRows;
      if (narrowRows) {
        Value rNarrow = narrow(r);
        row = arith::IndexCastUIOp::create(
            b, b.getIndexType(),
            arith::MinUIOp::create(b, arith::AddIOp::create(b, t0Narrow, rNarrow),
                                   lastRow));
        inRows = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, rNarrow,
                                       validNarrow);
      } else {
        row = e.minIndex(e.addIndex(t0, r), e.subIndex(seqLen, e.index(1)));
        inRows = ult(r, valid);
      }
      Value n = select(inRows, e.index(perCopy), e.index(0));
      bool full = perCopy * srcType.getElementTypeBitWidth() == 128;
      nvgpu::DeviceAsyncCopyOp::create(
          b, dst, ValueRange{e.addIndex(dstRow0, r), c}, src, srcIndices(row, c),
          b.getIndexAttr(perCopy), n, full ? b.getUnitAttr() : UnitAttr());
    };
    int64_t total = rows * perRow;
    if (total % threads == 0)
      return forEachOfBlock(total, body);
    auto ifOp = scf::IfOp::create(b, ult(tid, e.index(total)), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body(tid);
  }

  /// Closes the group of the copies this thread started since the last
  /// commit (cp.async.commit_group).
  Value commitCopies() {
    return nvgpu::DeviceAsyncCreateGroupOp::create(
        b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), ValueRange{});
  }
  /// Waits until at most `pending` of this thread's groups are in flight
  /// (cp.async.wait_group).
  void waitCopies(Value group, int64_t pending) {
    nvgpu::DeviceAsyncWaitOp::create(b, group, b.getI32IntegerAttr(pending));
  }

  /// (hi, lo) = (round(x), round(x - hi)) in `narrow` (16-bit scalar or
  /// vector type).
  std::pair<Value, Value> split(Value x, Type narrow) {
    return {arith::TruncFOp::create(b, narrow, x),
            arith::TruncFOp::create(b, narrow, e.roundingRest(x, narrow))};
  }

  /// vector<width x f32> of memref[indices..., c .. c + width - 1]
  /// (widened).
  Value loadWidened(Value memref, ValueRange indices, int64_t width) {
    auto type = cast<MemRefType>(memref.getType());
    auto vecType = VectorType::get({width}, type.getElementType());
    int64_t bytes = type.getElementTypeBitWidth() / 8;
    Value x = vector::LoadOp::create(b, vecType, memref, indices,
                                     /*nontemporal=*/false,
                                     llvm::Align(std::min<int64_t>(16, width * bytes)));
    if (!type.getElementType().isF32())
      x = arith::ExtFOp::create(b, VectorType::get({width}, b.getF32Type()), x);
    return x;
  }
  Value load8(Value memref, ValueRange indices) {
    return loadWidened(memref, indices, 8);
  }

  /// Four 8x8 tiles of a view by one ldmatrix: tile 2 * hi + lo has its
  /// origin at element (i0 + 8 * (swap ? hi : lo), k0 + 8 * (swap ? lo : hi)).
  /// Returns one mma register per tile: elements (i, k) and (i, k + 1) of
  /// the tile's row i = group, k = 2 * quad.
  SmallVector<Value> ldmatrix4(TileView view, Value i0, int64_t k0, bool swap) {
    return ldmatrix4(view, i0, e.index(k0), swap);
  }
  SmallVector<Value> ldmatrix4(TileView view, Value i0, Value k0, bool swap) {
    SmallVector<Value> regs;
    for (Value pair : ldmatrix4Pairs(view, i0, k0, swap))
      regs.push_back(mmaRegister(pair));
    return regs;
  }
  /// ldmatrix4's tiles as vector<2 x mmaElem> pairs, before they become
  /// mma registers (for a caller that scales them first).
  SmallVector<Value> ldmatrix4Pairs(TileView view, Value i0, Value k0, bool swap) {
    Value i = e.addIndex(i0, swap ? tileHi : tileLo);
    Value k = e.addIndex(k0, swap ? tileLo : tileHi);
    // A lane addresses a row of the tile as stored: a row of fixed i, or of
    // fixed k for a transposed view (ldmatrix .trans turns it around).
    SmallVector<Value> indices =
        view.transposed ? SmallVector<Value>{e.addIndex(k, tileRow), i}
                        : SmallVector<Value>{e.addIndex(i, tileRow), k};
    auto type = VectorType::get({4, 2}, mmaElem);
    Value tiles = nvgpu::LdMatrixOp::create(b, type, view.buf, indices,
                                            view.transposed, /*numTiles=*/4);
    SmallVector<Value> pairs;
    for (int64_t t = 0; t < 4; ++t)
      pairs.push_back(vector::ExtractOp::create(b, tiles, t));
    return pairs;
  }

  /// An mma operand register from a vector<2 x mmaElem> pair (element 0 in
  /// the low half): NVVM takes f16 pairs as vector<2xf16> and bf16 pairs
  /// as i32.
  Value mmaRegister(Value pair) {
    if (mmaElem.isF16())
      return pair;
    return vector::ExtractOp::create(
        b, vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), pair), 0);
  }

  /// An fp32 pair rounded to a 16-bit type as one 32-bit register (x0 in the
  /// low half), the form stmatrix takes.
  Value packPair(Value x0, Value x1, Type narrowElem) {
    Value pair = vector::FromElementsOp::create(
        b, VectorType::get({2}, b.getF32Type()), ValueRange{x0, x1});
    Value narrow = arith::TruncFOp::create(b, VectorType::get({2}, narrowElem), pair);
    return vector::ExtractOp::create(
        b, vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), narrow),
        0);
  }

  /// Stores a 16x16 block X held as two adjacent fp32 accumulator tiles
  /// (tile0: columns 0..7, tile1: 8..15) by one stmatrix, rounded to
  /// buf's 16-bit type. The registers are the tiles' pairs (tile0 rows
  /// 0..7, tile0 rows 8..15, tile1 rows 0..7, tile1 rows 8..15), each 8x8
  /// part in the accumulator-pair layout (lane 4 g + q: elements (g, 2q),
  /// (g, 2q + 1)). Writes
  ///   buf[row0 + r][col0 + c] = X[r][c], or with `transposed` (stmatrix
  ///   .trans) buf[row0 + c][col0 + r] = X[r][c],
  /// 16 bytes per stored row: one instruction for what a thread's pairs
  /// would take eight 4-byte stores (two rows of X per pair and
  /// `transposed`: element by element).
  void stmatrix4(Value buf, Value row0, Value col0, ValueRange tile0,
                 ValueRange tile1, bool transposed) {
    Type elem = cast<MemRefType>(buf.getType()).getElementType();
    SmallVector<Value> regs;
    for (ValueRange tile : {tile0, tile1})
      for (int64_t half : {0, 2})
        regs.push_back(packPair(tile[half], tile[half + 1], elem));
    // Lane l gives the address of stored row l % 8 of part l / 8 = 2 a + h
    // (tile a, row half h; tileHi = 8 a, tileLo = 8 h): a row of X, or
    // with `transposed` a column.
    Value ptr = transposed
                    ? sharedPointer(buf, e.addIndex(e.addIndex(row0, tileHi), tileRow),
                                    e.addIndex(col0, tileLo))
                    : sharedPointer(buf, e.addIndex(e.addIndex(row0, tileLo), tileRow),
                                    e.addIndex(col0, tileHi));
    NVVM::StMatrixOp::create(
        b, ptr, regs, transposed ? NVVM::MMALayout::col : NVVM::MMALayout::row,
        NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
        NVVM::LdStMatrixEltType::B16);
  }

  /// The shared-memory pointer (!llvm.ptr<3>) of buf[row][col], for the
  /// NVVM ops that take one (nvgpu has no stmatrix).
  Value sharedPointer(Value buf, Value row, Value col) {
    auto type = cast<MemRefType>(buf.getType());
    int64_t bytes = type.getElementTypeBitWidth() / 8;
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, buf);
    Value element = e.addIndex(e.mulIndex(row, e.index(type.getDimSize(1))), col);
    Value address = arith::IndexCastOp::create(
        b, b.getI64Type(), e.addIndex(base, e.mulIndex(element, e.index(bytes))));
    return LLVM::IntToPtrOp::create(
        b, LLVM::LLVMPointerType::get(b.getContext(), /*addressSpace=*/3), address);
  }

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
  Value expPair(Value x) {
    Value lo = exp(vector::ExtractOp::create(b, x, 0));
    Value hi = exp(vector::ExtractOp::create(b, x, 1));
    return vector::FromElementsOp::create(b, x.getType(), ValueRange{lo, hi});
  }

  /// The (hi, lo) operand registers of an fp32 pair (vector<2xf32>).
  std::pair<Value, Value> splitRegister(Value pair) {
    auto [hi, lo] = split(pair, VectorType::get({2}, mmaElem));
    return {mmaRegister(hi), mmaRegister(lo)};
  }

  /// The A fragment (hi and lo registers) of a 16x16 fp32 operand held in
  /// registers as two accumulator tiles: tile0 covers k 0..7 and tile1 k
  /// 8..15, so a0 = tile0 (c0, c1), a1 = tile0 (c2, c3), a2 = tile1 (c0,
  /// c1), a3 = tile1 (c2, c3) (the C and A layouts of m16n8k16 agree
  /// row by row). With `negate`, the fragment of the negated operand.
  /// Without `split`, only hi, the operand rounded once (lo is empty).
  std::pair<SmallVector<Value>, SmallVector<Value>>
  fragmentAFromAcc(ArrayRef<Value> tile0, ArrayRef<Value> tile1, bool negate,
                   bool split = true) {
    SmallVector<Value> hi, lo;
    auto f32x2 = VectorType::get({2}, b.getF32Type());
    std::pair<ArrayRef<Value>, int64_t> pairs[] = {
        {tile0, 0}, {tile0, 2}, {tile1, 0}, {tile1, 2}};
    for (auto [tile, first] : pairs) {
      Value pair = vector::FromElementsOp::create(
          b, f32x2, ValueRange{tile[first], tile[first + 1]});
      if (negate)
        pair = arith::NegFOp::create(b, pair);
      if (!split) {
        hi.push_back(mmaRegister(arith::TruncFOp::create(
            b, VectorType::get({2}, mmaElem), pair)));
        continue;
      }
      auto [h, l] = splitRegister(pair);
      hi.push_back(h);
      lo.push_back(l);
    }
    return {hi, lo};
  }

  /// fragB2 for B = buf (element (k, n) = buf[k][n]) held in fp32, which
  /// ldmatrix cannot read: each element loaded and rounded to mmaElem.
  SmallVector<Value> fragB2FromF32Columns(Value buf, Value base, int64_t n0,
                                          int64_t k0) {
    SmallVector<Value> regs;
    auto f32x2 = VectorType::get({2}, b.getF32Type());
    for (int64_t j = 0; j < 2; ++j) {
      Value n = e.addIndex(base, e.addIndex(e.index(n0 + 8 * j), group));
      for (int64_t half = 0; half < 2; ++half) {
        Value k = e.addIndex(e.index(k0 + 8 * half), e.mulIndex(quad, e.index(2)));
        Value x0 = e.loadF32(buf, {k, n});
        Value x1 = e.loadF32(buf, {e.addIndex(k, e.index(1)), n});
        Value pair = vector::FromElementsOp::create(b, f32x2, ValueRange{x0, x1});
        regs.push_back(mmaRegister(
            arith::TruncFOp::create(b, VectorType::get({2}, mmaElem), pair)));
      }
    }
    return regs;
  }

  /// The A fragment of rows [m0, m0 + 16) and k [k0, k0 + 16) of an
  /// operand computed in fp32 and rounded once: pair(r, c) is the
  /// vector<2xf32> of elements (r, c) and (r, c + 1). a0 holds row g, k
  /// 2q; a1 row g + 8; a2 and a3 the same at k + 8.
  SmallVector<Value> fragAFromPairs(Value m0, int64_t k0,
                                    function_ref<Value(Value, Value)> pair) {
    SmallVector<Value> regs;
    for (int64_t kHalf : {0, 8})
      for (int64_t rowHalf : {0, 8}) {
        Value r = e.addIndex(e.addIndex(m0, group), e.index(rowHalf));
        Value c = e.addIndex(e.index(k0 + kHalf), e.mulIndex(quad, e.index(2)));
        regs.push_back(mmaRegister(arith::TruncFOp::create(
            b, VectorType::get({2}, mmaElem), pair(r, c))));
      }
    return regs;
  }

  /// The A fragment of rows [m0, m0 + 16) and k [k0, k0 + 16) of a view:
  /// tiles (m0, k0), (m0 + 8, k0), (m0, k0 + 8), (m0 + 8, k0 + 8).
  SmallVector<Value> fragA(TileView a, Value m0, int64_t k0) {
    return ldmatrix4(a, m0, k0, /*swap=*/false);
  }

  /// The B fragments of columns [n0, n0 + 16) (two n-tiles of 8) and k
  /// [k0, k0 + 16), from a view of B^T (element (n, k) = B[k][n]): b0, b1
  /// of columns n0.. and then of n0 + 8...
  SmallVector<Value> fragB2(TileView bt, int64_t n0, int64_t k0) {
    return ldmatrix4(bt, e.index(n0), k0, /*swap=*/true);
  }
  /// The same for columns [base + n0, + 16).
  SmallVector<Value> fragB2(TileView bt, Value base, int64_t n0, int64_t k0) {
    return ldmatrix4(bt, e.addIndex(base, e.index(n0)), k0, /*swap=*/true);
  }
  /// The same for columns [n0, + 16) and k [k0, + 16).
  SmallVector<Value> fragB2(TileView bt, int64_t n0, Value k0) {
    return ldmatrix4(bt, e.index(n0), k0, /*swap=*/true);
  }

  /// d = a * b + c on tensor cores; c and d are 4 fp32 values.
  SmallVector<Value> mma(ArrayRef<Value> a, ArrayRef<Value> bFrag,
                         ArrayRef<Value> c) {
    MLIRContext *ctx = b.getContext();
    Type f32 = b.getF32Type();
    auto resultType = LLVM::LLVMStructType::getLiteral(ctx, {f32, f32, f32, f32});
    NVVM::MMATypes elem = mmaElem.isBF16() ? NVVM::MMATypes::bf16
                                           : NVVM::MMATypes::f16;
    auto op = NVVM::MmaOp::create(
        b, resultType, a, bFrag, c, ArrayRef<int64_t>{16, 8, 16},
        std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{elem, elem},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> d;
    for (int64_t i = 0; i < 4; ++i)
      d.push_back(LLVM::ExtractValueOp::create(b, op, i));
    return d;
  }

  /// An A operand's (hi, lo) fragments; lo is empty for an unsplit A.
  using FragmentA = std::pair<SmallVector<Value>, SmallVector<Value>>;

  /// acc[nt] += A(rows m0.., k < kDim) * B(k < kDim, cols 8 nt ..) for
  /// nt < acc.size(); B given as a view of B^T. Split operands add the
  /// hi*lo and lo*hi products (lo*lo is below fp32 rounding of the sum).
  void gemm(SmallVector<SmallVector<Value>> &acc, Operand a, Value m0,
            Operand bt, int64_t kDim, int64_t n0 = 0) {
    gemm(acc, [&](int64_t k0) -> FragmentA {
      FragmentA frag{fragA(a.hi, m0, k0), {}};
      if (a.lo)
        frag.second = fragA(*a.lo, m0, k0);
      return frag;
    }, bt, kDim, n0);
  }
  /// The same with A's (hi, lo) fragments of k [k0, k0 + 16) given by
  /// `fragments(k0)` (lo empty for an unsplit A), and B's columns from n0.
  void gemm(SmallVector<SmallVector<Value>> &acc,
            function_ref<FragmentA(int64_t)> fragments, Operand bt, int64_t kDim,
            int64_t n0 = 0) {
    assert(acc.size() % 2 == 0 && "B fragments load two n-tiles at a time");
    for (int64_t k0 = 0; k0 < kDim; k0 += 16) {
      auto [aHi, aLo] = fragments(k0);
      for (size_t nt = 0; nt < acc.size(); nt += 2) {
        SmallVector<Value> bHi = fragB2(bt.hi, n0 + 8 * nt, k0), bLo;
        if (bt.lo)
          bLo = fragB2(*bt.lo, n0 + 8 * nt, k0);
        for (size_t j = 0; j < 2; ++j) {
          ArrayRef<Value> bHiJ = ArrayRef(bHi).slice(2 * j, 2);
          if (bt.lo)
            acc[nt + j] = mma(aHi, ArrayRef(bLo).slice(2 * j, 2), acc[nt + j]);
          if (!aLo.empty())
            acc[nt + j] = mma(aLo, bHiJ, acc[nt + j]);
          acc[nt + j] = mma(aHi, bHiJ, acc[nt + j]);
        }
      }
    }
  }

  /// Accumulators for `tiles` 16x8 tiles, zero.
  SmallVector<SmallVector<Value>> zeroAcc(int64_t tiles) {
    Value z = e.f32(0.0f);
    return SmallVector<SmallVector<Value>>(tiles, SmallVector<Value>(4, z));
  }

  /// Row and column of accumulator element `i` (0..3) of tile (m0, n0).
  Value accRow(Value m0, int64_t i) {
    Value r = e.addIndex(m0, group);
    return i >= 2 ? e.addIndex(r, e.index(8)) : r;
  }
  Value accCol(int64_t n0, int64_t i) {
    return e.addIndex(e.index(n0 + (i & 1)), e.mulIndex(quad, e.index(2)));
  }

  /// Calls body(row, col, i) for the even elements (i = 0, 2) of tile nt;
  /// the odd element is its right neighbour.
  void forEachPair(Value m0, int64_t nt, function_ref<void(Value, Value, int64_t)> body) {
    for (int64_t i : {0, 2})
      body(accRow(m0, i), accCol(8 * nt, i), i);
  }

  /// Stores (x0, x1) at memref[prefix..., row, col..col+1] (or
  /// memref[prefix..., col] with `row` folded into prefix by the caller),
  /// narrowed to the memref's element type, when `pred` holds.
  void storePair(Value x0, Value x1, Value memref, SmallVector<Value> indices,
                 Value pred) {
    auto type = cast<MemRefType>(memref.getType());
    Type elem = type.getElementType();
    auto ifOp = pred ? scf::IfOp::create(b, pred, /*withElse=*/false) : nullptr;
    OpBuilder::InsertionGuard guard(b);
    if (ifOp)
      b.setInsertionPointToStart(ifOp.thenBlock());
    Value v = vector::FromElementsOp::create(
        b, VectorType::get({2}, b.getF32Type()), ValueRange{x0, x1});
    if (!elem.isF32())
      v = arith::TruncFOp::create(b, VectorType::get({2}, elem), v);
    vector::StoreOp::create(b, v, memref, indices, /*nontemporal=*/false,
                            llvm::Align(2 * type.getElementTypeBitWidth() / 8));
  }

  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, c, x, y);
  }
  void barrier() { gpu::BarrierOp::create(b); }

  ImplicitLocOpBuilder &b;
  LoopEmitter e;
  Type mmaElem;
  Value tid, warp, lane, group, quad, smem;
  Value tileRow, tileLo, tileHi;
  int64_t threads;
};

/// Creates `gpu.launch` over `grid` blocks of `threads` threads with
/// `smemBytes` bytes of dynamic shared memory (none for 0); body(emitter)
/// fills it.
void emitLaunch(ImplicitLocOpBuilder &b, ArrayRef<Value> grid, int64_t smemBytes,
                Type mmaElem, function_ref<void(KernelEmitter &)> body,
                int64_t threads = kThreads) {
  LoopEmitter e(b);
  // Dynamic shared memory: its global is 16-byte aligned (static
  // attributions are byte-aligned), which the 16-byte vector accesses need,
  // and the runtime raises the per-kernel limit past 48 KiB when asked.
  Value bytes = smemBytes ? arith::ConstantOp::create(
                               b, b.getI32IntegerAttr(smemBytes)).getResult()
                         : Value();
  auto launch = gpu::LaunchOp::create(b, grid[0], grid[1], grid[2],
                                      e.index(threads), e.index(1), e.index(1),
                                      bytes);
  OpBuilder::InsertionGuard guard(b);
  Block &block = launch.getBody().front();
  b.setInsertionPointToEnd(&block);
  auto terminator = gpu::TerminatorOp::create(b);
  b.setInsertionPoint(terminator);
  Value smem;
  if (smemBytes)
    smem = gpu::DynamicSharedMemoryOp::create(
        b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                           MemRefLayoutAttrInterface(),
                           KernelEmitter::workgroupSpace(b.getContext())));
  KernelEmitter k(b, launch, mmaElem, smem, threads);
  body(k);
}

Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }

/// The 16-bit type an input is rounded to on the tensor cores: its own, or
/// for the f32 result of `linattn.l2norm` (qk_l2norm) that of the
/// normalised input, as flash-linear-attention does.
Type operandTypeOf(Value v) {
  if (auto norm = v.getDefiningOp<L2NormOp>())
    if (Type in = elementOf(norm.getInput()); in.isBF16() || in.isF16())
      return in;
  return elementOf(v);
}

/// The tensor-core operand type of an op's 16-bit inputs, or an error.
/// Called before any op is rewritten, while l2norm results are visible.
FailureOr<Type> mmaTypeOf(Operation *op, ValueRange inputs) {
  Type elem = operandTypeOf(inputs.front());
  for (Value v : inputs)
    if (operandTypeOf(v) != elem)
      return op->emitOpError() << "GPU chunked kernels need q, k and v of one "
                                  "element type, got "
                               << operandTypeOf(v) << " and " << elem;
  if (!elem.isBF16() && !elem.isF16())
    return op->emitOpError()
           << "GPU chunked kernels run bf16/f16 inputs on tensor cores; "
           << elem << " inputs have no chunked GPU mapping (use strategy=recurrent)";
  return elem;
}

/// Errors unless `op`'s kernels take `chunkSize` and every named dimension:
/// chunks of kChunk tokens, or kLongChunk where `whyNotLong` is empty (it
/// says why the op has no long-chunk kernel otherwise); dimensions of 64 or
/// 128.
LogicalResult checkChunkGeometry(Operation *op, int64_t chunkSize,
                                 ArrayRef<std::pair<StringRef, int64_t>> dims,
                                 StringRef whyNotLong = "") {
  if (chunkSize != kChunk && (chunkSize != kLongChunk || !whyNotLong.empty()))
    return op->emitOpError() << "GPU chunked kernels take chunk_size = " << kChunk
                             << (whyNotLong.empty() ? " or " + std::to_string(kLongChunk)
                                                    : " (" + whyNotLong.str() + ")")
                             << ", got " << chunkSize;
  for (auto [name, size] : dims)
    if (size % 64 != 0 || size > 128)
      return op->emitOpError() << "GPU chunked kernels need " << name
                               << " = 64 or 128, got " << size;
  return success();
}

/// Chunk geometry inside a kernel: first token and number of valid rows
/// of chunk n of `rows` tokens, valid = min(rows, T - min(t0, T)): 0 for
/// a chunk past the end (the state pass prefetches one).
struct ChunkRows {
  Value t0, valid;
};
ChunkRows chunkRows(LoopEmitter &e, Value n, Value seqLen, int64_t rows = kChunk) {
  Value t0 = e.mulIndex(n, e.index(rows));
  Value valid = e.minIndex(e.index(rows), e.subIndex(seqLen, e.minIndex(t0, seqLen)));
  return {t0, valid};
}

/// The last valid row of the 16-row block that starts at `row0`: the row
/// a per-key decay factors around, min(row0 + 15, valid - 1). The output
/// kernel's K' and its score operands must agree on it.
Value blockLastRow(LoopEmitter &e, Value row0, Value valid) {
  return e.minIndex(e.addIndex(row0, e.index(15)), e.subIndex(valid, e.index(1)));
}

/// Copies per-row gate values G[b, t0 + r, hv] (0 at or past `valid`, and
/// without gates) into a shared vector of `numRows` (at most the block's
/// threads).
void fillRowGates(KernelEmitter &k, Value dst, Value gates, Value bIdx,
                  ChunkRows rows, Value hv, int64_t numRows = kChunk) {
  LoopEmitter &e = k.e;
  auto ifOp = scf::IfOp::create(k.b, k.ult(k.tid, e.index(numRows)), false);
  OpBuilder::InsertionGuard guard(k.b);
  k.b.setInsertionPointToStart(ifOp.thenBlock());
  Value g = e.f32(0.0f);
  if (gates)
    g = k.loadRowOrZero(k.tid, rows.valid, k.b.getF32Type(), [&](Value r) {
      return e.loadF32(gates, {bIdx, e.addIndex(rows.t0, r), hv});
    });
  memref::StoreOp::create(k.b, g, dst, ValueRange{k.tid});
}

//===----------------------------------------------------------------------===//
// linattn.l2norm: one warp per row, x / sqrt(sum(x^2) + eps).
//===----------------------------------------------------------------------===//

LogicalResult lowerL2Norm(L2NormOp op) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  LoopEmitter e(b);
  auto type = cast<RankedTensorType>(op.getInput().getType());
  if (type.getRank() != 4)
    return op.emitOpError() << "GPU kernel normalises [B, T, H, K] operands";
  int64_t n = type.getDimSize(3); // static: the op's verifier
  if (n > kMaxL2NormKeys)
    return op.emitOpError() << "GPU l2norm kernel takes K of at most "
                            << kMaxL2NormKeys << " (a warp per row), got " << n;
  Value in = e.toBuffer(op.getInput());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < 4; ++d)
    sizes.push_back(e.dim(in, d));
  Value out = e.allocFor(op.getResult().getType(), sizes);
  Value blocks = arith::CeilDivUIOp::create(b, sizes[1], e.index(kWarps));
  emitLaunch(b, {blocks, sizes[2], sizes[0]}, /*smemBytes=*/0,
             b.getBF16Type(), [&](KernelEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value t = e.addIndex(e.mulIndex(body->getArgument(0), e.index(kWarps)),
                         k.warp);
    Value h = body->getArgument(1), bIdx = body->getArgument(2);
    // The whole warp takes row t or skips it, so the shuffles below see
    // all 32 lanes.
    auto ifOp = scf::IfOp::create(b, k.ult(t, sizes[1]), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    // Lane l holds x[l + 32 j]: consecutive lanes, consecutive addresses.
    SmallVector<Value> x, key;
    Value sum = e.f32(0.0f);
    for (int64_t j = 0; j * 32 < n; ++j) {
      key.push_back(e.addIndex(k.lane, e.index(32 * j)));
      Value xj = (j + 1) * 32 <= n
                     ? e.loadF32(in, {bIdx, t, h, key.back()})
                     : k.loadRowOrZero(key.back(), e.index(n), b.getF32Type(),
                                       [&](Value i) {
                                         return e.loadF32(in, {bIdx, t, h, i});
                                       });
      x.push_back(xj);
      sum = math::FmaOp::create(b, xj, xj, sum);
    }
    // sum(x^2) over the row by a butterfly of shuffles.
    for (int32_t offset = 16; offset > 0; offset /= 2)
      sum = e.add(sum, gpu::ShuffleOp::create(b, sum, offset, 32,
                                              gpu::ShuffleMode::XOR)
                           .getShuffleResult());
    Value inv = arith::DivFOp::create(
        b, e.f32(1.0f), math::SqrtOp::create(b, e.add(sum, e.f32(kL2NormEps))));
    for (auto [j, xj] : llvm::enumerate(x)) {
      auto store = [&] {
        e.storeFromF32(e.mul(xj, inv), out, {bIdx, t, h, key[j]});
      };
      if ((int64_t(j) + 1) * 32 <= n) {
        store();
        continue;
      }
      auto tail = scf::IfOp::create(b, k.ult(key[j], e.index(n)), false);
      OpBuilder::InsertionGuard tailGuard(b);
      b.setInsertionPointToStart(tail.thenBlock());
      store();
    }
  });
  e.replaceWithBuffers(op, {out});
  return success();
}

//===----------------------------------------------------------------------===//
// linattn.chunk_cumsum: a warp per (chunk, head) for scalar gates, a
// thread per (chunk, head, key) for per-key gates.
//===----------------------------------------------------------------------===//

/// Reads the gate at (b, t, hv[, key]): from its buffer, or, for a gate made
/// by `tensor.generate` (constant decays), by inlining the generator; a 1-D
/// constant tensor it extracts from becomes a constant vector so that the
/// kernel does not read host memory.
class GateReader {
public:
  GateReader(LoopEmitter &e, Value gate) : e(e) {
    generator = gate.getDefiningOp<tensor::GenerateOp>();
    if (!generator || !inlinable(generator))
      buffer = e.toBuffer(gate), generator = nullptr;
  }

  Value read(ImplicitLocOpBuilder &b, ValueRange indices) {
    if (!generator)
      return e.loadF32(buffer, indices);
    IRMapping map;
    Block &body = generator.getBody().front();
    for (auto [arg, idx] : llvm::zip(body.getArguments(), indices))
      map.map(arg, idx);
    for (Operation &op : body.without_terminator()) {
      if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
        auto cst = extract.getTensor().getDefiningOp<arith::ConstantOp>();
        auto dense = cast<DenseElementsAttr>(cst.getValue());
        auto vecType = VectorType::get(dense.getType().getShape(),
                                       dense.getType().getElementType());
        Value vec = arith::ConstantOp::create(b, dense.reshape(
            cast<ShapedType>(vecType)));
        Value x = vector::ExtractOp::create(
            b, vec, ArrayRef<OpFoldResult>{map.lookupOrDefault(extract.getIndices()[0])});
        map.map(extract.getResult(), x);
        continue;
      }
      b.clone(op, map);
    }
    Value y = map.lookupOrDefault(body.getTerminator()->getOperand(0));
    if (!y.getType().isF32())
      y = arith::ExtFOp::create(b, b.getF32Type(), y);
    return y;
  }

  /// Size of dimension d of the gate (a generator's extents are read from
  /// its operands, so that nothing keeps it alive).
  Value size(int64_t d) {
    if (!generator)
      return e.dim(buffer, d);
    RankedTensorType type = generator.getType();
    if (!type.isDynamicDim(d))
      return e.index(type.getDimSize(d));
    return generator.getDynamicExtents()[type.getDynamicDimIndex(d)];
  }

private:
  /// Pure arithmetic on indices and 1-D constant tensors only.
  static bool inlinable(tensor::GenerateOp op) {
    for (Operation &inner : op.getBody().front().without_terminator()) {
      if (auto extract = dyn_cast<tensor::ExtractOp>(inner)) {
        auto cst = extract.getTensor().getDefiningOp<arith::ConstantOp>();
        if (!cst || extract.getIndices().size() != 1 ||
            !isa<DenseElementsAttr>(cst.getValue()))
          return false;
        continue;
      }
      if (inner.getNumRegions() != 0 || !isPure(&inner))
        return false;
      for (Value operand : inner.getOperands())
        if (!op.getBody().isAncestor(operand.getParentRegion()) &&
            !operand.getDefiningOp<arith::ConstantOp>())
          return false;
    }
    return true;
  }

  LoopEmitter &e;
  tensor::GenerateOp generator;
  Value buffer;
};

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
                                   int64_t rowsPerChunk = kChunk) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  int64_t perLane = rowsPerChunk / 32;
  Value r0 = e.mulIndex(k.lane, e.index(perLane));
  SmallVector<Value> g;
  for (int64_t j = 0; j < perLane; ++j)
    g.push_back(k.loadRowOrZero(e.addIndex(r0, e.index(j)), rows.valid,
                                b.getF32Type(), [&](Value row) {
      return gate.read(b, {bIdx, e.addIndex(rows.t0, row), hv});
    }));
  Value laneI32 = arith::IndexCastOp::create(b, b.getI32Type(), k.lane);
  // x from lane - offset, 0 for the first `offset` lanes.
  auto up = [&](Value x, int32_t offset) {
    Value y = gpu::ShuffleOp::create(b, x, offset, 32, gpu::ShuffleMode::UP)
                  .getShuffleResult();
    Value inRange = arith::CmpIOp::create(
        b, arith::CmpIPredicate::sge, laneI32,
        arith::ConstantIntOp::create(b, offset, 32));
    return k.select(inRange, y, e.f32(0.0f));
  };
  Value laneSum = g[0];
  for (int64_t j = 1; j < perLane; ++j)
    laneSum = e.add(laneSum, g[j]);
  for (int32_t offset = 1; offset < 32; offset *= 2)
    laneSum = e.add(laneSum, up(laneSum, offset));
  SmallVector<Value> sums{e.add(up(laneSum, 1), g[0])};
  for (int64_t j = 1; j < perLane; ++j)
    sums.push_back(e.add(sums.back(), g[j]));
  return sums;
}

/// Stores the calling warp's G_{jl}, ..., G_{jl + j - 1} of a chunk (j =
/// sums.size()): into `dst` at G[b, t0 + r, hv] for rows r below
/// `rows.valid`, and into the shared vector `rowShared` (when given) at r,
/// 0 at or past `rows.valid`.
void storeChunkCumsum(KernelEmitter &k, ArrayRef<Value> sums, Value dst,
                      Value rowShared, Value bIdx, ChunkRows rows, Value hv) {
  LoopEmitter &e = k.e;
  Value r0 = e.mulIndex(k.lane, e.index(sums.size()));
  for (auto [j, sum] : llvm::enumerate(sums)) {
    Value r = e.addIndex(r0, e.index(j));
    Value valid = k.ult(r, rows.valid);
    if (rowShared)
      memref::StoreOp::create(k.b, k.select(valid, sum, e.f32(0.0f)), rowShared,
                              ValueRange{r});
    auto ifOp = scf::IfOp::create(k.b, valid, false);
    OpBuilder::InsertionGuard guard(k.b);
    k.b.setInsertionPointToStart(ifOp.thenBlock());
    memref::StoreOp::create(k.b, sum, dst,
                            ValueRange{bIdx, e.addIndex(rows.t0, r), hv});
  }
}

/// Erases a chunk_cumsum that nothing reads any more, and the constant-gate
/// generator it read once nothing else does (the kernels that read the
/// gates inlined it), so that no host loop materialises it.
void eraseCumsum(ChunkCumsumOp op) {
  auto generator = op.getGate().getDefiningOp<tensor::GenerateOp>();
  op.erase();
  if (generator && generator->use_empty())
    generator->erase();
}

/// The scalar chunk_cumsum that `op`'s UT kernel can compute on the way:
/// the producer of its [B, T, HV] gates when every other reader comes
/// after `op` in its block (the UT kernel runs first, so they may read
/// what it writes). Null otherwise.
ChunkCumsumOp cumsumForUTKernel(UTTransformOp op) {
  auto cumsum = op.getGates() ? op.getGates().getDefiningOp<ChunkCumsumOp>()
                              : nullptr;
  if (!cumsum || cast<ShapedType>(cumsum.getType()).getRank() != 3)
    return nullptr;
  for (Operation *user : cumsum->getUsers())
    if (user != op.getOperation() &&
        (user->getBlock() != op->getBlock() || !op->isBeforeInBlock(user)))
      return nullptr;
  return cumsum;
}

/// What a per-key cumsum kernel writes for the state pass besides G (GLA):
/// the keys decayed to their chunk's last row and the chunks' total gates,
///   K'[b, t, hv, :] = k[b, t, h, :] * exp(G_C - G_t)   (keys' type),
///   G_C[b, n, hv, :] = G at chunk n's last valid row    (f32),
/// so that the state pass stages K' and one row of G_C per chunk instead of
/// K and the chunk's [64][K] gates, and its loop has no decay pass
/// (bench/NOTES.md c38).
struct DecayedKeys {
  Value keys, chunkTotals;
};

/// The chunk_state_pass that can read decayed keys from `cumsum`'s kernel:
/// it takes the per-key cumsum's G as its gates, unsegmented, in 64-row
/// chunks, and every other reader of G comes after it in its block (the
/// cumsum kernel then runs just before it, where its keys are defined).
/// Null otherwise.
ChunkStatePassOp statePassForDecayedKeys(ChunkCumsumOp cumsum) {
  if (cast<ShapedType>(cumsum.getType()).getRank() != 4 ||
      cumsum.getChunkSize() != kChunk)
    return nullptr;
  ChunkStatePassOp statePass;
  for (Operation *user : cumsum->getUsers())
    if (auto pass = dyn_cast<ChunkStatePassOp>(user))
      if (pass.getGates() == cumsum.getResult() && !pass.getSegmentChunks() &&
          !pass.getW() && pass.getChunkSize() == kChunk && !statePass)
        statePass = pass;
  if (!statePass)
    return nullptr;
  for (Operation *user : cumsum->getUsers())
    if (user != statePass.getOperation() &&
        (user->getBlock() != statePass->getBlock() ||
         !statePass->isBeforeInBlock(user)))
      return nullptr;
  return statePass;
}

/// Lowers a chunk_cumsum to its kernel; with `decayFor` (per-key gates,
/// statePassForDecayedKeys), the kernel runs just before that state pass
/// and also writes its DecayedKeys into `decayed`.
LogicalResult lowerChunkCumsum(ChunkCumsumOp op, ChunkStatePassOp decayFor = nullptr,
                               DecayedKeys *decayed = nullptr) {
  auto type = cast<RankedTensorType>(op.getGate().getType());
  bool perKey = type.getRank() == 4;
  int64_t chunk = op.getChunkSize();
  if (failed(checkChunkGeometry(op, chunk, {},
                                perKey ? "per-key gates" : "")))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), decayFor ? decayFor.getOperation()
                                               : op.getOperation());
  LoopEmitter e(b);
  int64_t numKeys = perKey ? type.getDimSize(3) : 1;
  if (numKeys > 1024)
    return op.emitOpError() << "GPU cumsum runs a thread per key; at most 1024 keys";
  GateReader gate(e, op.getGate());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(gate.size(d));
  Value out = e.allocFor(op.getResult().getType(), sizes);
  Value numChunks = arith::CeilDivUIOp::create(b, sizes[1], e.index(chunk));
  auto finish = [&] {
    op.getResult().replaceAllUsesWith(e.toTensor(out, op.getResult().getType()));
    eraseCumsum(op);
    return success();
  };

  if (!perKey) {
    // Scalar gates [B, T, HV]: a warp per (chunk, head), up to 8 heads per
    // block (their gates share 32-byte sectors), by warpChunkCumsum.
    int64_t headsPerBlock = type.isDynamicDim(2)
                                ? 8
                                : std::clamp<int64_t>(type.getDimSize(2), 1, 8);
    Value headBlocks =
        arith::CeilDivUIOp::create(b, sizes[2], e.index(headsPerBlock));
    emitLaunch(b, {numChunks, headBlocks, sizes[0]}, /*smemBytes=*/0,
               b.getF32Type(), [&](KernelEmitter &k) {
      Block *body = b.getInsertionBlock();
      Value n = body->getArgument(0), bIdx = body->getArgument(2);
      Value hv = e.addIndex(e.mulIndex(body->getArgument(1), e.index(headsPerBlock)),
                            k.warp);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(hv, sizes[2]), false).thenBlock());
      ChunkRows rows = chunkRows(e, n, sizes[1], chunk);
      storeChunkCumsum(k, warpChunkCumsum(k, gate, bIdx, rows, hv, chunk), out,
                       Value(), bIdx, rows, hv);
    }, 32 * headsPerBlock);
    return finish();
  }

  // Per-key gates [B, T, HV, K]: a thread per (chunk, head, key), keys
  // contiguous in memory.
  Value keys, decayedKeys, chunkTotals;
  int64_t numVHeads = type.getDimSize(2), numQKHeads = 0;
  if (decayFor) {
    keys = e.toBuffer(decayFor.getK());
    numQKHeads = dimOf(decayFor.getK(), 2);
    auto keyType = cast<RankedTensorType>(decayFor.getK().getType());
    decayedKeys = e.allocFor(
        RankedTensorType::get(type.getShape(), keyType.getElementType()), sizes);
    chunkTotals = e.allocFor(type, {sizes[0], numChunks, sizes[2], sizes[3]});
  }
  auto launch = gpu::LaunchOp::create(b, numChunks, sizes[2], sizes[0],
                                      e.index(numKeys), e.index(1), e.index(1));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&launch.getBody().front());
    auto terminator = gpu::TerminatorOp::create(b);
    b.setInsertionPoint(terminator);
    Value n = launch.getBlockIds().x, hv = launch.getBlockIds().y;
    Value bIdx = launch.getBlockIds().z, key = launch.getThreadIds().x;
    ChunkRows rows = chunkRows(e, n, sizes[1]);
    // Straight-line code: the chunk's 64 gates are loaded first, all in
    // flight at once (rows past T clamped to the last valid row and
    // counted as 0), then summed and stored. A loop of load, add, store
    // waits a full memory latency per row: the stores may alias the gates
    // as far as the compiler knows, so no load moves above them.
    Value lastRow = e.subIndex(e.addIndex(rows.t0, rows.valid), e.index(1));
    auto index = [&](Value t) { return SmallVector<Value>{bIdx, t, hv, key}; };
    SmallVector<Value> gates, inRange, rowKeys;
    Value h = decayFor ? e.qkHead(hv, numVHeads, numQKHeads) : Value();
    for (int64_t r = 0; r < kChunk; ++r) {
      Value t = e.addIndex(rows.t0, e.index(r));
      Value valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                          e.index(r), rows.valid);
      inRange.push_back(valid);
      Value clamped = e.minIndex(t, lastRow);
      gates.push_back(gate.read(b, index(clamped)));
      if (decayFor)
        rowKeys.push_back(e.loadF32(keys, {bIdx, clamped, h, key}));
    }
    Value sum = e.f32(0.0f);
    SmallVector<Value> sums;
    for (int64_t r = 0; r < kChunk; ++r) {
      sum = e.add(sum, arith::SelectOp::create(b, inRange[r], gates[r],
                                               e.f32(0.0f)));
      sums.push_back(sum);
      auto store = scf::IfOp::create(b, inRange[r], /*withElseRegion=*/false);
      OpBuilder::InsertionGuard storeGuard(b);
      b.setInsertionPointToStart(store.thenBlock());
      memref::StoreOp::create(
          b, sum, out, index(e.addIndex(rows.t0, e.index(r))));
    }
    if (decayFor) {
      // G_C is the last sum (rows past T add 0); exp(G_C - G_t) <= 1.
      memref::StoreOp::create(b, sum, chunkTotals, ValueRange{bIdx, n, hv, key});
      for (int64_t r = 0; r < kChunk; ++r) {
        auto store = scf::IfOp::create(b, inRange[r], /*withElseRegion=*/false);
        OpBuilder::InsertionGuard storeGuard(b);
        b.setInsertionPointToStart(store.thenBlock());
        e.storeFromF32(e.mul(rowKeys[r], approxExp(b, e.sub(sum, sums[r]))),
                       decayedKeys, index(e.addIndex(rows.t0, e.index(r))));
      }
    }
  }
  if (decayed)
    *decayed = {decayedKeys, chunkTotals};
  return finish();
}

//===----------------------------------------------------------------------===//
// linattn.ut_transform
//===----------------------------------------------------------------------===//

LogicalResult lowerUTTransform(UTTransformOp op, Type mmaType) {
  std::optional<Type> mmaElem = mmaType;
  int64_t numQKHeads = dimOf(op.getK(), 2), K = dimOf(op.getK(), 3);
  int64_t numVHeads = dimOf(op.getV(), 2), V = dimOf(op.getV(), 3);
  if (failed(checkChunkGeometry(op, op.getChunkSize(), {{"K", K}, {"V", V}},
                                "the UT transform")))
    return failure();

  ImplicitLocOpBuilder b(op.getLoc(), op);
  LoopEmitter e(b);
  Value kBuf = e.toBuffer(op.getK()), vBuf = e.toBuffer(op.getV());
  Value beta = e.toBuffer(op.getBeta());
  Value batch = e.dim(kBuf, 0), seqLen = e.dim(kBuf, 1);
  // Scalar gates G = chunk_cumsum(g) that only later ops read: this kernel,
  // their first reader, sums g itself (warp 0, warpChunkCumsum) and writes
  // G for the state pass and the output kernel, so that no cumsum kernel
  // runs (NOTES c22: Gated DeltaNet 0.096 -> 0.092 ms at T = 1024).
  ChunkCumsumOp cumsum = cumsumForUTKernel(op);
  std::optional<GateReader> rawGates;
  Value gates, cumulative;
  if (cumsum) {
    rawGates.emplace(e, cumsum.getGate());
    cumulative = e.allocFor(cumsum.getType(),
                            {batch, seqLen, e.index(numVHeads)});
  } else if (op.getGates()) {
    gates = e.toBuffer(op.getGates());
  }
  // W [B, T, HV, K], or split [B, T, HV, 2, K] (hi, lo).
  bool splitW = isSplitW(op.getW().getType());
  SmallVector<Value> wSizes = {batch, seqLen, e.index(numVHeads)};
  if (splitW)
    wSizes.push_back(e.index(2));
  wSizes.push_back(e.index(K));
  Value w = e.allocFor(op.getW().getType(), wSizes);
  Value u = e.allocFor(op.getU().getType(),
                       {batch, seqLen, e.index(numVHeads), e.index(V)});
  float rank1Scale = op.getRank1Scale().convertToFloat();

  // Shared memory: Y holds the key tile, later the value tile (16-bit,
  // exact inputs); X holds T in fp32; R holds L in fp32, later the scaled T
  // split in hi/lo 16-bit tiles; then 64 row gates, 64 betas and the
  // inverse's [16][48] fp32 scratch M. T's and L's rows are padded by 16
  // bytes: the inverse's lanes read 16 different rows at once (step 3b),
  // which a 256-byte stride puts in the same banks.
  int64_t fpStride = kChunk + 4;
  int64_t yBytes = kChunk * (std::max(K, V) + kPad) * 2;
  int64_t xOffset = yBytes, rOffset = xOffset + kChunk * fpStride * 4;
  int64_t tileBytes = kChunk * (kChunk + kPad) * 2;
  int64_t gOffset = rOffset + std::max(kChunk * fpStride * 4, 2 * tileBytes);
  int64_t betaOffset = gOffset + kChunk * 4;
  int64_t mOffset = betaOffset + kChunk * 4;
  int64_t mCols = kChunk - 16;
  Value numChunks = arith::CeilDivUIOp::create(b, seqLen, e.index(kChunk));
  emitLaunch(b, {numChunks, e.index(numVHeads), batch},
             mOffset + 16 * mCols * 4, *mmaElem, [&](KernelEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value n = body->getArgument(0), hv = body->getArgument(1);
    Value bIdx = body->getArgument(2);
    Value h = e.qkHead(hv, numVHeads, numQKHeads);
    ChunkRows rows = chunkRows(e, n, seqLen);
    Type elem = *mmaElem, f32 = b.getF32Type();
    Value gShared = k.vec(gOffset, kChunk, f32);
    Value betaShared = k.vec(betaOffset, kChunk, f32);
    Value keyTile = k.tile(0, kChunk, K + kPad, elem);
    Value valueTile = k.tile(0, kChunk, V + kPad, elem);
    Value tF32 = k.tile(xOffset, kChunk, fpStride, f32);
    Value lTile = k.tile(rOffset, kChunk, fpStride, f32);
    Value tHi = k.tile(rOffset, kChunk, kChunk + kPad, elem);
    Value tLo = k.tile(rOffset + tileBytes, kChunk, kChunk + kPad, elem);
    Value mTile = k.tile(mOffset, 16, mCols, f32);

    // 1. Keys, gates and betas of the chunk.
    k.fillTile(keyTile, kChunk, K, rows.valid, [&](Value r, Value c) {
      return k.load8(kBuf, {bIdx, e.addIndex(rows.t0, r), h, c});
    });
    if (cumsum) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(k.warp, e.index(1)), false).thenBlock());
      storeChunkCumsum(k, warpChunkCumsum(k, *rawGates, bIdx, rows, hv),
                       cumulative, gShared, bIdx, rows, hv);
    } else {
      fillRowGates(k, gShared, gates, bIdx, rows, hv);
    }
    fillRowGates(k, betaShared, beta, bIdx, rows, hv);
    k.barrier();

    // 2. A = K K^T; L = StrictLower(c_i A_ij exp(G_i - G_j)) for valid rows.
    Value m0 = e.mulIndex(k.warp, e.index(16));
    SmallVector<SmallVector<Value>> acc = k.zeroAcc(kChunk / 8);
    k.gemm(acc, {{keyTile}}, m0, {{keyTile}}, K);
    for (int64_t nt = 0; nt < kChunk / 8; ++nt) {
      for (int64_t i = 0; i < 4; ++i) {
        Value r = k.accRow(m0, i), c = k.accCol(8 * nt, i);
        Value gr = memref::LoadOp::create(b, gShared, r);
        Value gc = memref::LoadOp::create(b, gShared, c);
        Value cr = e.mul(e.f32(rank1Scale),
                         memref::LoadOp::create(b, betaShared, r));
        Value l = e.mul(e.mul(acc[nt][i], cr), k.exp(e.sub(gr, gc)));
        Value keep = arith::AndIOp::create(b, k.ult(c, r), k.ult(r, rows.valid));
        memref::StoreOp::create(b, k.select(keep, l, e.f32(0.0f)), lTile,
                                ValueRange{r, c});
      }
    }
    // T's blocks above the diagonal stay zero; the inverse writes the rest.
    {
      auto f32x4 = VectorType::get({4}, f32);
      Value zero = arith::ConstantOp::create(b, f32x4, b.getZeroAttr(f32x4));
      k.forEachOfBlock(kChunk * kChunk / 4, [&](Value idx) {
        Value r = arith::DivUIOp::create(b, idx, e.index(kChunk / 4));
        Value c = e.mulIndex(arith::RemUIOp::create(b, idx, e.index(kChunk / 4)),
                             e.index(4));
        vector::StoreOp::create(b, zero, tF32, ValueRange{r, c}, false,
                                llvm::Align(16));
      });
    }
    k.barrier();

    // 3. T = (I + L)^-1 in fp32, by blocks of 16 rows. Block row I of
    //    (I + L) T = I gives, for column blocks J < I,
    //      T_II = (I + L_II)^-1,   T_IJ = -T_II M_IJ,
    //      M_IJ = sum_{J <= K < I} L_IK T_KJ = L[I, 16 J : 16 I] T[16 J : 16 I, J]
    //    (T is zero above its diagonal blocks).
    //    a. Warp w inverts diagonal block w by forward substitution, one
    //       column per lane (lanes l and l + 16 the same one): t_i = [i ==
    //       c] - sum_{j < i} L_ij t_j over the block's 16 rows; L's rows
    //       are read as 4-vectors, the same address in every lane.
    //    b. Block rows I = 1, 2, 3 in turn (r0 = 16 I). Half-warp h = tid /
    //       16 takes column pair c = 16 J + 2 h of every column block J < I,
    //       its lane r = tid % 16 row r: M's pair, then T's,
    //         M[r][c] = sum_{16 J <= j < r0} L[r0 + r][j] T[j][c]
    //       (T[j][c] = 0 for j < 16 J), two columns per L element loaded.
    //       The pair's M column is the half-warp's own, so a warp barrier
    //       (not the block's) lets its lanes read each other's rows.
    {
      auto f32x4 = VectorType::get({4}, f32);
      auto f32x2 = VectorType::get({2}, f32);
      auto dot4 = [&](ArrayRef<Value> partial) {
        return e.add(e.add(partial[0], partial[1]), e.add(partial[2], partial[3]));
      };
      Value base = e.mulIndex(k.warp, e.index(16));
      Value c = arith::RemUIOp::create(b, k.lane, e.index(16));
      SmallVector<Value> t(16);
      for (int64_t i = 0; i < 16; ++i) {
        // Four partial sums, one per vector lane, shorten the chain.
        SmallVector<Value> partial(4, e.f32(0.0f));
        for (int64_t j0 = 0; j0 < i; j0 += 4) {
          Value l = vector::LoadOp::create(
              b, f32x4, lTile,
              ValueRange{e.addIndex(base, e.index(i)), e.addIndex(base, e.index(j0))},
              false, llvm::Align(16));
          for (int64_t x = 0; x < 4 && j0 + x < i; ++x)
            partial[x] = math::FmaOp::create(
                b, vector::ExtractOp::create(b, l, x), t[j0 + x], partial[x]);
        }
        Value diag = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, c,
                                           e.index(i));
        t[i] = e.sub(k.select(diag, e.f32(1.0f), e.f32(0.0f)), dot4(partial));
      }
      for (int64_t i = 0; i < 16; ++i)
        memref::StoreOp::create(b, t[i], tF32,
                                ValueRange{e.addIndex(base, e.index(i)),
                                           e.addIndex(base, c)});
      // sum_{x < n} a[aRow][aCol0 + x] bt[bRow0 + x][col .. col + 1]: a's
      //    row read as 4-vectors, bt's column pair as 2-vectors (the same
      //    address in the 16 lanes of a half-warp), two partial sums per
      //    column.
      auto rowTimesColumnPair = [&](Value a, Value aRow, int64_t aCol0, Value bt,
                                    int64_t bRow0, int64_t n, Value col) {
        SmallVector<Value> partial(4, e.f32(0.0f));
        for (int64_t x0 = 0; x0 < n; x0 += 4) {
          Value aRow4 = vector::LoadOp::create(b, f32x4, a,
                                               ValueRange{aRow, e.index(aCol0 + x0)},
                                               false, llvm::Align(16));
          for (int64_t x = 0; x < 4; ++x) {
            Value ax = vector::ExtractOp::create(b, aRow4, x);
            Value pair = vector::LoadOp::create(
                b, f32x2, bt, ValueRange{e.index(bRow0 + x0 + x), col}, false,
                llvm::Align(8));
            for (int64_t j = 0; j < 2; ++j)
              partial[2 * j + x % 2] = math::FmaOp::create(
                  b, ax, vector::ExtractOp::create(b, pair, j),
                  partial[2 * j + x % 2]);
          }
        }
        return vector::FromElementsOp::create(
            b, f32x2,
            ValueRange{e.add(partial[0], partial[1]), e.add(partial[2], partial[3])});
      };
      static_assert(kThreads / 16 * 2 == 16,
                    "the block's half-warps cover a 16-column block in pairs");
      Value halfWarp = arith::DivUIOp::create(b, k.tid, e.index(16));
      Value r = arith::RemUIOp::create(b, k.tid, e.index(16));
      Value pairCol = e.mulIndex(halfWarp, e.index(2));
      Value fullWarp = arith::ConstantOp::create(b, b.getI32IntegerAttr(-1));
      for (int64_t blockRow = 1; blockRow < kChunk / 16; ++blockRow) {
        int64_t r0 = 16 * blockRow;
        Value row = e.addIndex(r, e.index(r0));
        k.barrier();
        for (int64_t J = 0; J < blockRow; ++J) {
          Value col = e.addIndex(pairCol, e.index(16 * J));
          Value m = rowTimesColumnPair(lTile, row, 16 * J, tF32, 16 * J,
                                       r0 - 16 * J, col);
          vector::StoreOp::create(b, m, mTile, ValueRange{r, col}, false,
                                  llvm::Align(8));
        }
        NVVM::SyncWarpOp::create(b, fullWarp);
        //       T[r0 + r][c] = -sum_{m < 16} T[r0 + r][r0 + m] M[m][c].
        for (int64_t J = 0; J < blockRow; ++J) {
          Value col = e.addIndex(pairCol, e.index(16 * J));
          Value sum = rowTimesColumnPair(tF32, row, r0, mTile, 0, 16, col);
          vector::StoreOp::create(b, arith::NegFOp::create(b, sum), tF32,
                                  ValueRange{row, col}, false, llvm::Align(8));
        }
      }
    }
    k.barrier();

    // 4. W = (T diag(c exp(G))) K, then U = (T diag(beta)) V: the column
    //    scaling goes into T (split over L), so the keys and values stay
    //    exact.
    //    Each product's result leaves through shared memory when its
    //    staging tile fits (`stageOffset` >= 0): the warps store their
    //    accumulator pairs there, then the block copies whole rows out in
    //    16-byte pieces (coalesced: 8-16 stores per thread instead of 32
    //    scattered pairs). W's tile overlays the T hi/lo tiles (T's fp32
    //    copy is still needed for U); U's the fp32 T as well, which is
    //    dead by then.
    auto product = [&](int64_t cols, Value tile,
                       function_ref<Value(Value)> columnScale) {
      k.fillTile(tHi, kChunk, kChunk, Value(), [&](Value r, Value c) {
        SmallVector<Value> scales;
        for (int64_t j = 0; j < 8; ++j)
          scales.push_back(columnScale(e.addIndex(c, e.index(j))));
        Value scale = vector::FromElementsOp::create(
            b, VectorType::get({8}, b.getF32Type()), scales);
        return arith::MulFOp::create(b, k.load8(tF32, {r, c}), scale).getResult();
      }, tLo);
      k.barrier();
      SmallVector<SmallVector<Value>> out = k.zeroAcc(cols / 8);
      k.gemm(out, {{tHi}, TileView{tLo}}, m0, {{tile, /*transposed=*/true}}, kChunk);
      return out;
    };
    // Stores a product's rows [t0, t0 + valid) to dst: [B, T, HV, cols],
    // or part `part` of a split W [B, T, HV, 2, cols].
    auto storeResult = [&](ArrayRef<SmallVector<Value>> out, int64_t cols,
                           Value dst, int64_t stageOffset,
                           std::optional<int64_t> part) {
      auto dstIndices = [&](Value r, Value c) -> SmallVector<Value> {
        Value t = e.addIndex(rows.t0, r);
        if (part)
          return {bIdx, t, hv, e.index(*part), c};
        return {bIdx, t, hv, c};
      };
      if (stageOffset < 0) {
        for (int64_t nt = 0; nt < cols / 8; ++nt)
          k.forEachPair(m0, nt, [&](Value r, Value c, int64_t i) {
            k.storePair(out[nt][i], out[nt][i + 1], dst, dstIndices(r, c),
                        k.ult(r, rows.valid));
          });
        k.barrier();
        return;
      }
      Type dstElem = cast<MemRefType>(dst.getType()).getElementType();
      Value stage = k.tile(stageOffset, kChunk, cols + kPad, dstElem);
      k.barrier(); // every warp is done reading the T tiles (or the stage)
      for (int64_t nt = 0; nt < cols / 8; ++nt)
        k.forEachPair(m0, nt, [&](Value r, Value c, int64_t i) {
          k.storePair(out[nt][i], out[nt][i + 1], stage, {r, c}, Value());
        });
      k.barrier();
      k.copyRowsOut(stage, e.index(0), kChunk, cols, rows.valid, dst, dstIndices);
      k.barrier();
    };
    // Staging tiles: W's in R (the T hi/lo tiles), U's in X and R.
    auto stageBytes = [&](int64_t cols, Value dst) {
      return kChunk * (cols + kPad) *
             int64_t(cast<MemRefType>(dst.getType()).getElementTypeBitWidth() / 8);
    };
    int64_t rBytes = gOffset - rOffset;
    int64_t wStage = stageBytes(K, w) <= rBytes ? rOffset : -1;
    int64_t uStage = stageBytes(V, u) <= gOffset - xOffset ? xOffset : -1;
    SmallVector<SmallVector<Value>> wOut = product(K, keyTile, [&](Value c) {
      Value g = memref::LoadOp::create(b, gShared, c);
      Value betaC = memref::LoadOp::create(b, betaShared, c);
      return e.mul(e.mul(e.f32(rank1Scale), betaC), k.exp(g));
    });
    if (splitW) {
      // hi = W rounded (storePair rounds), lo = W - hi, rounded in turn:
      // the state pass reads both by ldmatrix (NOTES c28).
      storeResult(wOut, K, w, wStage, /*part=*/0);
      Type wElem = cast<MemRefType>(w.getType()).getElementType();
      for (auto &tile : wOut)
        for (Value &x : tile)
          x = e.roundingRest(x, wElem);
      storeResult(wOut, K, w, wStage, /*part=*/1);
    } else {
      storeResult(wOut, K, w, wStage, std::nullopt);
    }
    k.fillTile(valueTile, kChunk, V, rows.valid, [&](Value r, Value c) {
      return k.load8(vBuf, {bIdx, e.addIndex(rows.t0, r), hv, c});
    });
    storeResult(product(V, valueTile, [&](Value c) {
                  return memref::LoadOp::create(b, betaShared, c).getResult();
                }),
                V, u, uStage, std::nullopt);
  });
  // The cumsum's other readers take G from this kernel; the cumsum is
  // left without uses, and the pass erases it.
  if (cumsum)
    cumsum.getResult().replaceAllUsesWith(
        e.toTensor(cumulative, cumsum.getType()));
  e.replaceWithBuffers(op, {w, u});
  return success();
}

//===----------------------------------------------------------------------===//
// linattn.chunk_state_pass
//===----------------------------------------------------------------------===//

/// Decays a staged chunk's rows toward reference rows:
///   dst[r][c] = src[r][c] * exp(G[ref(r)][c] - G[r][c]) for r < valid,
///   0 beyond,
/// for [64][cols] tiles src and dst (16-bit or f32; the same tile for an
/// in-place update) and per-key log gates G ([64][cols] f32), 8 columns
/// per thread and step. With the in-chunk cumulative G and ref(r) >= r
/// the factor is <= 1 (gates <= 0), so nothing overflows. Rows past
/// `valid` are dropped by a select: their gates are staged zeros.
void decayRows(KernelEmitter &k, Value src, Value dst, Value g, Value valid,
               function_ref<Value(Value)> ref, int64_t cols) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  constexpr int64_t kWidth = 8;
  Type elem = cast<MemRefType>(dst.getType()).getElementType();
  int64_t perRow = cols / kWidth;
  k.forEachOfBlock(kChunk * perRow, [&](Value idx) {
    Value r = arith::DivUIOp::create(b, idx, e.index(perRow));
    Value c = e.mulIndex(arith::RemUIOp::create(b, idx, e.index(perRow)),
                         e.index(kWidth));
    Value xs = k.loadWidened(src, {r, c}, kWidth);
    Value gs = k.loadWidened(g, {r, c}, kWidth);
    Value gRef = k.loadWidened(g, {ref(r), c}, kWidth);
    Value keep = k.ult(r, valid);
    SmallVector<Value> ys;
    for (int64_t i = 0; i < kWidth; ++i) {
      Value decay = k.exp(e.sub(vector::ExtractOp::create(b, gRef, i),
                                vector::ExtractOp::create(b, gs, i)));
      ys.push_back(k.select(
          keep, e.mul(vector::ExtractOp::create(b, xs, i), decay), e.f32(0.0f)));
    }
    Value y = vector::FromElementsOp::create(
        b, VectorType::get({kWidth}, b.getF32Type()), ys);
    if (!elem.isF32())
      y = arith::TruncFOp::create(b, VectorType::get({kWidth}, elem), y);
    vector::StoreOp::create(b, y, dst, ValueRange{r, c}, /*nontemporal=*/false,
                            llvm::Align(16));
  });
}

LogicalResult lowerChunkStatePass(ChunkStatePassOp op, Type mmaType,
                                  bool hasStMatrix,
                                  const DecayedKeys *decayed = nullptr) {
  if (op.getBeta())
    return op.emitOpError() << "the rank-1 product form has no GPU kernel: run "
                               "linattn-lower-rank1-to-wy first";
  Type elem = mmaType;
  int64_t numQKHeads = dimOf(op.getK(), 2), K = dimOf(op.getK(), 3);
  int64_t numVHeads = dimOf(op.getU(), 2), V = dimOf(op.getU(), 3);
  // Per-key gates (key_gate, GLA): G is [B, T, HV, K] and decays keys,
  // not rows of D (see step c).
  bool perKey =
      op.getGates() && cast<ShapedType>(op.getGates().getType()).getRank() == 4;
  assert(!(perKey && op.getW()) &&
         "the verifier admits per-key gates only without a rank-1 term");
  int64_t chunk = op.getChunkSize();
  if (failed(checkChunkGeometry(op, chunk, {{"K", K}, {"V", V}},
                                op.getW() ? "the WY form"
                                : perKey  ? "per-key gates"
                                          : "")))
    return failure();
  // The loop walks 64-row steps; a long chunk is stepsPerChunk of them,
  // and its state is stored before its first step only.
  int64_t stepsPerChunk = chunk / kChunk;
  // Segmented (linattn-segment-chunk-states): a block per segment of
  // segmentChunks chunks, each from zero but the first.
  std::optional<uint64_t> segmentChunks = op.getSegmentChunks();
  int64_t segmentSteps = segmentChunks ? int64_t(*segmentChunks) * stepsPerChunk : 0;

  ImplicitLocOpBuilder b(op.getLoc(), op);
  LoopEmitter e(b);
  // Decayed keys (per-key gates, from the cumsum kernel): K' takes K's
  // place (one per value head) and the chunks' total gates G_C the gates'
  // (one row per chunk); the loop neither decays keys nor waits to.
  Value kBuf = decayed ? decayed->keys : e.toBuffer(op.getK());
  Value uBuf = e.toBuffer(op.getU());
  Value wBuf = op.getW() ? e.toBuffer(op.getW()) : Value();
  Value gates = decayed             ? decayed->chunkTotals
                : op.getGates() ? e.toBuffer(op.getGates())
                                : Value();
  Value s0 = e.toBuffer(op.getInitialState());
  Value batch = e.dim(kBuf, 0), seqLen = e.dim(kBuf, 1);
  Value numChunks = arith::CeilDivUIOp::create(b, seqLen, e.index(chunk));
  Value numSteps = arith::CeilDivUIOp::create(b, seqLen, e.index(kChunk));
  Value hvDim = e.index(numVHeads);
  // Without W, D = U - W S is U: where their types agree the new values
  // are u itself, and the kernel writes no copy of it.
  Type uElem = elementOf(op.getU()), valueElem = elementOf(op.getNewValues());
  bool forwardValues = !wBuf && valueElem == uElem;
  Value newValues = forwardValues
                        ? Value()
                        : e.allocFor(op.getNewValues().getType(),
                                     {batch, seqLen, hvDim, e.index(V)});
  Value states = e.allocFor(op.getChunkStates().getType(),
                            {batch, numChunks, hvDim, e.index(K), e.index(V)});
  Value numSegmentsValue = segmentChunks ? e.segmentCount(numChunks, *segmentChunks)
                                         : Value();
  Value finalState =
      segmentChunks
          ? e.allocFor(op.getFinalState().getType(),
                       {batch, numSegmentsValue, hvDim, e.index(K), e.index(V)})
          : e.allocFor(op.getFinalState().getType(),
                       {batch, hvDim, e.index(K), e.index(V)});

  // Shared memory: `stages` stages of a chunk's inputs as they come
  // from global memory (W, K, the block's U columns, the row gates); while
  // chunk n is computed, cp.async brings chunk n + stages - 1. Rows
  // are padded so that the fragment loads below touch distinct banks: W and
  // K like every ldmatrix tile (an f32 W by 32 bytes: lanes of a half-warp
  // read 8-byte pairs of rows 8 apart), U by 16 bytes (lanes read rows 2
  // apart).
  Type kElem = elementOf(op.getK());
  Type wElem = wBuf ? elementOf(op.getW()) : Type();
  auto bytesOf = [](Type t) { return int64_t(t.getIntOrFloatBitWidth() / 8); };
  bool kIsOperand = kElem == elem; // else f32 keys (an l2norm result)
  // W in the operand type (rounded once by the UT transform) goes to the
  // tensor cores as it is; an f32 W (from f32 keys) is split as its
  // fragments are loaded; a split W (negeig) comes as two 16-bit parts,
  // staged side by side as rows of 2K (hi, then lo).
  bool wIsOperand = wBuf && wElem == elem;
  bool wSplit = wBuf && isSplitW(op.getW().getType());
  int64_t wCols = wSplit ? 2 * K : K;
  int64_t wStride = !wBuf        ? 0
                    : wIsOperand ? wCols + kPad
                                 : K + 32 / bytesOf(wElem);
  int64_t kStride = kIsOperand ? K + kPad : K + 8;
  int64_t uStride = kStateColumns + 16 / bytesOf(uElem);
  int64_t wStageBytes = wBuf ? kChunk * wStride * bytesOf(wElem) : 0;
  int64_t kStageBytes = kChunk * kStride * bytesOf(kElem);
  int64_t uStageBytes = kChunk * uStride * bytesOf(uElem);
  int64_t gateCols = perKey ? K : 1;
  int64_t gateRows = decayed ? 1 : kChunk;
  int64_t gStageBytes = gates ? gateRows * gateCols * 4 : 0;
  int64_t stageBytes = wStageBytes + kStageBytes + uStageBytes + gStageBytes;
  int64_t keysPerWarp = K / kStateKeySplit;
  static_assert(64 % (16 * kStateKeySplit) == 0,
                "every K the geometry check admits splits into 16-key k-steps");
  static_assert((kChunk / 8) % (2 * kStateKeySplit) == 0,
                "the key parts stage D's row tiles in pairs");
  int64_t keyTiles = keysPerWarp / 8, rowTiles = kChunk / 8;
  // Partial W S^T products of the warps, as held in registers: tile rt of
  // warp w at [w][rt][lane] (16 bytes each).
  bool exchange = wBuf && kStateKeySplit > 1;
  int64_t xchgBytes = exchange ? kStateWarps * rowTiles * 32 * 16 : 0;
  // Without W, D = U: where U is staged in the operand type and no copy of
  // it is written, step c takes D'^T's A fragments from the stage by
  // ldmatrix .trans (four registers per instruction) and decays each
  // register's two rows in fp32 before rounding them once: the values of
  // the accumulator-layout path, which loads, widens, decays and selects
  // element by element (a 16-bit load per element; simple GLA's state pass
  // -10% at T = 16384: bench/NOTES.md c31). Rows past T are staged zeros
  // with zero gates, so their decayed D is 0 without a select.
  bool directD = !wBuf && (!perKey || decayed) && forwardValues && uElem == elem;
  // 16-bit chunk states and new values leave through shared memory: a
  // warp's S^T and D^T accumulator tiles go in by stmatrix .trans (four
  // 8x8 tiles per instruction) as rows of the block's 32 columns, and the
  // next iteration, past its barrier, copies the rows out in 16-byte
  // pieces; two buffers alternate. Stored straight from the accumulators
  // they would take one 2-byte store per element. fp32 results (without
  // narrow-intermediates) and chips before sm_90 keep those direct stores.
  auto is16Bit = [](Type t) { return t.getIntOrFloatBitWidth() == 16; };
  bool stageStates = hasStMatrix && is16Bit(elementOf(op.getChunkStates()));
  bool stageValues = hasStMatrix && newValues && is16Bit(valueElem);
  int64_t outStride = kStateColumns + kPad;
  int64_t stateOutBytes = stageStates ? K * outStride * 2 : 0;
  int64_t valueOutBytes = stageValues ? kChunk * outStride * 2 : 0;
  int64_t outBytes = 2 * (stateOutBytes + valueOutBytes);
  // Per-key gates (GLA) that the state pass decays itself stage [64][K]
  // gates besides: their loop is not the short one, and keeps three.
  int64_t stages =
      wBuf || (perKey && !decayed) ? kStateStages : kStateStagesWithoutW;
  while (stages > 2 && stages * stageBytes + xchgBytes + outBytes > kMaxSharedBytes)
    --stages;
  int64_t xchgOffset = stages * stageBytes;
  int64_t outOffset = xchgOffset + xchgBytes;
  if (outOffset + outBytes > kMaxSharedBytes)
    return op.emitOpError() << "GPU state pass needs " << outOffset + outBytes
                            << " bytes of shared memory, more than the "
                            << kMaxSharedBytes << " a block may have";

  Value zBlocks = segmentChunks ? e.mulIndex(batch, numSegmentsValue) : batch;
  emitLaunch(b, {e.index(V / kStateColumns), hvDim, zBlocks},
             outOffset + outBytes, elem, [&](KernelEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value vTile = body->getArgument(0), hv = body->getArgument(1);
    Value bIdx = body->getArgument(2);
    // The block's steps [firstStep, endStep): all of them, or its
    // segment's; rows past endStep are prefetched as zeros (the next
    // segment's block reads them).
    Value segment, firstStep = e.index(0), endStep = numSteps, stepLimit = seqLen;
    if (segmentChunks) {
      segment = arith::RemUIOp::create(b, bIdx, numSegmentsValue);
      bIdx = arith::DivUIOp::create(b, bIdx, numSegmentsValue);
      firstStep = e.mulIndex(segment, e.index(segmentSteps));
      endStep = e.minIndex(e.addIndex(firstStep, e.index(segmentSteps)), numSteps);
      stepLimit = e.minIndex(seqLen, e.mulIndex(endStep, e.index(kChunk)));
    }
    Value h = e.qkHead(hv, numVHeads, numQKHeads);
    // The warp's 16 value columns (vLocal within the block's, vGlobal in
    // V) and its keys [key0, key0 + keysPerWarp).
    Value columnGroup = arith::DivUIOp::create(b, k.warp, e.index(kStateKeySplit));
    Value keyPart = arith::RemUIOp::create(b, k.warp, e.index(kStateKeySplit));
    Value vLocal = e.mulIndex(columnGroup, e.index(16));
    Value vGlobal = e.addIndex(e.mulIndex(vTile, e.index(kStateColumns)), vLocal);
    Value key0 = e.mulIndex(keyPart, e.index(keysPerWarp));
    Value v0 = e.mulIndex(vTile, e.index(kStateColumns));
    Type f32 = b.getF32Type();

    struct Stage {
      Value w, k, u, g;
    };
    auto stageAt = [&](Value n) {
      Value stage = arith::RemUIOp::create(b, n, e.index(stages));
      Value base = e.mulIndex(stage, e.index(stageBytes));
      auto at = [&](int64_t offset) { return e.addIndex(base, e.index(offset)); };
      Stage st;
      if (wBuf)
        st.w = k.tile(base, kChunk, wStride, wElem);
      st.k = k.tile(at(wStageBytes), kChunk, kStride, kElem);
      st.u = k.tile(at(wStageBytes + kStageBytes), kChunk, uStride, uElem);
      if (gates) // [64][1] for gates [B, T, HV] (one 4-byte copy per row),
                 // [64][K] per key, [1][K] chunk totals.
        st.g = k.tile(at(wStageBytes + kStageBytes + uStageBytes), gateRows,
                      gateCols, f32);
      return st;
    };
    // Starts the copies of chunk `n` (rows past the sequence, or every row
    // of a chunk past the last, arrive as zeros) and closes their group;
    // rows in 32-bit arithmetic where there is W (copyRowsAsync).
    bool narrowRows = wBuf != nullptr;
    auto prefetch = [&](Value n) {
      auto [t0, valid] = chunkRows(e, n, stepLimit);
      Stage st = stageAt(n);
      Value zero = e.index(0);
      if (wBuf)
        k.copyRowsAsync(st.w, zero, wCols, t0, valid, seqLen, wBuf,
                        [&](Value t, Value c) -> SmallVector<Value> {
          if (wSplit) // column c of the staged row: part c / K, key c % K
            return {bIdx, t, hv, arith::DivUIOp::create(b, c, e.index(K)),
                    arith::RemUIOp::create(b, c, e.index(K))};
          return {bIdx, t, hv, c};
        }, kChunk, narrowRows);
      k.copyRowsAsync(st.k, zero, K, t0, valid, seqLen, kBuf,
                      [&](Value t, Value c) -> SmallVector<Value> {
        return {bIdx, t, decayed ? hv : h, c};
      }, kChunk, narrowRows);
      k.copyRowsAsync(st.u, zero, kStateColumns, t0, valid, seqLen, uBuf,
                      [&](Value t, Value c) -> SmallVector<Value> {
        return {bIdx, t, hv, e.addIndex(v0, c)};
      }, kChunk, narrowRows);
      if (decayed) // chunk n's row of G_C (zeros past the last chunk)
        k.copyRowsAsync(st.g, zero, K, n,
                        k.select(k.ult(n, numChunks), e.index(1), e.index(0)),
                        numChunks, gates,
                        [&](Value chunkIdx, Value c) -> SmallVector<Value> {
          return {bIdx, chunkIdx, hv, c};
        }, /*rows=*/1);
      else if (gates)
        k.copyRowsAsync(st.g, zero, gateCols, t0, valid, seqLen, gates,
                        [&](Value t, Value c) -> SmallVector<Value> {
          if (perKey)
            return {bIdx, t, hv, c};
          return {bIdx, t, hv};
        }, kChunk, narrowRows);
      return k.commitCopies();
    };

    // S^T of the warp's columns and keys is carried as keyTiles
    // accumulator tiles: element i of tile kt is S[key0 + accCol(8 kt, i)]
    // [vGlobal + accRow(0, i)]. Flattened: tile kt at 4 kt.
    auto stateIndex = [&](int64_t kt, int64_t i) -> std::pair<Value, Value> {
      return {e.addIndex(key0, k.accCol(8 * kt, i)),
              e.addIndex(vGlobal, k.accRow(e.index(0), i))};
    };
    SmallVector<Value> init;
    Value fromInitial =
        segmentChunks ? arith::CmpIOp::create(b, arith::CmpIPredicate::eq, segment,
                                              e.index(0)).getResult()
                      : Value();
    for (int64_t kt = 0; kt < keyTiles; ++kt)
      for (int64_t i = 0; i < 4; ++i) {
        auto [key, v] = stateIndex(kt, i);
        Value x = e.loadF32(s0, {bIdx, hv, key, v});
        init.push_back(fromInitial ? k.select(fromInitial, x, e.f32(0.0f)) : x);
      }
    auto storeState = [&](ValueRange flat, Value dst, SmallVector<Value> prefix) {
      for (int64_t kt = 0; kt < keyTiles; ++kt)
        for (int64_t i = 0; i < 4; ++i) {
          auto [key, v] = stateIndex(kt, i);
          SmallVector<Value> idx = prefix;
          idx.append({key, v});
          e.storeFromF32(flat[4 * kt + i], dst, idx);
        }
    };

    // The output buffers of chunk n: S_n ([K][32] of the block's columns)
    // then D_n ([64][32]), in the states' and new values' types.
    Type stateElem = elementOf(op.getChunkStates());
    auto outputsAt = [&](Value n) -> std::pair<Value, Value> {
      Value parity = arith::RemUIOp::create(b, n, e.index(2));
      Value base = e.addIndex(e.index(outOffset),
                              e.mulIndex(parity, e.index(outBytes / 2)));
      return {stageStates ? k.tile(base, K, outStride, stateElem) : Value(),
              stageValues ? k.tile(e.addIndex(base, e.index(stateOutBytes)),
                                   kChunk, outStride, valueElem)
                          : Value()};
    };
    // Whether step n of a long chunk starts it, and so stores its state
    // (at n / stepsPerChunk).
    auto startsChunk = [&](Value n) -> Value {
      assert(stepsPerChunk > 1 && "every step starts a 64-token chunk");
      return arith::CmpIOp::create(
          b, arith::CmpIPredicate::eq,
          arith::RemUIOp::create(b, n, e.index(stepsPerChunk)), e.index(0));
    };
    // Moves the insertion point into a branch taken where step n starts
    // its chunk (always, for 64-token chunks: no branch); the caller holds
    // an InsertionGuard.
    auto onlyAtChunkStart = [&](Value n) {
      if (stepsPerChunk > 1)
        b.setInsertionPointToStart(
            scf::IfOp::create(b, startsChunk(n), false).thenBlock());
    };
    auto chunkOf = [&](Value n) {
      return stepsPerChunk == 1
                 ? n
                 : arith::DivUIOp::create(b, n, e.index(stepsPerChunk)).getResult();
    };
    // Copies step m's staged S (if m starts a chunk) and D_m (its rows
    // below `valid`) out.
    auto flushOutputs = [&](Value m) {
      auto [sOut, dOut] = outputsAt(m);
      Value zero = e.index(0);
      if (sOut) {
        OpBuilder::InsertionGuard guard(b);
        onlyAtChunkStart(m);
        Value c = chunkOf(m);
        k.copyRowsOut(sOut, zero, K, kStateColumns, Value(), states,
                      [&](Value r, Value col) -> SmallVector<Value> {
          return {bIdx, c, hv, r, e.addIndex(v0, col)};
        });
      }
      if (dOut) {
        auto [t0, valid] = chunkRows(e, m, seqLen);
        k.copyRowsOut(dOut, zero, kChunk, kStateColumns, valid, newValues,
                      [&](Value r, Value c) -> SmallVector<Value> {
          return {bIdx, e.addIndex(t0, r), hv, e.addIndex(v0, c)};
        });
      }
    };

    // A long chunk's second step decays the state by exp(G_last - G_63):
    // its cumulative gates run from the chunk's start, and the first
    // step's last one (G_63) is carried after the state.
    bool carryGateBase = stepsPerChunk > 1 && gates && !perKey;
    if (carryGateBase)
      init.push_back(e.f32(0.0f));
    int64_t numStateValues = keyTiles * 4;
    // Step j of the block's range (the unsegmented kernel's IR unchanged).
    auto blockStep = [&](Value j) {
      return segmentChunks ? e.addIndex(firstStep, j) : j;
    };
    Value firstGroup = prefetch(blockStep(e.index(0)));
    for (int64_t ahead = 1; ahead + 1 < stages; ++ahead)
      prefetch(blockStep(e.index(ahead)));
    ValueRange carried = e.forEachReduce(
        segmentChunks ? e.subIndex(endStep, firstStep) : numSteps, init,
        [&](Value j, ValueRange carriedIn) -> SmallVector<Value> {
      Value n = blockStep(j);
      ValueRange flat = carriedIn.take_front(numStateValues);
      ChunkRows rows = chunkRows(e, n, seqLen);
      // Chunk n has landed once at most stages - 2 newer groups are in
      // flight; the barrier makes every thread's copies visible and frees
      // the stage of chunk n - 1 for chunk n + stages - 1.
      k.waitCopies(firstGroup, stages - 2);
      k.barrier();
      prefetch(e.addIndex(n, e.index(stages - 1)));
      Stage st = stageAt(n);
      Value lastRow = e.subIndex(rows.valid, e.index(1));
      // Per-key gates: K' = K * exp(G_C - G) in place (step c's B
      // operand), each element once per block; the barrier before step c
      // publishes it.
      if (perKey && !decayed)
        decayRows(k, st.k, st.k, st.g, rows.valid, [&](Value) { return lastRow; }, K);
      if (stageStates || stageValues) {
        // Step n - 1's outputs, staged before the barrier.
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(
            scf::IfOp::create(b, k.ult(firstStep, n), false).thenBlock());
        flushOutputs(e.subIndex(n, e.index(1)));
      }
      {
        // The state before a chunk's first step is the chunk's state.
        OpBuilder::InsertionGuard guard(b);
        onlyAtChunkStart(n);
        if (stageStates) {
          // The warp's S^T accumulator tiles, transposed: S's rows (keys)
          // as they are laid out in memory.
          Value sOut = outputsAt(n).first;
          for (int64_t kt = 0; kt < keyTiles; kt += 2)
            k.stmatrix4(sOut, e.addIndex(key0, e.index(8 * kt)), vLocal,
                        flat.slice(4 * kt, 4), flat.slice(4 * kt + 4, 4),
                        /*transposed=*/true);
        } else {
          storeState(flat, states, {bIdx, chunkOf(n), hv});
        }
      }

      // a. D^T = U^T - S^T W^T for the warp's 16 columns and the chunk's
      //    64 rows (rowTiles tiles of 8 rows): each warp of the column
      //    group adds -S^T W^T over its keys, key part 0 onto U^T. A = -S^T
      //    comes split from the state registers, B = W^T by ldmatrix from
      //    W's staged rows (an f32 W split as its fragments are loaded);
      //    rows past T are staged zeros, so D is 0 there.
      auto loadU = [&] {
        SmallVector<Value> u;
        for (int64_t rt = 0; rt < rowTiles; ++rt)
          for (int64_t i = 0; i < 4; ++i)
            u.push_back(e.loadF32(st.u, {k.accCol(8 * rt, i),
                                         e.addIndex(vLocal, k.accRow(e.index(0), i))}));
        return u;
      };
      SmallVector<Value> dFlat;
      if (directD) {
        // Step c reads D from the stage itself.
      } else if (exchange) {
        // Key part 0 starts from U, the others from zero: a warp-uniform
        // branch instead of a select per element.
        auto ifOp = scf::IfOp::create(
            b, SmallVector<Type>(rowTiles * 4, f32),
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyPart, e.index(0)),
            /*withElseRegion=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        scf::YieldOp::create(b, loadU());
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(b, SmallVector<Value>(rowTiles * 4, e.f32(0.0f)));
        dFlat.append(ifOp.getResults().begin(), ifOp.getResults().end());
      } else {
        dFlat = loadU();
      }
      SmallVector<SmallVector<Value>> d;
      for (int64_t rt = 0; rt < rowTiles && !directD; ++rt)
        d.push_back(SmallVector<Value>(ArrayRef(dFlat).slice(4 * rt, 4)));
      if (wBuf) {
        for (int64_t ks = 0; ks < keysPerWarp / 16; ++ks) {
          SmallVector<Value> s0Tile(flat.slice(8 * ks, 4));
          SmallVector<Value> s1Tile(flat.slice(8 * ks + 4, 4));
          // A bf16 W (rounded by the UT transform) meets S^T rounded
          // once as well: bench/model/bf16_intermediates.py puts the
          // cost at <= 1e-4 of o's error (T = 4096, delta and gated
          // delta, soft and hard inputs), for 32 of the warp's 128
          // products per chunk. So does a split W (negeig): S^T hi
          // against W's hi and lo, two products instead of the three of
          // a split S (o's worst error on the H200 check 4.09e-3 ->
          // 4.18e-3, state pass -7% at T = 16384: NOTES c28). An f32 W
          // (f32 keys) keeps both split: hi hi + hi lo + lo hi.
          auto [aHi, aLo] = k.fragmentAFromAcc(s0Tile, s1Tile, /*negate=*/true,
                                               /*split=*/!wIsOperand);
          if (wIsOperand) {
            Value k0 = e.addIndex(key0, e.index(16 * ks));
            for (int64_t rt = 0; rt < rowTiles; rt += 2) {
              // B^T = W: rows 8 rt .. 8 rt + 15 (two n-tiles) at once; a
              // split W's lo part K columns to the right.
              SmallVector<Value> bFrag = k.fragB2({st.w}, 8 * rt, k0);
              SmallVector<Value> bLoFrag;
              if (wSplit)
                bLoFrag = k.fragB2({st.w}, 8 * rt, e.addIndex(k0, e.index(K)));
              for (int64_t j = 0; j < 2; ++j) {
                ArrayRef<Value> bHi = ArrayRef(bFrag).slice(2 * j, 2);
                if (wSplit)
                  d[rt + j] = k.mma(aHi, ArrayRef(bLoFrag).slice(2 * j, 2), d[rt + j]);
                d[rt + j] = k.mma(aHi, bHi, d[rt + j]);
              }
            }
            continue;
          }
          for (int64_t rt = 0; rt < rowTiles; ++rt) {
            // b_j = (W[8 rt + g][16 ks + 2q + 8 j], ... + 1), split.
            SmallVector<Value> bHi, bLo;
            Value row = e.addIndex(e.index(8 * rt), k.group);
            for (int64_t j = 0; j < 2; ++j) {
              Value col = e.addIndex(e.addIndex(key0, e.index(16 * ks + 8 * j)),
                                     e.mulIndex(k.quad, e.index(2)));
              auto [hi, lo] = k.splitRegister(k.loadWidened(st.w, {row, col}, 2));
              bHi.push_back(hi);
              bLo.push_back(lo);
            }
            d[rt] = k.mma(aHi, bLo, d[rt]);
            d[rt] = k.mma(aLo, bHi, d[rt]);
            d[rt] = k.mma(aHi, bHi, d[rt]);
          }
        }
      }
      if (exchange) {
        // D = sum of the group's partials in key-part order, the same sum
        // (bit for bit) in every warp of the group: each warp reads its
        // own partial back too rather than choosing it by a select.
        auto f32x4 = VectorType::get({4}, f32);
        Value xchg = k.tile(xchgOffset, kStateWarps * rowTiles * 32, 4, f32);
        auto slot = [&](Value w, int64_t rt) {
          return e.addIndex(
              e.mulIndex(e.addIndex(e.mulIndex(w, e.index(rowTiles)), e.index(rt)),
                         e.index(32)),
              k.lane);
        };
        for (int64_t rt = 0; rt < rowTiles; ++rt)
          vector::StoreOp::create(
              b, vector::FromElementsOp::create(b, f32x4, d[rt]), xchg,
              ValueRange{slot(k.warp, rt), e.index(0)}, false, llvm::Align(16));
        k.barrier();
        Value firstWarp = e.mulIndex(columnGroup, e.index(kStateKeySplit));
        SmallVector<SmallVector<Value>> sum;
        for (int64_t part = 0; part < kStateKeySplit; ++part) {
          Value w = e.addIndex(firstWarp, e.index(part));
          for (int64_t rt = 0; rt < rowTiles; ++rt) {
            Value x = vector::LoadOp::create(b, f32x4, xchg,
                                             ValueRange{slot(w, rt), e.index(0)},
                                             false, llvm::Align(16));
            SmallVector<Value> p;
            for (int64_t i = 0; i < 4; ++i)
              p.push_back(vector::ExtractOp::create(b, x, i));
            if (part == 0) {
              sum.push_back(p);
              continue;
            }
            for (int64_t i = 0; i < 4; ++i)
              sum[rt][i] = e.add(sum[rt][i], p[i]);
          }
        }
        d = sum;
      }

      // b. The new values D, for rows below `valid`; the warps of a
      //    column group take turns by row tile (staged: key part p stages
      //    the p-th run of row tiles).
      int64_t tilesPerPart = rowTiles / kStateKeySplit;
      if (stageValues) {
        Value dOut = outputsAt(n).second;
        for (int64_t part = 0; part < kStateKeySplit; ++part) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(
              scf::IfOp::create(b,
                                arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                                      keyPart, e.index(part)),
                                false)
                  .thenBlock());
          for (int64_t rt = part * tilesPerPart; rt < (part + 1) * tilesPerPart;
               rt += 2)
            k.stmatrix4(dOut, e.index(8 * rt), vLocal, d[rt], d[rt + 1],
                        /*transposed=*/true);
        }
      }
      for (int64_t rt = 0; newValues && !stageValues && rt < rowTiles; ++rt)
        for (int64_t odd = 0; odd < 2; ++odd) {
          Value t = k.accCol(8 * rt, odd);
          Value store = k.ult(t, rows.valid);
          if (kStateKeySplit > 1)
            store = arith::AndIOp::create(
                b, store,
                arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyPart,
                                      e.index(rt % kStateKeySplit)));
          auto ifOp = scf::IfOp::create(b, store, false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(ifOp.thenBlock());
          for (int64_t i : {odd, odd + 2})
            e.storeFromF32(d[rt][i], newValues,
                           {bIdx, e.addIndex(rows.t0, t), hv,
                            e.addIndex(vGlobal, k.accRow(e.index(0), i))});
        }

      // c. S^T = exp(G_C) S^T + D'^T K with D' = diag(exp(G_C - G_t)) D
      //    (G_C the last valid row's gate): the decay goes onto the fp32
      //    D, so the keys stay exact and only A is split. Rows past T are
      //    dropped before the exp can meet them.
      Value gLast;
      if (perKey && !decayed)
        k.barrier();
      if (gates && !perKey) {
        gLast = memref::LoadOp::create(b, st.g, ValueRange{lastRow, e.index(0)});
        for (int64_t rt = 0; rt < rowTiles && !directD; ++rt)
          for (int64_t odd = 0; odd < 2; ++odd) {
            Value t = k.accCol(8 * rt, odd);
            Value gt = memref::LoadOp::create(b, st.g, ValueRange{t, e.index(0)});
            Value decay = k.exp(e.sub(gLast, gt));
            Value keep = k.ult(t, rows.valid);
            for (int64_t i : {odd, odd + 2})
              d[rt][i] = k.select(keep, e.mul(d[rt][i], decay), e.f32(0.0f));
          }
      }
      SmallVector<SmallVector<Value>> acc;
      Value stateDecay;
      if (gates && !perKey) {
        // G_last minus the gate the step starts from: 0 at a chunk's
        // start, the previous step's G_last within a long chunk.
        Value gBase = carryGateBase
                          ? k.select(startsChunk(n), e.f32(0.0f), carriedIn.back())
                          : Value();
        stateDecay = k.exp(gBase ? e.sub(gLast, gBase) : gLast);
      }
      for (int64_t kt = 0; kt < keyTiles; ++kt) {
        SmallVector<Value> tile(flat.slice(4 * kt, 4));
        if (stateDecay)
          for (Value &x : tile)
            x = e.mul(x, stateDecay);
        // Per key: elements odd and odd + 2 of tile kt are S^T[v][key] of
        // one key, decayed by exp(G_C[key]).
        for (int64_t odd = 0; perKey && odd < 2; ++odd) {
          Value key = stateIndex(kt, odd).first;
          Value decay = k.exp(memref::LoadOp::create(
              b, st.g, ValueRange{decayed ? e.index(0) : lastRow, key}));
          for (int64_t i : {odd, odd + 2})
            tile[i] = e.mul(tile[i], decay);
        }
        acc.push_back(tile);
      }
      // D' is split where it came out of a rank-1 cancellation. Without
      // W it is v times a decay (exactly v without gates): rounded once,
      // it moves the model's state error by about 1e-3 and o's not at
      // all (scalar_gate rows of bench/model/bf16_intermediates.py), for
      // half of the update's products. The delta rule's D keeps its lo:
      // rounded, o's error on nearly parallel keys grows toward the bound
      // (3.2 -> 3.9e-3 in the model, 1.1e-2 for negeig).
      bool splitUpdate = wBuf != nullptr;
      // directD: register j of the fragment holds rows 16 ks + 8 (j / 2) +
      // 2 quad + {0, 1} of column vLocal + group + 8 (j % 2); each row
      // pair's decays are taken once for both registers that share it.
      auto directFragment = [&](int64_t ks) {
        SmallVector<Value> pairs = k.ldmatrix4Pairs(
            {st.u, /*transposed=*/true}, vLocal, e.index(16 * ks), /*swap=*/false);
        SmallVector<Value> regs;
        auto f32x2 = VectorType::get({2}, f32);
        Value decays;
        for (int64_t j = 0; j < 4; ++j) {
          Value pair = pairs[j];
          if (gLast) {
            if (j % 2 == 0) {
              Value t = e.addIndex(e.index(16 * ks + 8 * (j / 2)),
                                   e.mulIndex(k.quad, e.index(2)));
              SmallVector<Value> rowDecays;
              for (Value r : {t, e.addIndex(t, e.index(1))})
                rowDecays.push_back(k.exp(e.sub(
                    gLast, memref::LoadOp::create(b, st.g, ValueRange{r, e.index(0)}))));
              decays = vector::FromElementsOp::create(b, f32x2, rowDecays);
            }
            Value wide = arith::ExtFOp::create(b, f32x2, pair);
            pair = arith::TruncFOp::create(b, pair.getType(),
                                           arith::MulFOp::create(b, wide, decays));
          }
          regs.push_back(k.mmaRegister(pair));
        }
        return regs;
      };
      for (int64_t ks = 0; ks < kChunk / 16; ++ks) {
        auto [aHi, aLo] =
            directD ? std::pair(directFragment(ks), SmallVector<Value>())
                    : k.fragmentAFromAcc(d[2 * ks], d[2 * ks + 1],
                                         /*negate=*/false, splitUpdate);
        for (int64_t kt = 0; kt < keyTiles; kt += 2) {
          // B = K (k = row, n = key): two key tiles per fragment load.
          SmallVector<Value> bFrag =
              kIsOperand ? k.fragB2({st.k, /*transposed=*/true}, key0, 8 * kt, 16 * ks)
                         : k.fragB2FromF32Columns(st.k, key0, 8 * kt, 16 * ks);
          for (int64_t j = 0; j < 2; ++j) {
            ArrayRef<Value> bJ = ArrayRef(bFrag).slice(2 * j, 2);
            if (splitUpdate)
              acc[kt + j] = k.mma(aLo, bJ, acc[kt + j]);
            acc[kt + j] = k.mma(aHi, bJ, acc[kt + j]);
          }
        }
      }
      SmallVector<Value> next;
      for (auto &tile : acc)
        next.append(tile.begin(), tile.end());
      if (carryGateBase)
        next.push_back(gLast);
      return next;
    });
    ValueRange final = carried.take_front(numStateValues);
    // The prefetches past the final step (all zero-size) drain; the last
    // step's staged outputs leave.
    k.waitCopies(firstGroup, 0);
    if (stageStates || stageValues) {
      k.barrier();
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(firstStep, endStep), false).thenBlock());
      flushOutputs(e.subIndex(endStep, e.index(1)));
    }
    if (segmentChunks)
      storeState(final, finalState, {bIdx, segment, hv});
    else
      storeState(final, finalState, {bIdx, hv});
  }, kStateWarps * 32);
  op.replaceAllUsesWith(
      ValueRange{forwardValues ? op.getU()
                               : e.toTensor(newValues, op.getNewValues().getType()),
                 e.toTensor(states, op.getChunkStates().getType()),
                 e.toTensor(finalState, op.getFinalState().getType())});
  op.erase();
  return success();
}

/// The sum of the chunk totals G_C(m) = G[b, min(chunk (m + 1), T) - 1,
/// hv] over the chunks m in [m0, m1), m1 - m0 <= maxChunks, in every lane
/// of each warp (its lanes take a chunk each, then a butterfly of
/// shuffles); 0 without gates.
Value sumChunkTotals(KernelEmitter &k, Value gates, Value bIdx, Value hv,
                     Value m0, Value m1, int64_t maxChunks, int64_t chunk,
                     Value seqLen) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  Type f32 = b.getF32Type();
  Value sum = e.f32(0.0f);
  if (!gates)
    return sum;
  for (int64_t j = 0; j * 32 < maxChunks; ++j) {
    Value m = e.addIndex(m0, e.addIndex(k.lane, e.index(32 * j)));
    auto ifOp = scf::IfOp::create(b, TypeRange{f32}, k.ult(m, m1), true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value t = e.subIndex(
          e.minIndex(e.mulIndex(e.addIndex(m, e.index(1)), e.index(chunk)), seqLen),
          e.index(1));
      scf::YieldOp::create(b, e.loadF32(gates, {bIdx, t, hv}));
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, e.f32(0.0f));
    }
    sum = e.add(sum, ifOp.getResult(0));
  }
  for (int32_t offset = 16; offset > 0; offset /= 2)
    sum = e.add(sum, gpu::ShuffleOp::create(b, sum, offset, 32,
                                            gpu::ShuffleMode::XOR)
                         .getShuffleResult());
  return sum;
}

//===----------------------------------------------------------------------===//
// linattn.segment_carries: C_{s+1} = exp(L_s) C_s + E_s, a thread per
// state element, sequential over the segments.
//===----------------------------------------------------------------------===//

LogicalResult lowerSegmentCarries(SegmentCarriesOp op) {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  LoopEmitter e(b);
  Value ends = e.toBuffer(op.getEnds());
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  int64_t numVHeads = dimOf(op.getEnds(), 2), K = dimOf(op.getEnds(), 3);
  int64_t V = dimOf(op.getEnds(), 4);
  int64_t chunk = op.getChunkSize(), segmentChunks = op.getSegmentChunks();
  Value batch = e.dim(ends, 0), numSegs = e.dim(ends, 1);
  Value hvDim = e.index(numVHeads);
  Value carries = e.allocFor(op.getCarries().getType(),
                             {batch, numSegs, hvDim, e.index(K), e.index(V)});
  Value finalState = e.allocFor(op.getFinalState().getType(),
                                {batch, hvDim, e.index(K), e.index(V)});
  Value seqLen = gates ? e.dim(gates, 1) : Value();
  Value numChunks =
      gates ? arith::CeilDivUIOp::create(b, seqLen, e.index(chunk)).getResult()
            : Value();
  int64_t elements = K * V;
  emitLaunch(b, {e.index(llvm::divideCeil(elements, kThreads)), hvDim, batch},
             /*smemBytes=*/0, b.getBF16Type(), [&](KernelEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value hv = body->getArgument(1), bIdx = body->getArgument(2);
    Value idx = e.addIndex(e.mulIndex(body->getArgument(0), e.index(kThreads)), k.tid);
    // Every lane stays for the shuffles; the last block's spare threads
    // read element 0 and store nothing.
    Value inRange = k.ult(idx, e.index(elements));
    Value element = k.select(inRange, idx, e.index(0));
    Value row = arith::DivUIOp::create(b, element, e.index(V));
    Value col = arith::RemUIOp::create(b, element, e.index(V));
    auto storeIfInRange = [&](Value x, Value dst, SmallVector<Value> indices) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(scf::IfOp::create(b, inRange, false).thenBlock());
      e.storeFromF32(x, dst, indices);
    };
    ValueRange last = e.forEachReduce(
        numSegs, {e.f32(0.0f)}, [&](Value s, ValueRange c) -> SmallVector<Value> {
      storeIfInRange(c[0], carries, {bIdx, s, hv, row, col});
      Value decay = e.f32(1.0f);
      if (gates) {
        Value m0 = e.mulIndex(s, e.index(segmentChunks));
        Value m1 = e.minIndex(e.addIndex(m0, e.index(segmentChunks)), numChunks);
        decay = k.exp(sumChunkTotals(k, gates, bIdx, hv, m0, m1, segmentChunks,
                                     chunk, seqLen));
      }
      Value end = e.loadF32(ends, {bIdx, s, hv, row, col});
      return {e.add(e.mul(decay, c[0]), end)};
    });
    storeIfInRange(last[0], finalState, {bIdx, hv, row, col});
  });
  e.replaceWithBuffers(op, {carries, finalState});
  return success();
}

//===----------------------------------------------------------------------===//
// linattn.chunk_output
//===----------------------------------------------------------------------===//

/// The widest spread exp(G_first - G_last) of a 16-row diagonal block, per
/// key, whose factored scores stay in range: the query factor grows up to
/// e^64 and the key factor shrinks down to e^-64, both far inside bf16's
/// and fp32's e^+-87 (128-term sums of such products included).
constexpr float kMaxDiagonalSpread = 64.0f;

/// The diagonal block of the per-key-gate scores, elementwise in fp32:
///   P[i][j] = sum_k q_ik k_jk exp(G_ik - G_jk)
/// for the warp's rows i and columns j in [m0, m0 + 16), as two
/// accumulator tiles (8 values, tile 0 then tile 1). Each lane sums its
/// own elements over k, two keys per step; the elements above the
/// diagonal for every lane (rows m0 + g, columns m0 + 8..) are not
/// computed, the others above it are dropped by the caller's mask.
SmallVector<Value> diagonalScores(KernelEmitter &k, Value qTile, Value kTile,
                                  Value g, Value m0, int64_t K) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  Value row = e.addIndex(m0, k.group);
  Value rowIdx[2] = {row, e.addIndex(row, e.index(8))};
  Value col = e.addIndex(m0, e.mulIndex(k.quad, e.index(2)));
  Value colIdx[4] = {col, e.addIndex(col, e.index(1)), e.addIndex(col, e.index(8)),
                     e.addIndex(col, e.index(9))};
  ValueRange sums = e.forEachReduce(
      e.index(K / 2), SmallVector<Value>(8, e.f32(0.0f)),
      [&](Value step, ValueRange acc) -> SmallVector<Value> {
    Value c = e.mulIndex(step, e.index(2));
    Value q[2], gq[2], kv[4], gk[4];
    for (int64_t r = 0; r < 2; ++r) {
      q[r] = k.loadWidened(qTile, {rowIdx[r], c}, 2);
      gq[r] = k.loadWidened(g, {rowIdx[r], c}, 2);
    }
    for (int64_t j = 0; j < 4; ++j) {
      kv[j] = k.loadWidened(kTile, {colIdx[j], c}, 2);
      gk[j] = k.loadWidened(g, {colIdx[j], c}, 2);
    }
    SmallVector<Value> next(acc);
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t j = 0; j < 4; ++j) {
        if (r == 0 && j >= 2)
          continue;
        // Accumulator element (tile j / 2, index 2 r + j % 2).
        Value term = e.mul(e.mul(q[r], kv[j]), k.expPair(e.sub(gq[r], gk[j])));
        int64_t slot = 4 * (j / 2) + 2 * r + j % 2;
        for (int64_t x = 0; x < 2; ++x)
          next[slot] = e.add(next[slot], vector::ExtractOp::create(b, term, x));
      }
    return next;
  });
  return llvm::to_vector(sums);
}

/// The per-key-gate scores' diagonal block, what every column block of
/// perKeyBlockScores needs from it: whether the warp factors it, and the
/// elementwise scores where it does not.
struct PerKeyDiagonal {
  Value factored;
  SmallVector<Value> elementwise;
};

/// Whether the warp's diagonal block [m0, m0 + 16) may be factored around
/// its last valid row L: its query factor exp(G_i - G_L) is >= 1, up to
/// exp(G_{m0} - G_L), so where that spread exceeds kMaxDiagonalSpread for
/// some key (strong gates), the warp computes the block elementwise in
/// fp32 instead (diagonalScores), as flash-linear-attention does for every
/// diagonal block; elsewhere `elementwise` is zero.
PerKeyDiagonal perKeyDiagonal(KernelEmitter &k, Value qTile, Value kTile, Value g,
                              Value m0, Value valid, int64_t K) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  Type f32 = b.getF32Type();
  // Every lane tests keys lane, lane + 32, ...; the warp votes.
  Value ownLast = blockLastRow(e, m0, valid);
  Value narrow = arith::ConstantOp::create(b, b.getBoolAttr(true));
  for (int64_t c0 = 0; c0 < K; c0 += 32) {
    Value c = e.addIndex(k.lane, e.index(c0));
    Value spread = e.sub(e.loadF32(g, {m0, c}), e.loadF32(g, {ownLast, c}));
    narrow = arith::AndIOp::create(
        b, narrow,
        arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, spread,
                              e.f32(kMaxDiagonalSpread)));
  }
  Value fullWarp = arith::ConstantOp::create(b, b.getI32IntegerAttr(-1));
  Value factored = NVVM::VoteSyncOp::create(b, b.getI1Type(), fullWarp, narrow,
                                            NVVM::VoteSyncKind::all);
  // The elementwise block, once (its code is long).
  auto elementwiseIf = scf::IfOp::create(
      b, SmallVector<Type>(8, f32),
      arith::AndIOp::create(
          b, k.ult(m0, valid),
          arith::XOrIOp::create(b, factored,
                                arith::ConstantOp::create(b, b.getBoolAttr(true)))),
      true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(elementwiseIf.thenBlock());
  scf::YieldOp::create(b, diagonalScores(k, qTile, kTile, g, m0, K));
  b.setInsertionPointToStart(elementwiseIf.elseBlock());
  scf::YieldOp::create(b, SmallVector<Value>(8, e.f32(0.0f)));
  return {factored, SmallVector<Value>(elementwiseIf.getResults())};
}

/// The per-key-gate scores of the warp's rows [m0, m0 + 16) against the
/// keys of column block [row0, row0 + 16), row0 <= m0 (a run-time value),
/// before the causal mask, as two accumulator tiles (8 values):
///   P[i][j] = sum_k q_ik k_jk exp(G_ik - G_jk).
/// The block factors the decay around its last valid row L, P = (q_i
/// exp(G_i - G_L)) (k_j exp(G_L - G_j))^T; the second factor is K'
/// (`kdTile`, staged by the caller), the first is built in registers.
/// Below the diagonal (rows i > L) both factors are <= 1, so strong gates
/// only underflow what is negligible anyway; the diagonal block is
/// `diagonal`'s (factored, or elementwise).
SmallVector<Value> perKeyBlockScores(KernelEmitter &k, Value qTile, Value kdTile,
                                     Value g, Value m0, Value row0, Value valid,
                                     const PerKeyDiagonal &diagonal, int64_t K) {
  LoopEmitter &e = k.e;
  ImplicitLocOpBuilder &b = k.b;
  Value offDiagonal = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, row0, m0);
  Value factored = arith::OrIOp::create(b, offDiagonal, diagonal.factored);
  auto factoredIf =
      scf::IfOp::create(b, SmallVector<Type>(8, b.getF32Type()), factored, true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(factoredIf.thenBlock());
  Value ref = blockLastRow(e, row0, valid);
  SmallVector<SmallVector<Value>> acc = k.zeroAcc(2);
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    SmallVector<Value> a = k.fragAFromPairs(m0, k0, [&](Value r, Value c) {
      Value q = k.loadWidened(qTile, {r, c}, 2);
      Value decay =
          e.sub(k.loadWidened(g, {r, c}, 2), k.loadWidened(g, {ref, c}, 2));
      return e.mul(q, k.expPair(decay));
    });
    SmallVector<Value> bFrag = k.fragB2({kdTile}, row0, 0, k0);
    for (int64_t j = 0; j < 2; ++j)
      acc[j] = k.mma(a, ArrayRef(bFrag).slice(2 * j, 2), acc[j]);
  }
  scf::YieldOp::create(b, llvm::to_vector(llvm::concat<Value>(acc[0], acc[1])));
  // Not factored: the elementwise diagonal block.
  b.setInsertionPointToStart(factoredIf.elseBlock());
  scf::YieldOp::create(b, diagonal.elementwise);
  return SmallVector<Value>(factoredIf.getResults());
}

LogicalResult lowerChunkOutput(ChunkOutputOp op, Type mmaType, bool hasStMatrix) {
  std::optional<Type> mmaElem = mmaType;
  bool perKey =
      op.getGates() && cast<ShapedType>(op.getGates().getType()).getRank() == 4;
  int64_t numQKHeads = dimOf(op.getQ(), 2), K = dimOf(op.getQ(), 3);
  int64_t numVHeads = dimOf(op.getNewValues(), 2);
  int64_t V = dimOf(op.getNewValues(), 3);
  if (failed(checkChunkGeometry(op, op.getChunkSize(), {{"K", K}, {"V", V}},
                                perKey ? "per-key gates" : "")))
    return failure();
  // A block takes one chunk: a warp per 16 rows (8 warps for a long
  // chunk), each over the chunk's 64-row segments up to its own.
  int64_t chunk = op.getChunkSize(), numSegments = chunk / kChunk;
  int64_t numWarps = chunk / 16;
  int64_t columnTiles = V / kOutputColumns, nTiles = kOutputColumns / 8;
  // Per-key gates: a block takes two column tiles of its chunk, a unit of
  // numWarps warps each (the kernel's `unit`), so that Q, K, K' and the
  // gates are loaded and K' decayed once for both. Warp w of unit 0 owns
  // row block w, of unit 1 row block numWarps - 1 - w: a warp's score
  // blocks grow with its row block (1 to 4), and warps w and w + 4 (one SM
  // sub-partition, if warps go to them by warp % 4) score 5 together.
  // Measured -2% (GLA's output kernel at T = 1024; bench/NOTES.md c36):
  // it waits on its tiles' loads more than on the busiest sub-partition.
  int64_t units = perKey && columnTiles % 2 == 0 && numSegments == 1 &&
                          !op.getCarries()
                      ? 2
                      : 1;

  ImplicitLocOpBuilder b(op.getLoc(), op);
  LoopEmitter e(b);
  Value qBuf = e.toBuffer(op.getQ()), kBuf = e.toBuffer(op.getK());
  Value dBuf = e.toBuffer(op.getNewValues());
  Value states = e.toBuffer(op.getChunkStates());
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  // Segment-local states: chunk n adds exp(sum of G_C over its segment's
  // chunks before it) C_s (step 3b).
  Value carries = op.getCarries() ? e.toBuffer(op.getCarries()) : Value();
  int64_t segmentChunks = op.getSegmentChunks().value_or(0);
  if (carries && elementOf(op.getCarries()) != elementOf(op.getChunkStates()))
    return op.emitOpError() << "GPU output kernel stages carries in the chunk "
                               "states' tile: their element types must agree, got "
                            << elementOf(op.getCarries()) << " and "
                            << elementOf(op.getChunkStates());
  Value batch = e.dim(qBuf, 0), seqLen = e.dim(qBuf, 1);
  Value out = e.allocFor(op.getOutput().getType(),
                         {batch, seqLen, e.index(numVHeads), e.index(V)});
  float scale = op.getScale().convertToFloat();

  // Shared memory: Q [C][K], K [C][K] (per-key gates: and the decayed
  // keys K' [64][K]), then S [K][kOutputColumns] and D [C][kOutputColumns]
  // (each split if f32; 16-bit ones are operands as they are; both read
  // transposed by ldmatrix .trans); C row gates, or per key [64][K].
  // Everything is loaded at once, so the block waits on global memory
  // once; P stays in registers.
  bool sIsOperand = elementOf(op.getChunkStates()) == *mmaElem;
  bool dIsOperand = elementOf(op.getNewValues()) == *mmaElem;
  // With two units, each has its own S and D tiles and an output tile
  // (the Q tile's rows, which unit 0 stages its output in, are read by
  // unit 1 until it is done).
  int64_t qBytes = chunk * (K + kPad) * 2;
  int64_t sBytes = K * (kOutputColumns + kPad) * 2;
  int64_t dBytes = chunk * (kOutputColumns + kPad) * 2;
  int64_t sUnitBytes = (sIsOperand ? 1 : 2) * sBytes;
  int64_t dUnitBytes = (dIsOperand ? 1 : 2) * dBytes;
  int64_t sOffset = (perKey ? 3 : 2) * qBytes;
  int64_t dOffset = sOffset + units * sUnitBytes;
  int64_t gOffset = dOffset + units * dUnitBytes;
  // Per-key gate rows are padded by 16 bytes: the score operands read
  // 8-byte pairs of 8 rows at once, which an unpadded 512-byte stride
  // (K = 128) puts in the same banks.
  int64_t gStride = perKey ? K + 4 : 1;
  int64_t gBytes = chunk * gStride * 4;
  int64_t outOffset = gOffset + gBytes;
  int64_t outBytes = units > 1 ? units * dBytes : 0;
  int64_t blocksPerChunk = columnTiles / units;
  Value numChunks = arith::CeilDivUIOp::create(b, seqLen, e.index(chunk));
  Value blocks = e.mulIndex(numChunks, e.index(blocksPerChunk));

  emitLaunch(b, {blocks, e.index(numVHeads), batch}, outOffset + outBytes,
             *mmaElem, [&](KernelEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value n = arith::DivUIOp::create(b, body->getArgument(0),
                                     e.index(blocksPerChunk));
    // The block's first column tile; unit u takes tile firstTile + u.
    Value firstTile =
        arith::RemUIOp::create(b, body->getArgument(0), e.index(blocksPerChunk));
    if (units > 1)
      firstTile = e.mulIndex(firstTile, e.index(units));
    auto unitColumns = [&](Value u) {
      Value tile = units > 1 ? e.addIndex(firstTile, u) : firstTile;
      return e.mulIndex(tile, e.index(kOutputColumns));
    };
    // Byte `offset` of unit u's copy of a tile of `unitBytes` per unit.
    auto unitOffset = [&](int64_t offset, Value u, int64_t unitBytes) {
      if (units == 1)
        return e.index(offset);
      return e.addIndex(e.index(offset), e.mulIndex(u, e.index(unitBytes)));
    };
    Value unit = units > 1 ? arith::DivUIOp::create(b, k.warp, e.index(numWarps))
                                 .getResult()
                           : e.index(0);
    Value v0 = unitColumns(unit);
    // The warp's 16 rows (row block `rowBlock`).
    Value rowBlock = k.warp;
    if (units > 1) {
      Value w = arith::RemUIOp::create(b, k.warp, e.index(numWarps));
      rowBlock = k.select(k.ult(unit, e.index(1)), w,
                          e.subIndex(e.index(numWarps - 1), w));
    }
    Value hv = body->getArgument(1), bIdx = body->getArgument(2);
    Value h = e.qkHead(hv, numVHeads, numQKHeads);
    ChunkRows rows = chunkRows(e, n, seqLen, chunk);
    Type elem = *mmaElem, f32 = b.getF32Type();
    Value qTile = k.tile(0, chunk, K + kPad, elem);
    Value kTile = k.tile(qBytes, chunk, K + kPad, elem);
    // Unit u's S and D tiles (hi, then lo where they are f32), and the
    // calling warp's.
    auto sTile = [&](Value u, int64_t part) {
      return k.tile(unitOffset(sOffset + part * sBytes, u, sUnitBytes), K,
                    kOutputColumns + kPad, elem);
    };
    auto dTile = [&](Value u, int64_t part) {
      return k.tile(unitOffset(dOffset + part * dBytes, u, dUnitBytes), chunk,
                    kOutputColumns + kPad, elem);
    };
    Value sHi = sTile(unit, 0), sLo = sIsOperand ? Value() : sTile(unit, 1);
    Value dHi = dTile(unit, 0), dLo = dIsOperand ? Value() : dTile(unit, 1);
    Value kdTile = perKey ? k.tile(2 * qBytes, kChunk, K + kPad, elem) : Value();
    Value gShared = perKey ? k.tile(gOffset, kChunk, gStride, f32)
                           : k.vec(gOffset, chunk, f32);

    // 1. Q and K of the chunk, S_n and D of the block's columns, row
    //    gates (per key: the [64][K] gates by cp.async). Operand-typed
    //    tiles arrive by cp.async, straight into shared memory (rows past
    //    T as zeros); f32 ones (l2norm results, fp32 states or new values)
    //    through registers, rounded or split.
    Value zero = e.index(0);
    bool async = false;
    auto chunkTile = [&](Value dst, Value dstLo, int64_t cols, Value src,
                         function_ref<SmallVector<Value>(Value, Value)> at) {
      if (elementOf(src) == elem) {
        async = true;
        return k.copyRowsAsync(dst, zero, cols, rows.t0, rows.valid, seqLen, src,
                               at, chunk);
      }
      k.fillTile(dst, chunk, cols, rows.valid, [&](Value r, Value c) {
        return k.load8(src, at(e.addIndex(rows.t0, r), c));
      }, dstLo);
    };
    chunkTile(qTile, Value(), K, qBuf, [&](Value t, Value c) -> SmallVector<Value> {
      return {bIdx, t, h, c};
    });
    chunkTile(kTile, Value(), K, kBuf, [&](Value t, Value c) -> SmallVector<Value> {
      return {bIdx, t, h, c};
    });
    // Unit u's columns of a [B, N, HV, K, V] state (chunk states, or
    // carries) into its S tile: by cp.async (true) or through registers.
    auto loadStateTile = [&](Value src, Value at, Value u) {
      Value columns = unitColumns(u);
      auto index = [&](Value r, Value c) -> SmallVector<Value> {
        return {bIdx, at, hv, r, e.addIndex(columns, c)};
      };
      if (sIsOperand) {
        k.copyRowsAsync(sTile(u, 0), zero, kOutputColumns, zero, e.index(K),
                        e.index(K), src, index, /*rows=*/K);
        return true;
      }
      k.fillTile(sTile(u, 0), K, kOutputColumns, Value(), [&](Value r, Value c) {
        return k.load8(src, index(r, c));
      }, sTile(u, 1));
      return false;
    };
    for (int64_t u = 0; u < units; ++u) {
      Value columns = unitColumns(e.index(u));
      async |= loadStateTile(states, n, e.index(u));
      chunkTile(dTile(e.index(u), 0), dIsOperand ? Value() : dTile(e.index(u), 1),
                kOutputColumns, dBuf, [&](Value t, Value c) -> SmallVector<Value> {
        return {bIdx, t, hv, e.addIndex(columns, c)};
      });
    }
    if (perKey) {
      async = true;
      k.copyRowsAsync(gShared, zero, K, rows.t0, rows.valid, seqLen, gates,
                      [&](Value t, Value c) -> SmallVector<Value> {
        return {bIdx, t, hv, c};
      });
    } else {
      fillRowGates(k, gShared, gates, bIdx, rows, hv, chunk);
    }
    if (async)
      k.waitCopies(k.commitCopies(), 0);
    k.barrier();
    if (perKey) {
      // K' = K * exp(G_L - G) for perKeyBlockScores, L the last valid row
      // of the key's 16-row block.
      decayRows(k, kTile, kdTile, gShared, rows.valid, [&](Value r) {
        Value row0 =
            e.mulIndex(arith::DivUIOp::create(b, r, e.index(16)), e.index(16));
        return blockLastRow(e, row0, rows.valid);
      }, K);
      k.barrier();
    }

    // 2. P = Mask_{j <= i}(Q K^T * exp(G_i - G_j)) for the warp's 16 rows
    //    and the 64 columns of segment `segment`, kept in its accumulator
    //    registers (scalar gates; per key, step 3 computes P a column
    //    block at a time, after Q S).
    Value m0 = e.mulIndex(rowBlock, e.index(16));
    auto segmentScores = [&](int64_t segment) {
      int64_t c0 = segment * kChunk;
      SmallVector<SmallVector<Value>> p = k.zeroAcc(kChunk / 8);
      k.gemm(p, {{qTile}}, m0, {{kTile}}, K, c0);
      for (int64_t nt = 0; nt < kChunk / 8; ++nt)
        for (int64_t i = 0; i < 4; ++i) {
          Value r = k.accRow(m0, i), c = k.accCol(c0 + 8 * nt, i);
          Value gr = memref::LoadOp::create(b, gShared, r);
          Value gc = memref::LoadOp::create(b, gShared, c);
          Value x = e.mul(p[nt][i], k.exp(e.sub(gr, gc)));
          Value causal = arith::CmpIOp::create(b, arith::CmpIPredicate::ule, c, r);
          p[nt][i] = k.select(causal, x, e.f32(0.0f));
        }
      return p;
    };
    // o += P D over D's rows [k0, k0 + 16), P's two accumulator tiles of
    // those columns: P is the A operand straight from its accumulators
    // (split), D comes from shared memory, split if it is f32.
    auto addBlockValues = [&](SmallVector<SmallVector<Value>> &o, ArrayRef<Value> p0,
                              ArrayRef<Value> p1, Value k0) {
      auto [aHi, aLo] = k.fragmentAFromAcc(p0, p1, /*negate=*/false);
      for (int64_t nt = 0; nt < nTiles; nt += 2) {
        SmallVector<Value> bHi = k.fragB2({dHi, /*transposed=*/true}, 8 * nt, k0);
        SmallVector<Value> bLo = dLo ? k.fragB2({dLo, /*transposed=*/true}, 8 * nt, k0)
                                     : SmallVector<Value>();
        for (int64_t j = 0; j < 2; ++j) {
          ArrayRef<Value> bHiJ = ArrayRef(bHi).slice(2 * j, 2);
          if (dLo)
            o[nt + j] = k.mma(aHi, ArrayRef(bLo).slice(2 * j, 2), o[nt + j]);
          o[nt + j] = k.mma(aLo, bHiJ, o[nt + j]);
          o[nt + j] = k.mma(aHi, bHiJ, o[nt + j]);
        }
      }
    };
    // o += P D over segment `segment`'s rows of D.
    auto addSegmentValues = [&](SmallVector<SmallVector<Value>> &o,
                                ArrayRef<SmallVector<Value>> p, int64_t segment) {
      for (int64_t ks = 0; ks < kChunk / 16; ++ks)
        addBlockValues(o, p[2 * ks], p[2 * ks + 1],
                       e.index(segment * kChunk + 16 * ks));
    };
    SmallVector<SmallVector<Value>> p;
    if (!perKey)
      p = segmentScores(0);

    // 3. O = scale (diag(exp(G)) Q S + P D), P over the segments up to the
    //    warp's; S comes from shared memory, split if it is f32. Per key,
    //    the A operand of Q S is Q * exp(G) itself (<= |q|), rounded once.
    SmallVector<SmallVector<Value>> o = k.zeroAcc(nTiles);
    Operand sOperand = {{sHi, /*transposed=*/true}};
    if (sLo)
      sOperand.lo = TileView{sLo, true};
    if (perKey) {
      k.gemm(o, [&](int64_t k0) -> KernelEmitter::FragmentA {
        return {k.fragAFromPairs(m0, k0, [&](Value r, Value c) {
          Value q = k.loadWidened(qTile, {r, c}, 2);
          Value g = k.loadWidened(gShared, {r, c}, 2);
          return e.mul(q, k.expPair(g));
        }), {}};
      }, sOperand, K);
    } else {
      k.gemm(o, {{qTile}}, m0, sOperand, K);
      for (int64_t nt = 0; nt < nTiles; ++nt)
        for (int64_t i = 0; i < 4; ++i) {
          Value g = memref::LoadOp::create(b, gShared, k.accRow(m0, i));
          o[nt][i] = e.mul(o[nt][i], k.exp(g));
        }
    }
    // O's accumulator tiles as one list (loop and branch results) and back.
    auto flatten = [](ArrayRef<SmallVector<Value>> tiles) {
      SmallVector<Value> flat;
      for (const SmallVector<Value> &tile : tiles)
        flat.append(tile.begin(), tile.end());
      return flat;
    };
    auto unflatten = [&](ValueRange flat) {
      SmallVector<SmallVector<Value>> tiles;
      for (int64_t nt = 0; nt < nTiles; ++nt)
        tiles.push_back(SmallVector<Value>(flat.slice(4 * nt, 4)));
      return tiles;
    };
    // 3b. Segment-local states: once every warp is past Q S_n, the
    //     segment's carry C_s takes S's tile (by cp.async, landing while
    //     P D runs) and the block sums log a = sum of G_C over the
    //     segment's chunks before n (one per lane, shuffles).
    Value hasCarry, carryLogDecay;
    if (carries) {
      Value segment = arith::DivUIOp::create(b, n, e.index(segmentChunks));
      hasCarry = k.ult(e.index(0), segment);
      auto ifOp = scf::IfOp::create(b, TypeRange{f32}, hasCarry, true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      k.barrier();
      if (loadStateTile(carries, segment, unit))
        k.commitCopies();
      scf::YieldOp::create(
          b, sumChunkTotals(k, gates, bIdx, hv,
                            e.mulIndex(segment, e.index(segmentChunks)), n,
                            segmentChunks, chunk, seqLen));
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, e.f32(0.0f));
      carryLogDecay = ifOp.getResult(0);
    }
    if (perKey) {
      // Per key, P D a column block at a time: o += P_b D_b for the
      // blocks b <= the warp's (none for a warp past T). The loop body is
      // the code of one block, where four unrolled blocks overflowed the
      // instruction cache (GLA's output kernel: 30% of its stalls were
      // instruction fetch, bench/NOTES.md c34).
      PerKeyDiagonal diagonal =
          perKeyDiagonal(k, qTile, kTile, gShared, m0, rows.valid, K);
      Value numBlocks = k.select(k.ult(m0, rows.valid),
                                 e.addIndex(rowBlock, e.index(1)), e.index(0));
      ValueRange sums = e.forEachReduce(numBlocks, flatten(o),
          [&](Value block, ValueRange acc) -> SmallVector<Value> {
        Value row0 = e.mulIndex(block, e.index(16));
        SmallVector<Value> scores = perKeyBlockScores(
            k, qTile, kdTile, gShared, m0, row0, rows.valid, diagonal, K);
        for (int64_t i = 0; i < 8; ++i) {
          // Element i % 4 of tile i / 4: row accRow(m0, i % 4), column
          // row0 + 8 (i / 4) + accCol(0, i % 4).
          Value r = k.accRow(m0, i % 4);
          Value c = e.addIndex(row0, k.accCol(8 * (i / 4), i % 4));
          Value causal = arith::CmpIOp::create(b, arith::CmpIPredicate::ule, c, r);
          scores[i] = k.select(causal, scores[i], e.f32(0.0f));
        }
        SmallVector<SmallVector<Value>> oBlock = unflatten(acc);
        addBlockValues(oBlock, ArrayRef(scores).take_front(4),
                       ArrayRef(scores).drop_front(4), row0);
        return flatten(oBlock);
      });
      o = unflatten(sums);
    } else {
      addSegmentValues(o, p, 0);
    }
    for (int64_t segment = 1; segment < numSegments; ++segment) {
      // Only the warps whose rows lie at or past the segment's first row
      // see its columns (a warp-uniform branch).
      SmallVector<Value> flat = flatten(o);
      auto ifOp = scf::IfOp::create(
          b, TypeRange(ValueRange(flat)),
          k.ult(e.index(segment * kChunk / 16 - 1), rowBlock), true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        SmallVector<SmallVector<Value>> oSegment = o;
        addSegmentValues(oSegment, segmentScores(segment), segment);
        scf::YieldOp::create(b, flatten(oSegment));
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(b, flat);
      }
      o = unflatten(ifOp.getResults());
    }
    if (carries) {
      // 3c. O += diag(exp(G + log a)) Q C_s, where there is a carry.
      SmallVector<Value> flat = flatten(o);
      auto ifOp = scf::IfOp::create(b, TypeRange(ValueRange(flat)), hasCarry, true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        k.waitCopies(k.commitCopies(), 0);
        k.barrier();
        SmallVector<SmallVector<Value>> qc = k.zeroAcc(nTiles);
        k.gemm(qc, {{qTile}}, m0, sOperand, K);
        SmallVector<SmallVector<Value>> sums = o;
        for (int64_t nt = 0; nt < nTiles; ++nt)
          for (int64_t i = 0; i < 4; ++i) {
            Value g = memref::LoadOp::create(b, gShared, k.accRow(m0, i));
            sums[nt][i] = math::FmaOp::create(
                b, qc[nt][i], k.exp(e.add(g, carryLogDecay)), sums[nt][i]);
          }
        scf::YieldOp::create(b, flatten(sums));
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(b, flat);
      }
      o = unflatten(ifOp.getResults());
    }
    for (SmallVector<Value> &tile : o)
      for (Value &x : tile)
        x = e.mul(x, e.f32(scale));
    if (!hasStMatrix || elementOf(out) != elem) {
      for (int64_t nt = 0; nt < nTiles; ++nt)
        k.forEachPair(m0, nt, [&](Value r, Value c, int64_t i) {
          k.storePair(o[nt][i], o[nt][i + 1], out,
                      {bIdx, e.addIndex(rows.t0, r), hv, e.addIndex(v0, c)},
                      k.ult(r, rows.valid));
        });
      return;
    }
    // 4. O leaves through the warp's own 16 rows of the Q tile (no other
    //    warp reads them; with two units, of its unit's output tile):
    //    stmatrix, then 16-byte row pieces, 8 rows of 128 bytes per
    //    instruction instead of 4-byte pairs.
    Value outTile = units > 1 ? k.tile(unitOffset(outOffset, unit, dBytes), chunk,
                                       kOutputColumns + kPad, elem)
                              : qTile;
    Value fullWarp = arith::ConstantOp::create(b, b.getI32IntegerAttr(-1));
    NVVM::SyncWarpOp::create(b, fullWarp);
    for (int64_t nt = 0; nt < nTiles; nt += 2)
      k.stmatrix4(outTile, m0, e.index(8 * nt), o[nt], o[nt + 1],
                  /*transposed=*/false);
    NVVM::SyncWarpOp::create(b, fullWarp);
    k.copyRowsOut(outTile, m0, 16, kOutputColumns, rows.valid, out,
                  [&](Value r, Value c) -> SmallVector<Value> {
      return {bIdx, e.addIndex(rows.t0, r), hv, e.addIndex(v0, c)};
    }, /*byWarp=*/true);
  }, units * numWarps * 32);
  e.replaceWithBuffers(op, {out});
  return success();
}

/// The compute capability of a chip name "sm_XY" or "sm_XYa" (90 for
/// sm_90a), or none.
std::optional<int> smVersion(StringRef chip) {
  int version;
  if (!chip.consume_front("sm_"))
    return std::nullopt;
  chip.consume_back("a");
  if (chip.getAsInteger(10, version))
    return std::nullopt;
  return version;
}

struct ConvertLinAttnChunkedToGPU
    : impl::ConvertLinAttnChunkedToGPUBase<ConvertLinAttnChunkedToGPU> {
  using Base::Base;
  void runOnOperation() override {
    std::optional<int> sm = smVersion(chip);
    if (!sm) {
      getOperation()->emitError()
          << "convert-linattn-chunked-to-gpu: chip '" << chip
          << "' is not a CUDA chip name (sm_XY or sm_XYa)";
      return signalPassFailure();
    }
    bool hasStMatrix = *sm >= 90;
    // The cumsums go last: a UT kernel that sums its scalar gates itself
    // (cumsumForUTKernel) leaves one unread, and then it is not launched.
    SmallVector<Operation *> ops, cumsums;
    getOperation()->walk([&](Operation *op) {
      if (isa<ChunkCumsumOp>(op))
        cumsums.push_back(op);
      else if (isa<L2NormOp, UTTransformOp, ChunkStatePassOp, SegmentCarriesOp,
                   ChunkOutputOp>(op))
        ops.push_back(op);
    });
    // Tensor-core operand types first, while every operand's producer
    // (an l2norm, say) is still visible.
    DenseMap<Operation *, Type> mmaTypes;
    for (Operation *op : ops) {
      FailureOr<Type> type =
          llvm::TypeSwitch<Operation *, FailureOr<Type>>(op)
              .Case([](UTTransformOp o) {
                return mmaTypeOf(o, {o.getK(), o.getV()});
              })
              .Case([](ChunkStatePassOp o) { return mmaTypeOf(o, {o.getK()}); })
              .Case([](ChunkOutputOp o) {
                return mmaTypeOf(o, {o.getQ(), o.getK()});
              })
              .Default([](Operation *) { return Type(); });
      if (failed(type))
        return signalPassFailure();
      mmaTypes[op] = *type;
    }
    // Per-key cumsums that decay their state pass's keys run first: the
    // state pass reads what they write.
    DenseMap<Operation *, DecayedKeys> decayedKeys;
    bool failedCumsum = false;
    llvm::erase_if(cumsums, [&](Operation *op) {
      auto cumsum = cast<ChunkCumsumOp>(op);
      ChunkStatePassOp statePass = statePassForDecayedKeys(cumsum);
      if (!statePass)
        return false;
      if (failed(lowerChunkCumsum(cumsum, statePass, &decayedKeys[statePass])))
        failedCumsum = true;
      ++numKernels;
      return true;
    });
    if (failedCumsum)
      return signalPassFailure();
    for (Operation *op : ops) {
      Type mma = mmaTypes[op];
      LogicalResult result =
          llvm::TypeSwitch<Operation *, LogicalResult>(op)
              .Case([](L2NormOp o) { return lowerL2Norm(o); })
              .Case([&](UTTransformOp o) { return lowerUTTransform(o, mma); })
              .Case([&](ChunkStatePassOp o) {
                auto decayed = decayedKeys.find(o);
                return lowerChunkStatePass(
                    o, mma, hasStMatrix,
                    decayed == decayedKeys.end() ? nullptr : &decayed->second);
              })
              .Case([](SegmentCarriesOp o) { return lowerSegmentCarries(o); })
              .Case([&](ChunkOutputOp o) {
                return lowerChunkOutput(o, mma, hasStMatrix);
              });
      if (failed(result))
        return signalPassFailure();
      ++numKernels;
    }
    for (Operation *op : cumsums) {
      auto cumsum = cast<ChunkCumsumOp>(op);
      if (cumsum->use_empty()) {
        eraseCumsum(cumsum);
        ++numCumsumsFused;
        continue;
      }
      if (failed(lowerChunkCumsum(cumsum)))
        return signalPassFailure();
      ++numKernels;
    }
  }
};

} // namespace
} // namespace mlir::linattn
