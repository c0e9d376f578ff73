//===- KeyParts.h - A state column group's warps over its keys --*- C++ -*-===//
//
// The state pass and its adjoint carry a state of K keys by 16 value
// columns in kStateKeySplit warps, each holding K / kStateKeySplit keys in
// accumulator registers: a product over all keys is the sum of the warps'
// partials, summed here through shared memory.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_STATEPASS_KEYPARTS_H
#define LIB_CONVERSION_LINATTNTOGPU_STATEPASS_KEYPARTS_H

#include "../Kernel/MmaEmitter.h"

namespace mlir::linattn::kernel {

/// Warps per state column group, each with K / kStateKeySplit of the keys.
constexpr int64_t kStateKeySplit = 2;

/// Shared bytes the sum of `rowTiles` accumulator tiles per warp takes
/// for `warps` warps: tile rt of warp w at [w][rt][lane], 16 bytes each.
inline int64_t keyPartsExchangeBytes(int64_t warps, int64_t rowTiles) {
  return warps * rowTiles * 32 * 16;
}

/// The sum of the partial accumulator tiles `d` of the kStateKeySplit warps
/// of column group `columnGroup` (warps columnGroup * kStateKeySplit +
/// part): the same sum, bit for bit, in both warps of the group (a + b =
/// b + a). Each warp adds its partner's partial, read back through shared
/// memory, to its own: from its registers (`ownFromRegisters`: eight
/// 16-byte loads a warp and step fewer) or read back too, so that its
/// registers are free across the barrier (the backward's reverse pass,
/// whose registers are scarce: 4-6% slower with them kept, bench/NOTES.md
/// s3). `offset` is the exchange's byte offset in shared memory, for
/// `warps` warps; one barrier between the stores and the loads.
SmallVector<SmallVector<Value>> sumKeyParts(MmaEmitter &k, int64_t offset,
                                            int64_t warps, Value columnGroup,
                                            ArrayRef<SmallVector<Value>> d,
                                            bool ownFromRegisters);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_STATEPASS_KEYPARTS_H
