//===- Npy.cpp - Read and write NumPy .npy files --------------------------===//
//
// Format: "\x93NUMPY", major, minor, a little-endian header length (2 bytes
// in v1, 4 in v2/v3), then an ASCII Python dict
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces to a multiple of 64 bytes, then the raw data.
//
//===----------------------------------------------------------------------===//

#include "linattn/Npy.h"

#include "linattn/FloatConversion.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

namespace linattn {

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

/// Finds `'key':` in the header dict and returns the position after it.
size_t findKey(const std::string &header, const std::string &key) {
  for (const char *quote : {"'", "\""}) {
    size_t pos = header.find(quote + key + quote);
    if (pos == std::string::npos)
      continue;
    pos = header.find(':', pos + key.size() + 2);
    if (pos != std::string::npos)
      return pos + 1;
  }
  return std::string::npos;
}

size_t skipSpaces(const std::string &s, size_t pos) {
  while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos])))
    ++pos;
  return pos;
}

bool parseHeader(const std::string &header, NpyArray &out,
                 std::string &problem) {
  size_t pos = findKey(header, "descr");
  if (pos == std::string::npos) {
    problem = "header has no 'descr'";
    return false;
  }
  pos = skipSpaces(header, pos);
  if (pos >= header.size() || (header[pos] != '\'' && header[pos] != '"')) {
    problem = "header 'descr' is not a string";
    return false;
  }
  size_t end = header.find(header[pos], pos + 1);
  if (end == std::string::npos) {
    problem = "header 'descr' is unterminated";
    return false;
  }
  std::string descr = header.substr(pos + 1, end - pos - 1);
  if (descr == "<f2" || descr == "f2")
    out.dtype = NpyDType::F16;
  else if (descr == "<f4" || descr == "f4")
    out.dtype = NpyDType::F32;
  else if (descr == "<f8" || descr == "f8")
    out.dtype = NpyDType::F64;
  else {
    problem = "unsupported dtype '" + descr +
              "' (expected little-endian float16, float32 or float64)";
    return false;
  }

  pos = findKey(header, "fortran_order");
  if (pos == std::string::npos) {
    problem = "header has no 'fortran_order'";
    return false;
  }
  pos = skipSpaces(header, pos);
  if (header.compare(pos, 4, "True") == 0) {
    problem = "Fortran-order arrays are not supported (save a C-contiguous "
              "array)";
    return false;
  }
  if (header.compare(pos, 5, "False") != 0) {
    problem = "header 'fortran_order' is neither True nor False";
    return false;
  }

  pos = findKey(header, "shape");
  if (pos == std::string::npos) {
    problem = "header has no 'shape'";
    return false;
  }
  pos = skipSpaces(header, pos);
  if (pos >= header.size() || header[pos] != '(') {
    problem = "header 'shape' is not a tuple";
    return false;
  }
  end = header.find(')', pos);
  if (end == std::string::npos) {
    problem = "header 'shape' is unterminated";
    return false;
  }
  out.shape.clear();
  std::string dims = header.substr(pos + 1, end - pos - 1);
  size_t i = 0;
  while (true) {
    i = skipSpaces(dims, i);
    if (i >= dims.size())
      break;
    if (!std::isdigit(static_cast<unsigned char>(dims[i]))) {
      problem = "header 'shape' holds a non-integer: (" + dims + ")";
      return false;
    }
    int64_t d = 0;
    while (i < dims.size() && std::isdigit(static_cast<unsigned char>(dims[i]))) {
      if (d > (std::numeric_limits<int64_t>::max() - 9) / 10) {
        problem = "header 'shape' has a dimension too large";
        return false;
      }
      d = d * 10 + (dims[i++] - '0');
    }
    out.shape.push_back(d);
    i = skipSpaces(dims, i);
    if (i < dims.size() && dims[i] == ',')
      ++i;
  }
  return true;
}

} // namespace

bool parseNpy(const char *data, size_t size, NpyArray &out,
              std::string &problem) {
  auto fail = [&](const std::string &why) {
    problem = why;
    return false;
  };
  size_t pos = 0;
  // The next `n` bytes, or null where the buffer ends first.
  auto take = [&](size_t n) -> const char * {
    if (n > size - pos)
      return nullptr;
    const char *p = data + pos;
    pos += n;
    return p;
  };
  const char *magic = take(8);
  if (!magic || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return fail("not an .npy file (bad magic)");
  unsigned major = static_cast<unsigned char>(magic[6]);
  uint32_t headerLen = 0;
  if (major == 1) {
    const unsigned char *len = reinterpret_cast<const unsigned char *>(take(2));
    if (!len)
      return fail("truncated header");
    headerLen = len[0] | (len[1] << 8);
  } else if (major == 2 || major == 3) {
    const unsigned char *len = reinterpret_cast<const unsigned char *>(take(4));
    if (!len)
      return fail("truncated header");
    headerLen = len[0] | (len[1] << 8) | (len[2] << 16) | (uint32_t(len[3]) << 24);
    if (headerLen > (1u << 20))
      return fail("header length " + std::to_string(headerLen) +
                  " is implausibly large");
  } else {
    return fail("unsupported .npy version " + std::to_string(major));
  }
  const char *headerText = take(headerLen);
  if (!headerText)
    return fail("truncated header");
  std::string header(headerText, headerLen);
  if (!parseHeader(header, out, problem))
    return false;

  int64_t n = 1;
  for (int64_t d : out.shape) {
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / 8 / d)
      return fail("shape " + formatShape(out.shape) + " is too large");
    n *= d;
  }
  size_t width = out.dtype == NpyDType::F16 ? 2 : out.dtype == NpyDType::F32 ? 4 : 8;
  // Check the claimed size against the data before allocating for it.
  uint64_t available = size - pos;
  uint64_t needed = static_cast<uint64_t>(n) * width;
  if (needed > available)
    return fail("truncated data: shape " + formatShape(out.shape) + " needs " +
                std::to_string(needed) + " bytes but the file holds " +
                std::to_string(available));
  const char *raw = data + pos;
  out.data.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const char *p = raw + i * width;
    if (out.dtype == NpyDType::F16) {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      out.data[i] = f16ToFloat(bits);
    } else if (out.dtype == NpyDType::F32) {
      float x;
      std::memcpy(&x, p, 4);
      out.data[i] = x;
    } else {
      std::memcpy(&out.data[i], p, 8);
    }
  }
  return true;
}

bool readNpy(const std::string &path, NpyArray &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open file: " + std::strerror(errno);
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  std::string problem;
  if (!parseNpy(bytes.data(), bytes.size(), out, problem)) {
    error = path + ": " + problem;
    return false;
  }
  return true;
}

bool writeNpyF32(const std::string &path, const std::vector<int64_t> &shape,
                 const float *data, std::string &error) {
  std::ostringstream dict;
  dict << "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int64_t d : shape)
    dict << d << ", ";
  dict << "), }";
  std::string header = dict.str();
  // Magic (6) + version (2) + length (2) + header + '\n', padded to 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::ofstream out(path, std::ios::binary);
  if (!out) {
    error = path + ": cannot open for writing: " + std::strerror(errno);
    return false;
  }
  unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                          static_cast<unsigned char>(header.size() >> 8)};
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char *>(len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  out.write(reinterpret_cast<const char *>(data),
            static_cast<std::streamsize>(n * sizeof(float)));
  if (!out) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

} // namespace linattn
