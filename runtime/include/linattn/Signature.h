//===- Signature.h - A compiled function's recorded signature ----*- C++ -*-===//
//
// linattn-emit-signatures records each compiled function's types as text,
// `__linattn_signature_<name>` (linattn/Abi.h):
//
//   gated_deltanet(bf16[?,?,8,128],...,f32[?,8,128,128])->(bf16[?,?,8,128],f32[?,8,128,128])
//
// A runner without MLIR (linattn-gpu-run) reads it back here to check its
// inputs and build memref descriptors. The text comes from a library file,
// so anything malformed is refused, never trusted.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_SIGNATURE_H
#define LINATTN_SIGNATURE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace linattn {

/// One argument or result: "bf16[?,?,8,128]".
struct TensorSpec {
  std::string elem;           ///< bf16, f16 or f32
  std::vector<int64_t> shape; ///< -1 where dynamic
  size_t width() const { return elem == "f32" ? 4 : 2; }
  std::string text() const;
};

/// "name(a,b)->(c,d)" into argument and result specs; false (the outputs
/// unspecified) unless every spec is an element type of bf16, f16 or f32
/// and dimensions that are "?" or 1 to 18 digits.
bool parseSignature(const std::string &text, std::vector<TensorSpec> &args,
                    std::vector<TensorSpec> &results);

} // namespace linattn

#endif // LINATTN_SIGNATURE_H
