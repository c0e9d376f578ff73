//===- MmaEmitter.cpp - Tensor-core fragments of a kernel -----------------===//

#include "MmaEmitter.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

MmaEmitter::MmaEmitter(ImplicitLocOpBuilder &b, gpu::LaunchOp launch,
                       Type mmaElem, Value smem, int64_t threads)
    : KernelEmitter(b, launch, smem, threads), mmaElem(mmaElem) {
  group = arith::DivUIOp::create(b, lane, e.index(4));
  quad = arith::RemUIOp::create(b, lane, e.index(4));
  Value tileIdx = arith::DivUIOp::create(b, lane, e.index(8));
  tileRow = arith::RemUIOp::create(b, lane, e.index(8));
  tileLo = e.mulIndex(arith::RemUIOp::create(b, tileIdx, e.index(2)), e.index(8));
  tileHi = e.mulIndex(arith::DivUIOp::create(b, tileIdx, e.index(2)), e.index(8));
}

SmallVector<Value> MmaEmitter::ldmatrix4(TileView view, Value i0, int64_t k0,
                                         bool swap) {
  return ldmatrix4(view, i0, e.index(k0), swap);
}

SmallVector<Value> MmaEmitter::ldmatrix4(TileView view, Value i0, Value k0,
                                         bool swap) {
  SmallVector<Value> regs;
  for (Value pair : ldmatrix4Pairs(view, i0, k0, swap))
    regs.push_back(mmaRegister(pair));
  return regs;
}

SmallVector<Value> MmaEmitter::ldmatrix4Pairs(TileView view, Value i0, Value k0,
                                              bool swap) {
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

Value MmaEmitter::mmaRegister(Value pair) {
  if (mmaElem.isF16())
    return pair;
  return vector::ExtractOp::create(
      b, vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), pair), 0);
}

Value MmaEmitter::packPair(Value x0, Value x1, Type narrowElem) {
  Value pair = vector::FromElementsOp::create(
      b, VectorType::get({2}, b.getF32Type()), ValueRange{x0, x1});
  Value narrow = arith::TruncFOp::create(b, VectorType::get({2}, narrowElem), pair);
  return vector::ExtractOp::create(
      b, vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()), narrow),
      0);
}

