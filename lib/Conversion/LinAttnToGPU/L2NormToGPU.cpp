//===- L2NormToGPU.cpp - linattn.l2norm and linattn.rnorm to kernels --------===//
//
// x / sqrt(sum(x^2) + eps) per row (linattn.l2norm), or the row's factor
// 1 / sqrt(sum(x^2) + eps) alone (linattn.rnorm): the rows' keys spread
// over a warp's lanes in 16-byte vectors, the sum by a butterfly of
// shuffles.
//
//===----------------------------------------------------------------------===//

#include "ChunkedToGPUPatterns.h"
#include "KernelSupport.h"
#include "Kernel/KernelEmitter.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/MathExtras.h"

namespace mlir::linattn::kernel {

/// Keys per row of the l2norm kernel: at most a warp's 32 lanes share a
/// row, each holding K / 32 keys in registers (32 f32 keys a lane here).
constexpr int64_t kMaxL2NormKeys = 1024;

namespace {

/// How the kernel's warps cover rows of K keys: each lane loads `width`
/// consecutive keys at a time (16 bytes where K allows), `lanesPerRow`
/// lanes share a row (the least power of two holding its K / width
/// vectors, at most 32), and a warp takes `rowsPerWarp` rows, enough that
/// each lane has at least two loads in flight before its first use.
struct L2NormTiling {
  int64_t width = 1, vectors = 0, lanesPerRow = 32, vectorsPerLane = 0;
  int64_t rowGroups = 1; ///< groups of 32 / lanesPerRow rows per warp
  int64_t rowsPerWarp() const { return 32 / lanesPerRow * rowGroups; }

