//===- Strategy.h - Algorithms a recurrence can be lowered with -*- C++ -*-===//
//
// The strategy vocabulary shared by the selector, the algorithm passes and
// the pipelines. The selector records its choice on a linattn.recurrence as
// `linattn.strategy = "<name>"` (and `linattn.chunk_size` where it applies);
// an algorithm pass rewrites the recurrences that name its algorithm, or,
// when none is named, every recurrence it can.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_TRANSFORMS_STRATEGY_H
#define LINATTN_TRANSFORMS_STRATEGY_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir {
class Operation;
namespace linattn {

enum class Strategy { Auto, Recurrent, Scan, Chunked, SegmentScan };

constexpr llvm::StringLiteral kStrategyAttrName = "linattn.strategy";
constexpr llvm::StringLiteral kChunkSizeAttrName = "linattn.chunk_size";

llvm::StringRef stringifyStrategy(Strategy strategy);
std::optional<Strategy> symbolizeStrategy(llvm::StringRef name);

/// The strategy recorded on `op`, if any.
std::optional<Strategy> getRecordedStrategy(Operation *op);

/// Whether an algorithm pass for `strategies` should rewrite `op`: it names
/// one of them, or names none.
bool isSelectedFor(Operation *op, std::initializer_list<Strategy> strategies);

} // namespace linattn
} // namespace mlir

#endif // LINATTN_TRANSFORMS_STRATEGY_H
