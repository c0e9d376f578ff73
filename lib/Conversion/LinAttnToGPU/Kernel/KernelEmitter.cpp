//===- KernelEmitter.cpp - The body of one generated kernel ---------------===//

#include "KernelEmitter.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace mlir::linattn::kernel {

Value approxExp(ImplicitLocOpBuilder &b, Value x) {
  Value scaled = arith::MulFOp::create(
      b, x, arith::ConstantOp::create(b, b.getF32FloatAttr(llvm::numbers::log2ef)));
  return LLVM::CallIntrinsicOp::create(
             b, b.getF32Type(), b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
             ValueRange{scaled})
      .getResult(0);
}

KernelEmitter::KernelEmitter(ImplicitLocOpBuilder &b, gpu::LaunchOp launch,
                             Value smem, int64_t threads)
    : b(b), e(b), smem(smem), threads(threads) {
  tid = launch.getThreadIds().x;
  Value c32 = e.index(32);
  warp = arith::DivUIOp::create(b, tid, c32);
  lane = arith::RemUIOp::create(b, tid, c32);
}

Value KernelEmitter::tile(int64_t offset, int64_t rows, int64_t cols, Type elem) {
  return tile(e.index(offset), rows, cols, elem);
}

Value KernelEmitter::tile(Value offset, int64_t rows, int64_t cols, Type elem) {
  auto type = MemRefType::get({rows, cols}, elem, MemRefLayoutAttrInterface(),
                              workgroupSpace(b.getContext()));
  return memref::ViewOp::create(b, type, smem, offset, ValueRange{});
}

Value KernelEmitter::vec(int64_t offset, int64_t n, Type elem) {
  auto type = MemRefType::get({n}, elem, MemRefLayoutAttrInterface(),
                              workgroupSpace(b.getContext()));
  return memref::ViewOp::create(b, type, smem, e.index(offset), ValueRange{});
}

void KernelEmitter::requireRegistersPerThread(int64_t registers) {
  auto view = smem ? smem.getDefiningOp<gpu::DynamicSharedMemoryOp>()
                   : gpu::DynamicSharedMemoryOp();
  assert(view && "a register floor is planned with dynamic shared memory");
  if (!view)
    return;
  view->setAttr(kMinRegistersAttrName, b.getI64IntegerAttr(registers));
}

