//===- NestingDepth.h - The deepest bracket nesting of MLIR text -*- C++ -*-===//
//
// MLIR's parser recurses once per level of `(`, `[`, `{` and `<` and runs
// out of stack (a crash, no diagnostic) at a few thousand levels. The tools
// measure their input first and refuse what is nested deeper than
// kMaxNestingDepth, far past any spec a person writes.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_UTILS_NESTINGDEPTH_H
#define LINATTN_UTILS_NESTINGDEPTH_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::linattn {

/// The deepest nesting the LinAttn tools parse.
constexpr unsigned kMaxNestingDepth = 1000;

/// Why `text` cannot be parsed safely ("line L: brackets nested deeper than
/// kMaxNestingDepth levels"), or "" if it can. Counts `(`, `[`, `{` and `<`
/// against their closers outside string literals and `//` comments; `->`
/// closes nothing.
std::string checkNestingDepth(llvm::StringRef text);

} // namespace mlir::linattn

#endif // LINATTN_UTILS_NESTINGDEPTH_H
