//===- KeyParts.cpp - A state column group's warps over its keys ----------===//

#include "KeyParts.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

SmallVector<SmallVector<Value>> sumKeyParts(MmaEmitter &k, int64_t offset,
                                            int64_t warps, Value columnGroup,
                                            ArrayRef<SmallVector<Value>> d,
                                            bool ownFromRegisters) {
  ImplicitLocOpBuilder &b = k.b;
  LoopEmitter &e = k.e;
  int64_t rowTiles = d.size();
  auto f32x4 = VectorType::get({4}, b.getF32Type());
  Value xchg = k.tile(offset, warps * rowTiles * 32, 4, b.getF32Type());
  auto slot = [&](Value w, int64_t rt) {
    return e.addIndex(
        e.mulIndex(e.addIndex(e.mulIndex(w, e.index(rowTiles)), e.index(rt)),
                   e.index(32)),
        k.lane);
  };
  for (int64_t rt = 0; rt < rowTiles; ++rt)
    vector::StoreOp::create(b, vector::FromElementsOp::create(b, f32x4, d[rt]),
                            xchg, ValueRange{slot(k.warp, rt), e.index(0)},
                            false, llvm::Align(16));
  k.barrier();
  static_assert(kStateKeySplit == 2, "one other key part a warp");
  auto partial = [&](Value w, int64_t rt) {
    Value x = vector::LoadOp::create(b, f32x4, xchg,
                                     ValueRange{slot(w, rt), e.index(0)},
                                     false, llvm::Align(16));
    SmallVector<Value> tile;
    for (int64_t i = 0; i < 4; ++i)
      tile.push_back(vector::ExtractOp::create(b, x, i));
    return tile;
  };
  SmallVector<SmallVector<Value>> sum;
  if (ownFromRegisters) {
    // A column group's warps are 2 g and 2 g + 1 (part = warp mod 2): own +
    // partner in one warp, partner + own in the other.
    Value partner = arith::XOrIOp::create(b, k.warp, e.index(1));
    for (int64_t rt = 0; rt < rowTiles; ++rt) {
      SmallVector<Value> tile(d[rt]), other = partial(partner, rt);
      for (int64_t i = 0; i < 4; ++i)
        tile[i] = e.add(tile[i], other[i]);
      sum.push_back(tile);
    }
    return sum;
  }
  // Part 0's + part 1's in both warps.
  Value firstWarp = e.mulIndex(columnGroup, e.index(kStateKeySplit));
  for (int64_t part = 0; part < kStateKeySplit; ++part) {
    Value w = e.addIndex(firstWarp, e.index(part));
    for (int64_t rt = 0; rt < rowTiles; ++rt) {
      SmallVector<Value> tile = partial(w, rt);
      if (part == 0) {
        sum.push_back(tile);
        continue;
      }
      for (int64_t i = 0; i < 4; ++i)
        sum[rt][i] = e.add(sum[rt][i], tile[i]);
    }
  }
  return sum;
}

} // namespace mlir::linattn::kernel