Attribute KernelEmitter::workgroupSpace(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

void KernelEmitter::forEachOfBlock(int64_t total, function_ref<void(Value)> body) {
  assert(total % threads == 0 && "block-strided loop needs a multiple of the block");
  e.forEach(e.index(total / threads), [&](Value it) {
    body(e.addIndex(e.mulIndex(it, e.index(threads)), tid));
  });
}

void KernelEmitter::copyRowsOut(
    Value src, Value row0, int64_t rows, int64_t cols, Value valid, Value dst,
    function_ref<SmallVector<Value>(Value, Value)> dstIndices, bool byWarp,
    Value validCols) {
  Type elem = cast<MemRefType>(src.getType()).getElementType();
  int64_t perPiece = 128 / elem.getIntOrFloatBitWidth();
  int64_t perRow = cols / perPiece;
  auto type = VectorType::get({perPiece}, elem);
  auto body = [&](Value idx) {
    Value r = e.addIndex(row0, arith::DivUIOp::create(b, idx, e.index(perRow)));
    Value c = e.mulIndex(arith::RemUIOp::create(b, idx, e.index(perRow)),
                         e.index(perPiece));
    OpBuilder::InsertionGuard guard(b);
    Value store = valid ? ult(r, valid) : Value();
    if (validCols) {
      Value inCols = ult(c, validCols);
      store = store ? arith::AndIOp::create(b, store, inCols).getResult() : inCols;
    }
    if (store)
      b.setInsertionPointToStart(scf::IfOp::create(b, store, false).thenBlock());
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

void KernelEmitter::fillTile(Value dst, int64_t rows, int64_t cols, Value valid,
                             function_ref<Value(Value, Value)> load, Value loDst) {
  constexpr int64_t kWidth = 8;
  auto f32x8 = VectorType::get({kWidth}, b.getF32Type());
  auto elemx8 = VectorType::get(
      {kWidth}, cast<MemRefType>(dst.getType()).getElementType());
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

Value KernelEmitter::loadRowOrZero(Value r, Value valid, Type type,
                                   function_ref<Value(Value)> load) {
  Value clamped = e.minIndex(r, e.subIndex(valid, e.index(1)));
  Value zero = arith::ConstantOp::create(b, type, b.getZeroAttr(type));
  return select(ult(r, valid), load(clamped), zero);
}

void KernelEmitter::copyRowsAsync(
    Value dst, Value dstRow0, int64_t cols, Value t0, Value valid, Value seqLen,
    Value src, function_ref<SmallVector<Value>(Value, Value)> srcIndices,
    int64_t rows, bool narrowRows, Value validCols) {
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
    Value srcCol = c;
    if (validCols) {
      Value inCols = ult(c, validCols);
      inRows = arith::AndIOp::create(b, inRows, inCols);
      srcCol = select(inCols, c, e.index(0));
    }
    Value n = select(inRows, e.index(perCopy), e.index(0));
    bool full = perCopy * srcType.getElementTypeBitWidth() == 128;
    nvgpu::DeviceAsyncCopyOp::create(
        b, dst, ValueRange{e.addIndex(dstRow0, r), c}, src, srcIndices(row, srcCol),
        b.getIndexAttr(perCopy), n, full ? b.getUnitAttr() : UnitAttr());
  };
  int64_t total = rows * perRow;
  if (total % threads == 0)
    return forEachOfBlock(total, body);
  // Pieces that do not divide among the threads: ceil(total / threads)
  // rounds, the last one guarded.
  for (int64_t first = 0; first < total; first += threads) {
    Value idx = e.addIndex(tid, e.index(first));
    if (first + threads <= total) {
      body(idx);
      continue;
    }
    auto ifOp = scf::IfOp::create(b, ult(idx, e.index(total)), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body(idx);
  }
}

void KernelEmitter::copyTokenRowsAsync(Value dst, int64_t cols, ChunkRows rows,
                                       Value seqLen, Value src, Value batch,
                                       Value head, bool narrowRows) {
  copyRowsAsync(dst, e.index(0), cols, rows.t0, rows.valid, seqLen, src,
                [&](Value t, Value c) -> SmallVector<Value> {
                  return {batch, t, head, c};
                }, kChunk, narrowRows);
}

void KernelEmitter::copyTokenRowPartsAsync(Value hi, Value lo, int64_t cols,
                                           ChunkRows rows, Value seqLen, Value src,
                                           Value batch, Value head, bool narrowRows) {
  for (auto [dst, part] : {std::pair{hi, int64_t(0)}, std::pair{lo, int64_t(1)}})
    copyRowsAsync(dst, e.index(0), cols, rows.t0, rows.valid, seqLen, src,
                  [&, part](Value t, Value c) -> SmallVector<Value> {
                    return {batch, t, head, e.index(part), c};
                  }, kChunk, narrowRows);
}

Value KernelEmitter::commitCopies() {
  return nvgpu::DeviceAsyncCreateGroupOp::create(
      b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), ValueRange{});
}

void KernelEmitter::waitCopies(Value group, int64_t pending) {
  nvgpu::DeviceAsyncWaitOp::create(b, group, b.getI32IntegerAttr(pending));
}

std::pair<Value, Value> KernelEmitter::split(Value x, Type narrow) {
  return {arith::TruncFOp::create(b, narrow, x),
          arith::TruncFOp::create(b, narrow, e.roundingRest(x, narrow))};
}

Value KernelEmitter::loadJoined(Value hi, Value lo, ValueRange indices) {
  auto part = [&](Value buf) -> Value {
    Value x = memref::LoadOp::create(b, buf, indices);
    return arith::ExtFOp::create(b, b.getF32Type(), x);
  };
  return lo ? e.add(part(hi), part(lo)) : part(hi);
}

Value KernelEmitter::loadWidened(Value memref, ValueRange indices, int64_t width) {
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

Value KernelEmitter::loadWidenedJoined(Value hi, Value lo, ValueRange indices,
                                       int64_t width) {
  Value x = loadWidened(hi, indices, width);
  return lo ? arith::AddFOp::create(b, x, loadWidened(lo, indices, width))
            : x;
}

Value KernelEmitter::load8(Value memref, ValueRange indices) {
  return loadWidened(memref, indices, 8);
}

Value KernelEmitter::sharedPointer(Value buf, Value row, Value col) {
  auto type = cast<MemRefType>(buf.getType());
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, buf);
  Value element = e.addIndex(e.mulIndex(row, e.index(type.getDimSize(1))), col);
  Value address = arith::IndexCastOp::create(
      b, b.getI64Type(), e.addIndex(base, e.mulIndex(element, e.index(bytes))));
  return LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), /*addressSpace=*/3), address);
}

Value KernelEmitter::expPair(Value x) {
  Value lo = exp(vector::ExtractOp::create(b, x, 0));
  Value hi = exp(vector::ExtractOp::create(b, x, 1));
  return vector::FromElementsOp::create(b, x.getType(), ValueRange{lo, hi});
}

