//===- NestingDepth.cpp - The deepest bracket nesting of MLIR text --------===//

#include "LinAttn/Utils/NestingDepth.h"

namespace mlir::linattn {

std::string checkNestingDepth(llvm::StringRef text) {
  unsigned depth = 0, line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      // A string literal: skip to its closing quote, past escapes.
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n')
          ++line;
      }
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n')
        ++i;
      --i; // the newline is counted above
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > kMaxNestingDepth)
        return "line " + std::to_string(line) +
               ": brackets nested deeper than " +
               std::to_string(kMaxNestingDepth) +
               " levels, more than the parser takes";
    } else if (c == ')' || c == ']' || c == '}' ||
               (c == '>' && !(i > 0 && text[i - 1] == '-'))) {
      depth -= depth > 0;
    }
  }
  return "";
}

} // namespace mlir::linattn
