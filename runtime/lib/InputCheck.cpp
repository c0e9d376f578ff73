//===- InputCheck.cpp - The inputs a recurrence cannot take ---------------===//

#include "linattn/InputCheck.h"

#include <cmath>
#include <sstream>

namespace linattn {

std::string checkInputValues(const std::vector<int64_t> &shape,
                             const double *values, size_t index,
                             const std::string &role) {
  bool gate = role == "gate", beta = role == "beta";
  size_t count = 1;
  for (int64_t size : shape)
    count *= size_t(size);
  for (size_t n = 0; n < count; ++n) {
    double x = values[n];
    const char *why = nullptr;
    if (!std::isfinite(x))
      why = "not a finite number";
    else if (gate && x > 0)
      why = "a log gate must be <= 0 (it is the log of a decay in (0, 1]; "
            "exp(g) > 1 makes the state grow without bound)";
    else if (beta && (x < 0 || x > 1))
      why = "beta must lie in [0, 1] (the rank-1 term's strength; outside, "
            "the transition expands the state)";
    if (!why)
      continue;
    // The element's index from its flat position (row-major).
    std::vector<int64_t> at(shape.size());
    size_t rest = n;
    for (size_t d = shape.size(); d-- > 0;) {
      at[d] = int64_t(rest % size_t(shape[d]));
      rest /= size_t(shape[d]);
    }
    std::ostringstream os;
    os << "argument #" << index << " (" << (role.empty() ? "input" : role)
       << ") element [";
    for (size_t d = 0; d < at.size(); ++d)
      os << (d ? ", " : "") << at[d];
    os << "] = " << x << ": " << why;
    return os.str();
  }
  return "";
}

} // namespace linattn