void KernelEmitter::storePair(Value x0, Value x1, Value memref,
                              SmallVector<Value> indices, Value pred) {
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

Value KernelEmitter::ult(Value x, Value y) {
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
}

Value KernelEmitter::select(Value c, Value x, Value y) {
  return arith::SelectOp::create(b, c, x, y);
}

void KernelEmitter::barrier() {
  if (!barrierThreads) {
    gpu::BarrierOp::create(b);
    return;
  }
  auto i32 = [&](int64_t x) {
    return arith::ConstantIntOp::create(b, b.getI32Type(), x).getResult();
  };
  NVVM::BarrierOp::create(b, TypeRange{}, i32(1), i32(barrierThreads),
                          NVVM::BarrierReductionAttr(), Value());
}

void KernelEmitter::mbarrierInit(Value bar, int64_t count) {
  NVVM::MBarrierInitOp::create(
      b, bar, arith::ConstantIntOp::create(b, b.getI32Type(), count), Value());
}

void KernelEmitter::mbarrierArrive(Value bar) {
  NVVM::MBarrierArriveOp::create(b, b.getI64Type(), bar, Value());
}

void KernelEmitter::mbarrierWait(Value bar, Value parity) {
  Type i32 = b.getI32Type();
  NVVM::MBarrierTryWaitParityOp::create(
      b, bar, arith::IndexCastUIOp::create(b, i32, parity),
      arith::ConstantIntOp::create(b, i32, 0));
}

void KernelEmitter::copiesArrive(Value bar) {
  NVVM::CpAsyncMBarrierArriveOp::create(b, bar, /*noinc=*/true);
}

void KernelEmitter::waitAllCopies() { NVVM::CpAsyncWaitGroupOp::create(b, uint32_t(0)); }

Value KernelEmitter::shuffleFrom(Value x, Value source) {
  Type i32 = b.getI32Type();
  Value lane32 = arith::IndexCastUIOp::create(b, i32, source);
  Value width = arith::ConstantOp::create(b, b.getI32IntegerAttr(32));
  return gpu::ShuffleOp::create(b, x, lane32, width, gpu::ShuffleMode::IDX)
      .getShuffleResult();
}

Value KernelEmitter::shuffle(Value x, int32_t offset, gpu::ShuffleMode mode) {
  if (!x.getType().isF64())
    return gpu::ShuffleOp::create(b, x, offset, 32, mode).getShuffleResult();
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value bits = arith::BitcastOp::create(b, i64, x);
  Value halves[2] = {
      arith::TruncIOp::create(b, i32, bits),
      arith::TruncIOp::create(
          b, i32, arith::ShRUIOp::create(b, bits, arith::ConstantOp::create(
                                                      b, b.getI64IntegerAttr(32)))
                      .getResult())};
  for (Value &half : halves)
    half = gpu::ShuffleOp::create(b, half, offset, 32, mode).getShuffleResult();
  Value low = arith::ExtUIOp::create(b, i64, halves[0]);
  Value high = arith::ShLIOp::create(
      b, arith::ExtUIOp::create(b, i64, halves[1]).getResult(),
      arith::ConstantOp::create(b, b.getI64IntegerAttr(32)));
  return arith::BitcastOp::create(b, x.getType(),
                                  arith::OrIOp::create(b, low, high).getResult());
}

Value KernelEmitter::warpSum(Value x) {
  for (int32_t offset = 16; offset > 0; offset /= 2)
    x = e.add(x, shuffle(x, offset, gpu::ShuffleMode::XOR));
  return x;
}

Value KernelEmitter::warpSuffixSum(Value x) {
  Value zero = arith::ConstantOp::create(b, b.getFloatAttr(x.getType(), 0.0));
  for (int32_t offset = 1; offset < 32; offset *= 2) {
    Value from = shuffle(x, offset, gpu::ShuffleMode::DOWN);
    // Lanes past 31 - offset have no lane `offset` above them.
    Value inRange = ult(lane, e.index(32 - offset));
    x = e.add(x, select(inRange, from, zero));
  }
  return x;
}

void emitLaunchBody(ImplicitLocOpBuilder &b, ArrayRef<Value> grid,
                    int64_t smemBytes, int64_t threads,
                    function_ref<void(gpu::LaunchOp, Value)> body) {
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
  body(launch, smem);
}

void emitLaunch(ImplicitLocOpBuilder &b, ArrayRef<Value> grid, int64_t smemBytes,
                function_ref<void(KernelEmitter &)> body, int64_t threads) {
  emitLaunchBody(b, grid, smemBytes, threads, [&](gpu::LaunchOp launch, Value smem) {
    KernelEmitter k(b, launch, smem, threads);
    body(k);
  });
}

void emitRowWarpLaunch(
    ImplicitLocOpBuilder &b, ArrayRef<Value> sizes,
    function_ref<void(KernelEmitter &, Value, Value, Value)> body) {
  LoopEmitter e(b);
  Value blocks = arith::CeilDivUIOp::create(b, sizes[1], e.index(kWarps));
  emitLaunch(b, {blocks, sizes[2], sizes[0]}, /*smemBytes=*/0,
             [&](KernelEmitter &k) {
    Block *launchBody = b.getInsertionBlock();
    Value t = e.addIndex(e.mulIndex(launchBody->getArgument(0), e.index(kWarps)),
                         k.warp);
    Value h = launchBody->getArgument(1), bIdx = launchBody->getArgument(2);
    auto ifOp = scf::IfOp::create(b, k.ult(t, sizes[1]), false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body(k, bIdx, t, h);
  });
}

} // namespace mlir::linattn::kernel
