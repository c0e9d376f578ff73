//===- npy-fuzzer.cpp - libFuzzer target: the .npy reader -----------------===//
//
// Any bytes as an .npy file: parseNpy either fills an array whose element
// count matches its shape or names a problem; it never reads past the
// buffer, allocates for a size the data does not hold, or crashes.
//
//===----------------------------------------------------------------------===//

#include "linattn/InputCheck.h"
#include "linattn/Npy.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  linattn::NpyArray array;
  std::string problem;
  if (!linattn::parseNpy(reinterpret_cast<const char *>(data), size, array,
                         problem)) {
    if (problem.empty())
      std::abort(); // a refusal always says why
    return 0;
  }
  if (array.numElements() != int64_t(array.data.size()))
    std::abort();
  // What a runner does next with an array it read.
  (void)linattn::checkInput(array, 0, "gate");
  return 0;
}
