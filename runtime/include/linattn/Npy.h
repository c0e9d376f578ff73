//===- Npy.h - Read and write NumPy .npy files ------------------*- C++ -*-===//
//
// Just enough of the .npy format (version 1.0-3.0) for dense little-endian
// float arrays in C order: the file format runners exchange with numpy.
// No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_NPY_H
#define LINATTN_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace linattn {

/// Element types an .npy file may hold here.
enum class NpyDType { F16, F32, F64 };

/// A dense C-order array read from an .npy file, widened to double.
struct NpyArray {
  std::vector<int64_t> shape;
  NpyDType dtype = NpyDType::F32;
  std::vector<double> data;

  int64_t numElements() const;
};

/// Reads `path`. On failure returns false and sets `error` to one line that
/// names the file and the problem (missing, bad magic, unsupported dtype,
/// Fortran order, truncated data, ...).
bool readNpy(const std::string &path, NpyArray &out, std::string &error);

/// Parses the bytes of an .npy file (what readNpy reads). On failure
/// returns false and sets `problem` to one line without the file's name.
bool parseNpy(const char *data, size_t size, NpyArray &out,
              std::string &problem);

/// Writes a float32 array of `shape`. Returns false and sets `error` on I/O
/// failure.
bool writeNpyF32(const std::string &path, const std::vector<int64_t> &shape,
                 const float *data, std::string &error);

/// "[2, 17, 8, 128]"
std::string formatShape(const std::vector<int64_t> &shape);

} // namespace linattn

#endif // LINATTN_NPY_H
