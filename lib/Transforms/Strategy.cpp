//===- Strategy.cpp - Algorithms a recurrence can be lowered with ---------===//

#include "LinAttn/Transforms/Strategy.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::linattn {

llvm::StringRef stringifyStrategy(Strategy strategy) {
  switch (strategy) {
  case Strategy::Auto:
    return "auto";
  case Strategy::Recurrent:
    return "recurrent";
  case Strategy::Scan:
    return "scan";
  case Strategy::Chunked:
    return "chunked";
  case Strategy::SegmentScan:
    return "segment-scan";
  }
  return "";
}

std::optional<Strategy> symbolizeStrategy(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Strategy>>(name)
      .Case("auto", Strategy::Auto)
      .Case("recurrent", Strategy::Recurrent)
      .Case("scan", Strategy::Scan)
      .Case("chunked", Strategy::Chunked)
      .Case("segment-scan", Strategy::SegmentScan)
      .Default(std::nullopt);
}

std::optional<Strategy> getRecordedStrategy(Operation *op) {
  auto name = op->getAttrOfType<StringAttr>(kStrategyAttrName);
  if (!name)
    return std::nullopt;
  return symbolizeStrategy(name.getValue());
}

bool isSelectedFor(Operation *op, std::initializer_list<Strategy> strategies) {
  std::optional<Strategy> recorded = getRecordedStrategy(op);
  if (!recorded)
    return true;
  for (Strategy s : strategies)
    if (*recorded == s)
      return true;
  return false;
}

} // namespace mlir::linattn