void MmaEmitter::stmatrix4(Value buf, Value row0, Value col0, ValueRange tile0,
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

std::pair<Value, Value> MmaEmitter::splitRegister(Value pair) {
  auto [hi, lo] = split(pair, VectorType::get({2}, mmaElem));
  return {mmaRegister(hi), mmaRegister(lo)};
}

MmaEmitter::FragmentA MmaEmitter::fragmentAFromAcc(ArrayRef<Value> tile0,
                                                   ArrayRef<Value> tile1,
                                                   bool negate, bool split) {
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

SmallVector<Value> MmaEmitter::fragB2FromF32Columns(Value buf, Value base,
                                                    int64_t n0, int64_t k0,
                                                    SmallVector<Value> &lo) {
  return fragB2FromElements(
      e.index(k0), base, n0,
      [&](Value k, Value n) { return e.loadF32(buf, {k, n}); }, lo);
}

SmallVector<Value> MmaEmitter::fragB2FromElements(
    Value k0, Value base, int64_t n0, function_ref<Value(Value, Value)> element,
    SmallVector<Value> &lo) {
  SmallVector<Value> regs;
  auto f32x2 = VectorType::get({2}, b.getF32Type());
  for (int64_t j = 0; j < 2; ++j) {
    Value n = e.addIndex(base, e.addIndex(e.index(n0 + 8 * j), group));
    for (int64_t half = 0; half < 2; ++half) {
      Value k = e.addIndex(e.addIndex(k0, e.index(8 * half)),
                           e.mulIndex(quad, e.index(2)));
      Value x0 = element(k, n);
      Value x1 = element(e.addIndex(k, e.index(1)), n);
      Value pair = vector::FromElementsOp::create(b, f32x2, ValueRange{x0, x1});
      auto [hi, rest] = splitRegister(pair);
      regs.push_back(hi);
      lo.push_back(rest);
    }
  }
  return regs;
}

SmallVector<Value> MmaEmitter::fragAFromPairs(Value m0, int64_t k0,
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

MmaEmitter::FragmentA
MmaEmitter::fragAFromPairs(Value m0, int64_t k0,
                           function_ref<Value(Value, Value)> pair, bool split) {
  if (!split)
    return {fragAFromPairs(m0, k0, pair), {}};
  FragmentA fragment;
  for (int64_t kHalf : {0, 8})
    for (int64_t rowHalf : {0, 8}) {
      Value r = e.addIndex(e.addIndex(m0, group), e.index(rowHalf));
      Value c = e.addIndex(e.index(k0 + kHalf), e.mulIndex(quad, e.index(2)));
      auto [hi, lo] = splitRegister(pair(r, c));
      fragment.first.push_back(hi);
      fragment.second.push_back(lo);
    }
  return fragment;
}

SmallVector<Value> MmaEmitter::fragA(TileView a, Value m0, int64_t k0) {
  return ldmatrix4(a, m0, k0, /*swap=*/false);
}

SmallVector<Value> MmaEmitter::fragB2(TileView bt, int64_t n0, int64_t k0) {
  return ldmatrix4(bt, e.index(n0), k0, /*swap=*/true);
}

SmallVector<Value> MmaEmitter::fragB2(TileView bt, Value base, int64_t n0,
                                      int64_t k0) {
  return ldmatrix4(bt, e.addIndex(base, e.index(n0)), k0, /*swap=*/true);
}

SmallVector<Value> MmaEmitter::fragB2(TileView bt, int64_t n0, Value k0) {
  return ldmatrix4(bt, e.index(n0), k0, /*swap=*/true);
}

SmallVector<Value> MmaEmitter::mma(ArrayRef<Value> a, ArrayRef<Value> bFrag,
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

SmallVector<Value> MmaEmitter::mmaSplit(ArrayRef<Value> aHi, ArrayRef<Value> aLo,
                                        ArrayRef<Value> bHi, ArrayRef<Value> bLo,
                                        ArrayRef<Value> acc) {
  SmallVector<Value> d(acc);
  if (!bLo.empty())
    d = mma(aHi, bLo, d);
  if (!aLo.empty())
    d = mma(aLo, bHi, d);
  return mma(aHi, bHi, d);
}

MmaEmitter::FragmentA MmaEmitter::fragments(Operand a, Value m0, int64_t k0) {
  FragmentA frag{fragA(a.hi, m0, k0), {}};
  if (a.lo)
    frag.second = fragA(*a.lo, m0, k0);
  return frag;
}

void MmaEmitter::gemm(SmallVector<SmallVector<Value>> &acc, Operand a, Value m0,
                      Operand bt, int64_t kDim, int64_t n0) {
  gemmFrom(acc, [&](int64_t k0) { return fragments(a, m0, k0); }, bt, kDim,
           Value(), n0);
}

void MmaEmitter::gemm(SmallVector<SmallVector<Value>> &acc, Operand a, Value m0,
                      Operand bt, int64_t kDim, Value nBase) {
  gemmFrom(acc, [&](int64_t k0) { return fragments(a, m0, k0); }, bt, kDim,
           nBase, 0);
}

void MmaEmitter::gemm(SmallVector<SmallVector<Value>> &acc,
                      function_ref<FragmentA(int64_t)> fragments, Operand bt,
                      int64_t kDim, int64_t n0) {
  gemmFrom(acc, fragments, bt, kDim, Value(), n0);
}

void MmaEmitter::gemmFrom(SmallVector<SmallVector<Value>> &acc,
                          function_ref<FragmentA(int64_t)> fragments, Operand bt,
                          int64_t kDim, Value nBase, int64_t n0) {
  assert(acc.size() % 2 == 0 && "B fragments load two n-tiles at a time");
  auto fragB = [&](TileView view, int64_t n, int64_t k0) {
    return nBase ? fragB2(view, nBase, n, k0) : fragB2(view, n, k0);
  };
  for (int64_t k0 = 0; k0 < kDim; k0 += 16) {
    auto [aHi, aLo] = fragments(k0);
    for (size_t nt = 0; nt < acc.size(); nt += 2) {
      SmallVector<Value> bHi = fragB(bt.hi, n0 + 8 * nt, k0), bLo;
      if (bt.lo)
        bLo = fragB(*bt.lo, n0 + 8 * nt, k0);
      for (size_t j = 0; j < 2; ++j)
        acc[nt + j] = mmaSplit(aHi, aLo, ArrayRef(bHi).slice(2 * j, 2),
                               bt.lo ? ArrayRef(bLo).slice(2 * j, 2)
                                     : ArrayRef<Value>(),
                               acc[nt + j]);
    }
  }
}

SmallVector<SmallVector<Value>> MmaEmitter::zeroAcc(int64_t tiles) {
  Value z = e.f32(0.0f);
  return SmallVector<SmallVector<Value>>(tiles, SmallVector<Value>(4, z));
}

Value MmaEmitter::accRow(Value m0, int64_t i) {
  Value r = e.addIndex(m0, group);
  return i >= 2 ? e.addIndex(r, e.index(8)) : r;
}

Value MmaEmitter::accCol(int64_t n0, int64_t i) {
  return e.addIndex(e.index(n0 + (i & 1)), e.mulIndex(quad, e.index(2)));
}

std::array<Value, 2> MmaEmitter::accRowInverseNorms(Value hi, Value lo,
                                                    Value m0, int64_t K,
                                                    float eps) {
  assert(K % 32 == 0 && "the chunked kernels' head sizes");
  // 16-byte vectors of 16-bit keys, K / 32 a lane of the quad.
  constexpr int64_t width = 8;
  int64_t vectorsPerLane = K / (4 * width);
  std::array<Value, 2> norms;
  for (int64_t half = 0; half < 2; ++half) {
    Value row = accRow(m0, 2 * half);
    Value sum = e.f32(0.0f);
    for (int64_t j = 0; j < vectorsPerLane; ++j) {
      Value column =
          e.mulIndex(e.addIndex(quad, e.index(4 * j)), e.index(width));
      Value x = loadWidenedJoined(hi, lo, {row, column}, width);
      for (int64_t i = 0; i < width; ++i) {
        Value xi = vector::ExtractOp::create(b, x, i);
        sum = math::FmaOp::create(b, xi, xi, sum);
      }
    }
    // A quad is an aligned run of four lanes: xor 1 and 2 stay inside it.
    for (int32_t offset : {1, 2})
      sum = e.add(sum, shuffle(sum, offset, gpu::ShuffleMode::XOR));
    norms[half] = e.inverseNormOfSquares(sum, eps);
  }
  return norms;
}

SmallVector<Value> MmaEmitter::perAccColumnShared(function_ref<Value(Value)> f) {
  // 32 lanes x 2 columns: the step's 64.
  Value first = e.mulIndex(lane, e.index(2));
  Value own[2] = {f(first), f(e.addIndex(first, e.index(1)))};
  SmallVector<Value> values;
  for (int64_t nt = 0; nt < 8; ++nt) {
    Value source = e.addIndex(quad, e.index(4 * nt));
    for (Value x : own)
      values.push_back(shuffleFrom(x, source));
  }
  return values;
}

void MmaEmitter::forEachPair(Value m0, int64_t nt,
                             function_ref<void(Value, Value, int64_t)> body) {
  for (int64_t i : {0, 2})
    body(accRow(m0, i), accCol(8 * nt, i), i);
}

void emitLaunch(ImplicitLocOpBuilder &b, ArrayRef<Value> grid, int64_t smemBytes,
                Type mmaElem, function_ref<void(MmaEmitter &)> body,
                int64_t threads) {
  emitLaunchBody(b, grid, smemBytes, threads, [&](gpu::LaunchOp launch, Value smem) {
    MmaEmitter k(b, launch, mmaElem, smem, threads);
    body(k);
  });
}

SmallVector<Value> flattenTiles(ArrayRef<SmallVector<Value>> tiles) {
  SmallVector<Value> flat;
  for (const SmallVector<Value> &tile : tiles)
    flat.append(tile.begin(), tile.end());
  return flat;
}

SmallVector<SmallVector<Value>> unflattenTiles(ValueRange flat) {
  assert(flat.size() % 4 == 0 && "accumulator tiles hold 4 values");
  SmallVector<SmallVector<Value>> tiles;
  for (size_t i = 0; i < flat.size(); i += 4)
    tiles.push_back(SmallVector<Value>(flat.slice(i, 4)));
  return tiles;
}

} // namespace mlir::linattn::kernel