  static L2NormTiling of(int64_t K, int64_t elemBytes) {
    L2NormTiling t;
    for (int64_t w : {8, 4, 2, 1})
      if (w * elemBytes <= 16 && K % w == 0) {
        t.width = w;
        break;
      }
    t.vectors = K / t.width;
    t.lanesPerRow = std::min<int64_t>(32, llvm::PowerOf2Ceil(t.vectors));
    t.vectorsPerLane = llvm::divideCeil(t.vectors, t.lanesPerRow);
    t.rowGroups = t.vectorsPerLane >= 2 ? 1 : 2;
    return t;
  }
};

/// y = x / sqrt(sum(x^2) + eps) over the last dimension of [B, T, H, K]
/// (`scalesOnly`: r = 1 / sqrt(sum(x^2) + eps) [B, T, H], each row's
/// first lane storing it). The rows (t, h) of a sequence are consecutive
/// in memory: a block takes kWarps * rowsPerWarp of them in order, so a
/// warp's loads cover one contiguous stretch; lanes of a row sum their
/// squares, then a butterfly of shuffles over its lanesPerRow lanes. Rows
/// past T * H are read clamped (every lane takes part in the shuffles)
/// and not stored.
LogicalResult lowerRowNorms(Operation *op, Value input, Value result,
                            bool scalesOnly, RewriterBase &rewriter) {
  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op->getLoc(), rewriter);
  LoopEmitter e(b);
  auto type = cast<RankedTensorType>(input.getType());
  if (type.getRank() != 4)
    return op->emitOpError() << "GPU kernel normalises [B, T, H, K] operands";
  int64_t n = type.getDimSize(3); // static: the op's verifier
  if (n > kMaxL2NormKeys)
    return op->emitOpError() << "GPU " << op->getName().stripDialect()
                             << " kernel takes K of at most " << kMaxL2NormKeys
                             << " (a warp per row), got " << n;
  L2NormTiling tiling = L2NormTiling::of(n, type.getElementTypeBitWidth() / 8);
  Value in = e.toBuffer(input);
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < 4; ++d)
    sizes.push_back(e.dim(in, d));
  Value out = e.allocFor(result.getType(),
                         scalesOnly ? ArrayRef(sizes).drop_back() : ArrayRef(sizes));
  Type outElem = cast<MemRefType>(out.getType()).getElementType();
  int64_t rowsPerBlock = kWarps * tiling.rowsPerWarp();
  Value rows = e.mulIndex(sizes[1], sizes[2]); // T * H of a sequence
  Value blocks = arith::CeilDivUIOp::create(b, rows, e.index(rowsPerBlock));
  emitLaunch(b, {blocks, sizes[0], e.index(1)}, /*smemBytes=*/0,
             [&](KernelEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value bIdx = body->getArgument(1);
    Value laneRow = arith::DivUIOp::create(b, k.lane, e.index(tiling.lanesPerRow));
    Value laneVector = arith::RemUIOp::create(b, k.lane, e.index(tiling.lanesPerRow));
    Value firstRow = e.addIndex(
        e.mulIndex(body->getArgument(0), e.index(rowsPerBlock)),
        e.mulIndex(k.warp, e.index(tiling.rowsPerWarp())));
    Value lastRow = e.subIndex(rows, e.index(1));
    struct Piece {
      Value t, h, column, store;
      Value x; // vector<width x f32>
    };
    SmallVector<Piece> pieces;
    SmallVector<Value> inverseNorms; // a row group's 1 / |x|
    // Every load first, then the sums.
    for (int64_t g = 0; g < tiling.rowGroups; ++g) {
      Value row = e.addIndex(
          firstRow, e.addIndex(e.index(g * 32 / tiling.lanesPerRow), laneRow));
      Value inRows = k.ult(row, rows);
      Value clamped = e.minIndex(row, lastRow);
      Value t = arith::DivUIOp::create(b, clamped, sizes[2]);
      Value h = arith::RemUIOp::create(b, clamped, sizes[2]);
      for (int64_t j = 0; j < tiling.vectorsPerLane; ++j) {
        Value vec = e.addIndex(laneVector, e.index(j * tiling.lanesPerRow));
        bool partial = (j + 1) * tiling.lanesPerRow > tiling.vectors;
        Value store = inRows;
        if (partial) {
          Value inRow = k.ult(vec, e.index(tiling.vectors));
          store = arith::AndIOp::create(b, store, inRow);
          vec = e.minIndex(vec, e.index(tiling.vectors - 1));
        }
        Value column = e.mulIndex(vec, e.index(tiling.width));
        Value x = k.loadWidened(in, {bIdx, t, h, column}, tiling.width);
        if (partial)
          x = k.select(store, x,
                       arith::ConstantOp::create(b, b.getZeroAttr(x.getType())));
        pieces.push_back({t, h, column, store, x});
      }
    }
    for (int64_t g = 0; g < tiling.rowGroups; ++g) {
      Value sum = e.f32(0.0f);
      for (int64_t j = 0; j < tiling.vectorsPerLane; ++j) {
        Value x = pieces[g * tiling.vectorsPerLane + j].x;
        for (int64_t i = 0; i < tiling.width; ++i) {
          Value xi = vector::ExtractOp::create(b, x, i);
          sum = math::FmaOp::create(b, xi, xi, sum);
        }
      }
      // The row's lanes are an aligned run of lanesPerRow: xor offsets
      // below it stay inside the run.
      for (int64_t offset = tiling.lanesPerRow / 2; offset > 0; offset /= 2)
        sum = e.add(sum, k.shuffle(sum, offset, gpu::ShuffleMode::XOR));
      inverseNorms.push_back(e.inverseNormOfSquares(sum, L2NormOp::kEpsilon));
    }
    if (scalesOnly) {
      for (int64_t g = 0; g < tiling.rowGroups; ++g) {
        const Piece &first = pieces[g * tiling.vectorsPerLane];
        Value store = arith::AndIOp::create(
            b, first.store,
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, laneVector,
                                  e.index(0)));
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(scf::IfOp::create(b, store, false).thenBlock());
        memref::StoreOp::create(b, inverseNorms[g], out,
                                ValueRange{bIdx, first.t, first.h});
      }
      return;
    }
    auto narrowType = VectorType::get({tiling.width}, outElem);
    for (auto [i, piece] : llvm::enumerate(pieces)) {
      Value inv = inverseNorms[i / tiling.vectorsPerLane];
      Value y = arith::MulFOp::create(
          b, piece.x, vector::BroadcastOp::create(b, piece.x.getType(), inv));
      if (outElem != b.getF32Type())
        y = arith::TruncFOp::create(b, narrowType, y);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(scf::IfOp::create(b, piece.store, false).thenBlock());
      vector::StoreOp::create(
          b, y, out, ValueRange{bIdx, piece.t, piece.h, piece.column},
          /*nontemporal=*/false,
          llvm::Align(std::min<int64_t>(16, tiling.width * outElem.getIntOrFloatBitWidth() / 8)));
    }
  });
  e.replaceWithBuffers(rewriter, op, {out});
  return success();
}

struct L2NormToGPU : OpRewritePattern<L2NormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(L2NormOp op,
                                PatternRewriter &rewriter) const override {
    return lowerRowNorms(op, op.getInput(), op.getResult(), /*scalesOnly=*/false,
                         rewriter);
  }
};

struct RNormToGPU : OpRewritePattern<RNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RNormOp op,
                                PatternRewriter &rewriter) const override {
    return lowerRowNorms(op, op.getInput(), op.getResult(), /*scalesOnly=*/true,
                         rewriter);
  }
};

} // namespace

void populateL2NormToGPUPatterns(RewritePatternSet &patterns,
                                 const ChunkedLoweringContext &) {
  patterns.add<L2NormToGPU, RNormToGPU>(patterns.getContext());
}

} // namespace mlir::linattn::kernel
