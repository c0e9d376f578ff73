//===- signature-fuzzer.cpp - libFuzzer target: recorded signatures -------===//
//
// Any text as a library's __linattn_signature_<name>: parseSignature either
// accepts specs of bf16/f16/f32 with dimensions "?" or non-negative, whose
// text() reads back the same, or refuses; it never throws or crashes.
//
//===----------------------------------------------------------------------===//

#include "linattn/Signature.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::vector<linattn::TensorSpec> args, results;
  if (!linattn::parseSignature(text, args, results))
    return 0;
  for (const auto *list : {&args, &results})
    for (const linattn::TensorSpec &spec : *list) {
      for (int64_t d : spec.shape)
        if (d < -1)
          std::abort();
      std::vector<linattn::TensorSpec> again, none;
      if (!linattn::parseSignature("f(" + spec.text() + ")->()", again, none) ||
          again.size() != 1 || again[0].text() != spec.text())
        std::abort();
    }
  return 0;
}
